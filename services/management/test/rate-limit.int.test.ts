// The management rate limit is held in Redis: two management processes (services/management/src/
// main.ts, each on its own port, over one database and one Redis) share each key's and each
// user's budget, a freshly minted key of a limited user is still limited, and a project secret
// key has its own bucket. When Redis stops answering the limit fails open (counted, and /_ready
// says so), and it holds again once Redis is back.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { createRedis, type Redis } from '@sett/cache';
import { createMetricsRegistry, type RunningService } from '@sett/http';
import { createSilentLogger } from '@sett/logger';
import { freePort, startTcpProxy, waitFor, type TcpProxy } from '@sett/testing';
import { bucketKeys, createRedisRateLimiter } from '../src/rate-limit/rate-limiter';
import { call, createKey, seed, serveManagement, startHarness, type Fixture, type Harness } from './helpers';

const MAIN = path.resolve(__dirname, '../src/main.ts');
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PER_KEY = 3;
const PER_USER = 5;

let h: Harness;
let f: Fixture;

interface Replica {
  url: string;
  child: ChildProcess;
}

/** One management process, as production runs it; resolves once it logs that it is ready. */
async function startReplica(databaseUrl: string): Promise<Replica> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      MANAGEMENT_PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      MANAGEMENT_RATE_LIMIT_PER_MINUTE: String(PER_KEY),
      MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE: String(PER_USER),
      SETT_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line:\n${lines.join('\n')}`)), 45_000);
    for (const stream of [child.stdout!, child.stderr!])
      readline.createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (line.includes('management ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`management exited with ${code}:\n${lines.join('\n')}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  // "ready" in the log means listening; the limit holds only once its Redis connection is up
  // (before that it fails open, as it does when Redis goes away), which /_ready reports.
  await waitFor(`${url}/_ready`, async () => (await fetch(`${url}/_ready`)).status === 200, {
    timeoutMs: 30_000,
  });
  return { url, child };
}

function stopReplica(r: Replica): Promise<void> {
  return new Promise((resolve) => {
    if (r.child.exitCode !== null || r.child.signalCode !== null) return resolve();
    r.child.once('exit', () => resolve());
    r.child.kill('SIGTERM');
  });
}

beforeAll(async () => {
  h = await startHarness();
  // The replicas write unprefixed bucket names (sett:ratelimit:{user:<id>}…) to the shared
  // Redis: user and project ids far from any other test database's keep this file's buckets
  // its own.
  for (const sequence of ['users_id_seq', 'teams_id_seq'])
    await h.pool.query(`SELECT setval($1, $2)`, [
      sequence,
      1_000_000_000 + Math.floor(Math.random() * 1_000_000_000),
    ]);
  f = await seed(h.prisma);
});
afterAll(() => h.stop());

describe('two management processes over one Redis', () => {
  let a: Replica;
  let b: Replica;

  beforeAll(async () => {
    [a, b] = await Promise.all([startReplica(h.db.url), startReplica(h.db.url)]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a, b].filter(Boolean).map(stopReplica));
  });

  test('share one key budget, then one user budget that new keys do not reset', async () => {
    const first = await createKey(h.prisma, f.alice.id, ['*']);
    // Three requests (the key's budget) spread over both processes.
    expect((await call(a, 'GET', '/api/users/@me/', first)).status).toBe(200);
    expect((await call(b, 'GET', '/api/users/@me/', first)).status).toBe(200);
    expect((await call(a, 'GET', '/api/users/@me/', first)).status).toBe(200);
    for (const replica of [a, b]) {
      const refused = await call(replica, 'GET', '/api/users/@me/', first);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({
        type: 'throttled_error',
        code: 'throttled',
        detail: expect.stringMatching(/^Request was throttled\. Expected available in \d+ seconds?\.$/),
        attr: null,
      });
      // One token comes back every 60 / 3 = 20 s.
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(20);
    }

    // A fresh key of the same user: two more requests (the user's budget is 5), then refused
    // on either process although this key has used nothing.
    const minted = await createKey(h.prisma, f.alice.id, ['*']);
    expect((await call(b, 'GET', '/api/users/@me/', minted)).status).toBe(200);
    expect((await call(a, 'GET', '/api/users/@me/', minted)).status).toBe(200);
    const third = await createKey(h.prisma, f.alice.id, ['*']);
    expect((await call(a, 'GET', '/api/users/@me/', third)).status).toBe(429);
    expect((await call(b, 'GET', '/api/users/@me/', minted)).status).toBe(429);
    // Minting through the API itself is refused as well: the user has nothing left.
    const viaApi = await call(b, 'POST', '/api/personal_api_keys/', minted, { label: 'more', scopes: ['*'] });
    expect(viaApi.status).toBe(429);

    // Another user is not affected.
    const other = await createKey(h.prisma, f.adminA.id, ['*']);
    expect((await call(b, 'GET', '/api/users/@me/', other)).status).toBe(200);

    // Both processes counted what they refused, by bucket.
    const metrics = await Promise.all(
      [a, b].map((r) => fetch(`${r.url}/_metrics`).then((res) => res.text())),
    );
    const refusedBy = (text: string, limit: string) =>
      Number(
        new RegExp(`^management_throttled_requests_total\\{limit="${limit}"[^}]*\\} (\\d+)$`, 'm').exec(
          text,
        )?.[1] ?? 0,
      );
    expect(metrics.map((t) => refusedBy(t, 'key'))).toEqual([1, 1]);
    expect(refusedBy(metrics[0]!, 'user') + refusedBy(metrics[1]!, 'user')).toBe(3);
  });

  test('a project secret key has its own shared bucket (remote config)', async () => {
    const rotated = await call(
      h,
      'PATCH',
      `/api/projects/${f.teamB.id}/rotate_secret_token/`,
      await createKey(h.prisma, f.staff.id, ['*']), // an owner of organization B
    );
    expect(rotated.status).toBe(200);
    const secret = rotated.body.secret_api_token as string;
    expect(secret).toMatch(/^phs_/);
    const path = `/api/projects/${f.teamB.id}/feature_flags/missing/remote_config/`;
    // The flag does not exist: 404 until the project's secret key has used its budget.
    for (const replica of [a, b, a]) expect((await call(replica, 'GET', path, secret)).status).toBe(404);
    expect((await call(b, 'GET', path, secret)).status).toBe(429);
  });
});

describe('Redis stops answering', () => {
  let proxy: TcpProxy;
  let redis: Redis;
  let service: RunningService;
  let url: string;

  beforeAll(async () => {
    const target = new URL(REDIS_URL);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const through = new URL(REDIS_URL);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    redis = createRedis({ url: through.toString(), keyPrefix: `${h.db.name}:failopen:` });
    ({ url, service } = await serveManagement({
      prisma: h.prisma,
      pool: h.pool,
      redis,
      config: { rateLimitPerMinute: 2, userRateLimitPerMinute: 100 },
    }));
  });
  afterAll(async () => {
    await service.stop();
    redis.disconnect();
    await proxy.close();
  });

  const status = (condition: (s: string) => boolean) =>
    new Promise<void>((resolve) => {
      if (condition(redis.status)) return resolve();
      const check = () => {
        if (!condition(redis.status)) return;
        for (const e of events) redis.off(e, check);
        resolve();
      };
      const events = ['ready', 'close', 'end', 'reconnecting', 'error'];
      for (const e of events) redis.on(e, check);
    });

  test('lets requests through, counts them, reports not ready, and limits again once back', async () => {
    await status((s) => s === 'ready');
    const key = await createKey(h.prisma, f.adminA.id, ['*']);
    const me = () => call({ url }, 'GET', '/api/users/@me/', key);
    expect((await me()).status).toBe(200);
    expect((await me()).status).toBe(200);
    expect((await me()).status).toBe(429);

    await proxy.down();
    await status((s) => s !== 'ready');
    for (let i = 0; i < 3; i++) expect((await me()).status).toBe(200);
    const metrics = await (await fetch(`${url}/_metrics`)).text();
    expect(metrics).toMatch(/^management_rate_limit_unchecked_total\{[^}]*\} 3$/m);
    const ready = await call({ url }, 'GET', '/_ready');
    expect(ready.status).toBe(503);

    await proxy.up();
    await status((s) => s === 'ready');
    // The bucket stayed in Redis: still empty.
    expect((await me()).status).toBe(429);
  });
});

describe('the bucket script (Redis clock)', () => {
  const subject = { key: 'refill-key', user: 424242 };

  async function redisNowMs(): Promise<number> {
    const [seconds, micros] = await h.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  test('an empty bucket refills at the per-minute rate, capped at the capacity', async () => {
    const limiter = createRedisRateLimiter({
      redis: h.redis,
      perKeyPerMinute: 60,
      perUserPerMinute: 600,
      logger: createSilentLogger(),
      registry: createMetricsRegistry('management'),
    });
    const names = bucketKeys(subject);
    // Empty a second ago: one token (60 per minute) has come back since.
    await h.redis.hset(names.key, { tokens: '0', at: String((await redisNowMs()) - 1000) });
    expect(await limiter.take(subject)).toEqual({ ok: true, retryAfterSeconds: 0 });
    expect(await limiter.take(subject)).toEqual({ ok: false, retryAfterSeconds: 1, limit: 'key' });
    // A refused request takes nothing from the other bucket either.
    const userTokens = Number(await h.redis.hget(names.user!, 'tokens'));
    expect(userTokens).toBeGreaterThan(598);
    expect(userTokens).toBeLessThan(600);
    // Idle for an hour: full, never more than the capacity.
    await h.redis.hset(names.key, { tokens: '0', at: String((await redisNowMs()) - 3_600_000) });
    for (let i = 0; i < 60; i++) expect((await limiter.take(subject)).ok).toBe(true);
    expect((await limiter.take(subject)).ok).toBe(false);
    // Buckets expire once a full refill would have made them full anyway.
    const ttl = await h.redis.pttl(names.key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});
