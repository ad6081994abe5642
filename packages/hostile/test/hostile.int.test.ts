// The hostile-input suite: the real capture, decide, management and ingestion processes (each
// its own main.ts) over a fresh database, Redis and a private one-partition broker, sent every
// case of the corpus over real HTTP. Every answer must be a status below 500 with a JSON body,
// within the hang bound, with no connection reset; afterwards every process must still be
// alive and healthy, capture and ingestion ready, and an ordinary event sent after the whole
// corpus must reach Postgres (one partition: it is behind every hostile event that capture
// accepted, so ingestion got through all of them). Failures are collected per case and
// reported together, by name.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { bootstrap } from '@sett/cli';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createTestDatabase, endPool, type TestDatabase } from '@sett/testing';
import {
  SERVICES,
  buildAccountsCorpus,
  buildCorpus,
  buildHogqlCorpus,
  buildScenarios,
  countTable,
  getStatus,
  runPool,
  sendCase,
  startProcesses,
  stopProcess,
  verdict,
  waitUntil,
  type AccountsContext,
  type HostileCase,
  type Outcome,
  type RunningProcess,
  type ScenarioContext,
  type ServiceName,
} from '../src';

/** A hang check, not a performance bound. */
const ANSWER_WITHIN_MS = 10_000;
const CONCURRENCY = 6;
/** After this many requests in a row without an answer a service is taken as down. */
const DOWN_AFTER = 3;

jest.setTimeout(300_000);

describe('hostile inputs against the real services', () => {
  let db: TestDatabase;
  let broker: DevBroker;
  let pool: pg.Pool;
  let procs: Record<ServiceName, RunningProcess>;
  let ctx: { token: string; personalKey: string; projectId: number; userUuid: string };
  let accounts: AccountsContext;
  let scenarioContext: ScenarioContext;
  const outcomes = new Map<string, Outcome>();
  const failures = new Map<string, string>();
  let cases: HostileCase[] = [];

  const describeProcesses = () =>
    SERVICES.map((s) => `--- ${s} (exited: ${procs[s].exited ?? 'no'})\n${procs[s].tail()}`).join('\n');

  async function captureOrdinary(distinctId: string, event: string) {
    const res = await fetch(`${procs.capture.url}/i/v0/e/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: ctx.token, event, distinct_id: distinctId, properties: { ok: true } }),
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });
    return { status: res.status, body: await res.text() };
  }

  async function managementRequest(method: string, path: string, body?: unknown) {
    const res = await fetch(`${procs.management.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ctx.personalKey}` },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });
    return { status: res.status, body: await res.text() };
  }

  async function storedEvents(event: string): Promise<number> {
    const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE event = $1', [
      event,
    ]);
    return Number(rows[0]!.n);
  }

  beforeAll(async () => {
    [db, broker] = await Promise.all([createTestDatabase(), startDevBroker({ partitions: 1 })]);
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // Team ids name Redis keys and pub/sub messages the spawned services do not prefix: start
    // this database's ids at a random height, away from other test files' projects.
    await pool.query(`SELECT setval('teams_id_seq', $1)`, [
      1_000_000 + Math.floor(Math.random() * 1_000_000_000),
    ]);
    const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
    const boot = await bootstrap({
      databaseUrl: db.url,
      redisUrl,
      email: `hostile-${randomUUID()}@sett.test`,
    });
    // Other users, each with an organization of their own: one whose organization the key's
    // user is not in, one the corpus adds as a member, one several requests add at once.
    const others = [];
    for (const who of ['other', 'member', 'racer']) {
      const email = `hostile-${who}-${randomUUID()}@sett.test`;
      others.push(await bootstrap({ databaseUrl: db.url, redisUrl, email }));
    }
    const [other, member, racer] = others as [(typeof others)[0], (typeof others)[0], (typeof others)[0]];
    ctx = {
      token: boot.project_api_key,
      personalKey: boot.personal_api_key!,
      projectId: boot.project_id,
      userUuid: boot.user_uuid,
    };
    procs = await startProcesses({
      DATABASE_URL: db.url,
      REDIS_URL: redisUrl,
      KAFKA_BROKERS: broker.bootstrap,
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      DATABASE_POOL_SIZE: '4',
      SHUTDOWN_TIMEOUT_MS: '2000',
      INGESTION_MAX_WAIT_MS: '200',
      INGESTION_SESSION_TIMEOUT_MS: '6000',
      INGESTION_HEARTBEAT_INTERVAL_MS: '500',
      // The corpus sends well over the default 1200 management requests a minute with one key;
      // a 429 would hide what a case would have got.
      MANAGEMENT_RATE_LIMIT_PER_MINUTE: '1000000',
      MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE: '1000000',
      // The query deadline scenario waits it out.
      QUERY_TIMEOUT_MS: '4000',
    });
    for (const s of SERVICES) {
      await waitUntil(
        `${s} /_health`,
        async () => (await getStatus(`${procs[s].url}/_health`, 2000)) === 200,
        60_000,
        describeProcesses,
      );
    }
    await waitUntil(
      'ingestion /_ready',
      async () => (await getStatus(`${procs.ingestion.url}/_ready`, 2000)) === 200,
      60_000,
      describeProcesses,
    );
    // The pipeline works before the corpus, so a failure at the end means the corpus broke it.
    const before = await captureOrdinary('hostile-baseline', 'hostile-baseline');
    expect(before.status).toBe(200);
    await waitUntil(
      'the baseline event in Postgres',
      async () => (await storedEvents('hostile-baseline')) === 1,
      30_000,
      describeProcesses,
    );
    const newProject = async (name: string) => {
      const res = await managementRequest('POST', '/api/projects/', {
        name,
        organization: boot.organization_id,
      });
      expect(res.status).toBe(201);
      return (JSON.parse(res.body) as { id: number }).id;
    };
    const { rows: persons } = await pool.query<{ uuid: string }>(
      `SELECT p.uuid FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id
        WHERE d.distinct_id = 'hostile-baseline'`,
    );
    accounts = {
      personalKey: ctx.personalKey,
      projectId: ctx.projectId,
      organizationId: boot.organization_id,
      scratchProjectId: await newProject('hostile scratch'),
      doomedProjectId: await newProject('hostile doomed'),
      otherOrganizationId: other.organization_id,
      otherProjectId: other.project_id,
      memberUuid: member.user_uuid,
      memberEmail: member.email,
      racerEmail: racer.email,
      personUuid: persons[0]?.uuid ?? randomUUID(),
    };
    // HOSTILE_SCENARIOS_ONLY=1 (while working on scenarios): no single-request corpus.
    cases = process.env.HOSTILE_SCENARIOS_ONLY
      ? []
      : [...buildCorpus(ctx), ...buildAccountsCorpus(accounts), ...buildHogqlCorpus(ctx)];
    scenarioContext = {
      urls: { capture: procs.capture.url, decide: procs.decide.url, management: procs.management.url },
      capturePid: procs.capture.child.pid!,
      databaseUrl: db.url,
      personalKey: ctx.personalKey,
      organizationId: boot.organization_id,
      otherPersonalKey: other.personal_api_key!,
      otherProjectId: other.project_id,
      otherToken: other.project_api_key,
      thirdPersonalKey: racer.personal_api_key!,
      thirdProjectId: racer.project_id,
    };
  });

  afterAll(async () => {
    if (procs) await Promise.all(SERVICES.map((s) => stopProcess(procs[s])));
    if (pool) await endPool(pool);
    await broker?.stop();
    await db?.drop();
  });

  it('answers every case below 500, with JSON, in time, without resets', async () => {
    const misses: Record<string, number> = { capture: 0, decide: 0, management: 0 };
    const downSince: Record<string, string | undefined> = {};
    const run = async (c: HostileCase) => {
      const proc = procs[c.service];
      if (proc.exited !== undefined || downSince[c.service]) {
        const why =
          proc.exited !== undefined
            ? `process exited (${proc.exited})`
            : `stopped answering at "${downSince[c.service]}"`;
        outcomes.set(c.name, { name: c.name, ms: 0, error: `not sent: ${c.service} ${why}` });
        failures.set(c.name, `not sent: ${c.service} ${why}`);
        return;
      }
      const o = await sendCase(proc.url, c, ANSWER_WITHIN_MS);
      outcomes.set(c.name, o);
      const bad = verdict(c, o);
      if (bad) failures.set(c.name, `${bad}${o.body ? ` — ${o.body.slice(0, 200)}` : ''}`);
      if (o.status === undefined) {
        if (++misses[c.service]! >= DOWN_AFTER) downSince[c.service] ??= c.name;
      } else {
        misses[c.service] = 0;
      }
    };
    const first = cases.filter((c) => c.phase === 0);
    const rest = cases.filter((c) => c.phase !== 0);
    for (const c of first) await run(c);
    await runPool(rest, CONCURRENCY, run);

    // HOSTILE_OUTCOMES_FILE=path: every case's status and body start, to see what each got.
    if (process.env.HOSTILE_OUTCOMES_FILE) {
      const lines = cases.map((c) => {
        const o = outcomes.get(c.name);
        return JSON.stringify({
          name: c.name,
          status: o?.status,
          error: o?.error,
          body: o?.body?.slice(0, 300),
        });
      });
      writeFileSync(process.env.HOSTILE_OUTCOMES_FILE, lines.join('\n') + '\n');
    }
    const failed = new Set(failures.keys());
    process.stdout.write(`\nhostile corpus: ${cases.length} cases\n${countTable(cases, outcomes, failed)}\n`);
    const slowest = [...outcomes.values()].sort((a, b) => b.ms - a.ms).slice(0, 5);
    process.stdout.write(`slowest: ${slowest.map((o) => `${o.ms} ms ${o.name}`).join('\n         ')}\n`);
    const report = [...failures].map(([name, why]) => `${name}\n    => ${why}`).join('\n');
    if (failures.size > 0) process.stdout.write(`\n${failures.size} failing cases:\n${report}\n`);
    expect(failures.size === 0 ? 'no failing cases' : `${failures.size} failing cases:\n${report}`).toBe(
      'no failing cases',
    );
  });

  it('holds every abuse scenario (sequences of requests with a claim about the whole)', async () => {
    const failed: string[] = [];
    for (const scenario of buildScenarios()) {
      const started = Date.now();
      try {
        await scenario.run(scenarioContext);
        process.stdout.write(`scenario ok (${Date.now() - started} ms): ${scenario.name}\n`);
      } catch (error) {
        failed.push(`${scenario.name}\n    => ${(error as Error).message}`);
      }
    }
    if (failed.length > 0)
      process.stdout.write(`\n${failed.length} failing scenarios:\n${failed.join('\n')}\n`);
    expect(failed.length === 0 ? 'no failing scenarios' : failed.join('\n')).toBe('no failing scenarios');
  });

  it('leaves every process running and healthy, capture and ingestion ready', async () => {
    const problems: string[] = [];
    for (const s of SERVICES) {
      if (procs[s].exited !== undefined) problems.push(`${s} exited (${procs[s].exited})`);
      const health = await getStatus(`${procs[s].url}/_health`);
      if (health !== 200) problems.push(`${s} /_health: ${health ?? 'no answer'}`);
    }
    for (const s of ['capture', 'ingestion'] as const) {
      const ready = await getStatus(`${procs[s].url}/_ready`);
      if (ready !== 200) problems.push(`${s} /_ready: ${ready ?? 'no answer'}`);
    }
    expect(problems.length === 0 ? 'all healthy' : `${problems.join('\n')}\n${describeProcesses()}`).toBe(
      'all healthy',
    );
  });

  it('still answers ordinary management requests after the whole corpus', async () => {
    const reads = [
      `/api/organizations/${accounts.organizationId}/`,
      `/api/organizations/${accounts.organizationId}/members/`,
      `/api/projects/${ctx.projectId}/`,
      `/api/projects/${ctx.projectId}/persons/`,
      `/api/projects/${ctx.projectId}/persons/deletions/`,
      `/api/projects/${accounts.scratchProjectId}/`,
    ];
    const statuses: Record<string, number> = {};
    for (const path of reads) statuses[path] = (await managementRequest('GET', path)).status;
    expect(statuses).toEqual(Object.fromEntries(reads.map((p) => [p, 200])));
    // The doomed project is gone, the main one kept its token.
    expect((await managementRequest('GET', `/api/projects/${accounts.doomedProjectId}/`)).status).toBe(404);
    const main = JSON.parse((await managementRequest('GET', `/api/projects/${ctx.projectId}/`)).body) as {
      api_token: string;
    };
    expect(main.api_token).toBe(ctx.token);
  });

  it('still stores an ordinary event sent after the whole corpus', async () => {
    const sent = await captureOrdinary('hostile-after', 'hostile-after');
    expect(sent.status).toBe(200);
    await waitUntil(
      'the event sent after the corpus in Postgres',
      async () => (await storedEvents('hostile-after')) === 1,
      60_000,
      describeProcesses,
    );
  });
});
