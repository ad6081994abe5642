// The capture gateway end to end: real sockets, Redis, Postgres and a private dev broker whose
// topics a consumer reads back.
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import { TOPICS } from '@sett/kafka';
import { startEdge, type Edge } from '@sett/devstack';
import { uniqueName } from '@sett/testing';
import { startHarness, type Consumed, type Harness } from './helpers';

const MAX_BODY = 64 * 1024;
jest.setTimeout(60_000);
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    env: {
      CAPTURE_MAX_BODY_BYTES: String(MAX_BODY),
      CAPTURE_MAX_INFLATE_RATIO: '5',
      KAFKA_MESSAGE_MAX_BYTES: '20000',
      CAPTURE_OVERFLOW_RATE: '0.001',
      CAPTURE_OVERFLOW_BURST: '20',
      // As behind the edge and one more proxy (docker-compose's Caddy and nginx).
      TRUSTED_PROXY_HOPS: '2',
    },
  });
}, 60_000);
afterAll(async () => {
  await h?.close();
}, 30_000);

const did = () => uniqueName('user');
const mine = (id: string) => (all: Consumed[]) => all.filter((c) => c.message.distinct_id === id);
const json = (v: unknown) => JSON.stringify(v);

describe('paths, methods and CORS', () => {
  it.each([
    '/i/v0/e/',
    '/i/v0/e',
    '/e/',
    '/e',
    '/capture/',
    '/capture',
    '/track/',
    '/track',
    '/batch/',
    '/batch',
    '/engage/',
  ])('POST %s accepts an event with 200 {"status": 1}', async (path) => {
    const id = did();
    const res = await h.post(path, json({ api_key: h.token, event: 'e', distinct_id: id }));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 1 });
    await h.waitFor((all) => mine(id)(all).length === 1);
  });

  it('answers GET with a 405 JSON error carrying CORS headers', async () => {
    const res = await fetch(`${h.url}/batch/`, { headers: { origin: 'https://app.example' } });
    expect(res.status).toBe(405);
    expect(await res.json()).toMatchObject({ type: 'invalid_request', code: 'method_not_allowed' });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
  });

  it('answers a preflight by echoing the origin, without credentials (capture reads no cookies)', async () => {
    const res = await fetch(`${h.url}/e/?compression=gzip-js`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
  });

  it('serves health, readiness and metrics', async () => {
    expect((await fetch(`${h.url}/_health`)).status).toBe(200);
    const ready = await fetch(`${h.url}/_ready`);
    expect(ready.status).toBe(200);
    const metrics = await (await fetch(`${h.url}/_metrics`)).text();
    expect(metrics).toContain('capture_events_accepted_total{topic="events_plugin_ingestion"');
    expect(metrics).toMatch(/http_requests_total\{method="POST",route="\/e\/",status="200"/);
    expect(metrics).toContain('capture_produce_duration_seconds_bucket');
  });
});

describe('the message on Kafka', () => {
  it('carries key token:distinct_id, uuid, ip (what the outer trusted proxy saw), now, sent_at and timestamp', async () => {
    const id = did();
    const uuid = '0190f5b2-1c3a-7c4e-9a2b-1234567890ab';
    const before = Date.now();
    const res = await h.post(
      '/i/v0/e/?_=1735689600000&ver=1.2.3',
      json({
        api_key: h.token,
        event: '$pageview',
        distinct_id: id,
        uuid,
        timestamp: '2024-12-31T23:59:59Z',
        properties: { $current_url: 'https://x' },
      }),
      // The leftmost entry is the client's own writing: two trusted hops read past it.
      { 'x-forwarded-for': '198.51.100.66, 203.0.113.9, 10.0.0.1' },
    );
    expect(res.status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 1);
    const [c] = mine(id)(h.consumed);
    expect(c!.topic).toBe(TOPICS.main);
    expect(c!.key).toBe(`${h.token}:${id}`);
    expect(c!.message).toMatchObject({
      uuid,
      token: h.token,
      distinct_id: id,
      ip: '203.0.113.9',
      sent_at: '2025-01-01T00:00:00.000Z',
      event: '$pageview',
      timestamp: '2024-12-31T23:59:59Z',
      properties: { $current_url: 'https://x' },
      historical_migration: false,
    });
    expect(Date.parse(c!.message.now)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('uses the socket address without X-Forwarded-For and generates a UUIDv7 for a bad uuid', async () => {
    const id = did();
    expect(
      (await h.post('/e/', json({ api_key: h.token, event: 'e', distinct_id: id, uuid: 'bad' }))).status,
    ).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 1);
    const [c] = mine(id)(h.consumed);
    expect(c!.message.ip).toBe('127.0.0.1');
    expect(c!.message.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });
});

describe('body encodings', () => {
  const event = (id: string) => ({
    api_key: h.token,
    event: 'enc',
    distinct_id: id,
    properties: { text: 'a+b/c=d ü' },
  });
  const cases: Array<
    [string, (id: string) => { path: string; body: string | Buffer; headers: Record<string, string> }]
  > = [
    ['JSON', (id) => ({ path: '/e/', body: json(event(id)), headers: {} })],
    [
      'gzip by header',
      (id) => ({
        path: '/batch/',
        body: gzipSync(json({ api_key: h.token, batch: [event(id)] })),
        headers: { 'content-encoding': 'gzip' },
      }),
    ],
    [
      'gzip-js query',
      (id) => ({
        path: '/e/?compression=gzip-js',
        body: gzipSync(json([event(id)])),
        headers: { 'content-type': 'text/plain' },
      }),
    ],
    [
      'lz64 form',
      (id) => ({
        path: '/e/',
        body: `data=${encodeURIComponent(compressToBase64(json(event(id))))}&compression=lz64`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
    ],
    [
      'base64 form',
      (id) => ({
        path: '/e/',
        body: `data=${encodeURIComponent(Buffer.from(json(event(id))).toString('base64'))}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
    ],
    [
      'text/plain JSON',
      (id) => ({
        path: '/i/v0/e/',
        body: json(event(id)),
        headers: { 'content-type': 'text/plain;charset=UTF-8' },
      }),
    ],
  ];
  it.each(cases)('%s lands on Kafka intact', async (_name, make) => {
    const id = did();
    const req = make(id);
    const res = await h.post(req.path, req.body, req.headers);
    expect(res.status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 1);
    expect(mine(id)(h.consumed)[0]!.message.properties).toEqual({ text: 'a+b/c=d ü' });
  });
});

describe('limits', () => {
  const padded = (total: number) => {
    const base = json({ api_key: h.token, event: 'pad', distinct_id: did(), properties: { p: '' } });
    return base.replace('"p":""', `"p":"${'x'.repeat(total - base.length)}"`);
  };

  it('accepts a body of exactly the limit as a batch of small events', async () => {
    const events = [];
    const id = did();
    for (let i = 0; i < 40; i++) events.push({ event: 'e', distinct_id: id, properties: { i } });
    const base = json({ api_key: h.token, batch: events, pad: '' });
    const body = base.replace('"pad":""', `"pad":"${'x'.repeat(MAX_BODY - base.length)}"`);
    expect(Buffer.byteLength(body)).toBe(MAX_BODY);
    expect((await h.post('/batch/', body)).status).toBe(200);
  });

  it('refuses a body one byte over the limit with 413', async () => {
    const res = await h.post('/batch/', padded(MAX_BODY + 1));
    expect(res.status).toBe(413);
    expect(res.json).toMatchObject({ code: 'payload_too_large' });
  });

  it('refuses a streamed body without Content-Length as soon as it passes the limit', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${h.url}/batch/`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
      // Sends the limit plus 1 KB, then keeps the request open: the answer must come first.
      req.write('x'.repeat(MAX_BODY + 1024));
    });
    expect(status).toBe(413);
  });

  it('refuses a zip bomb with 413', async () => {
    const bomb = gzipSync(Buffer.alloc(MAX_BODY * 5 + 1, 0x20));
    expect(bomb.length).toBeLessThan(MAX_BODY);
    const res = await h.post('/batch/', bomb, { 'content-encoding': 'gzip' });
    expect(res.status).toBe(413);
  });

  it('refuses a single event over the Kafka message limit with 413', async () => {
    const id = did();
    const res = await h.post(
      '/e/',
      json({ api_key: h.token, event: 'big', distinct_id: id, properties: { p: 'x'.repeat(30_000) } }),
    );
    expect(res.status).toBe(413);
  });

  it('drops an oversize event inside a batch and accepts the rest', async () => {
    const id = did();
    const batch = [
      { event: 'small', distinct_id: id },
      { event: 'big', distinct_id: id, properties: { p: 'x'.repeat(30_000) } },
      { event: 'small2', distinct_id: id },
    ];
    expect((await h.post('/batch/', json({ api_key: h.token, batch }))).status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 2);
    expect(mine(id)(h.consumed).map((c) => c.message.event)).toEqual(['small', 'small2']);
    const metrics = await (await fetch(`${h.url}/_metrics`)).text();
    expect(metrics).toMatch(/capture_events_dropped_total\{reason="too_large"[^}]*\} [1-9]/);
  });
});

describe('validation and authentication errors', () => {
  it.each([
    ['not JSON', '{"api_key": ', 400, 'validation_error'],
    ['an empty body', '', 400, 'validation_error'],
    [
      'wrong types',
      json({ api_key: 'phc_x', event: 'e', distinct_id: 'd', properties: 'nope' }),
      400,
      'validation_error',
    ],
    ['a batch that is not an array', json({ api_key: 'phc_x', batch: 'nope' }), 400, 'validation_error'],
    ['no api key', json({ event: 'e', distinct_id: 'd' }), 401, 'authentication_error'],
    [
      'a malformed api key',
      json({ api_key: 'x'.repeat(65), event: 'e', distinct_id: 'd' }),
      401,
      'authentication_error',
    ],
    [
      'a personal api key',
      json({ api_key: 'phx_abc', event: 'e', distinct_id: 'd' }),
      401,
      'authentication_error',
    ],
    [
      'an unknown api key',
      json({ api_key: 'phc_unknown_key', event: 'e', distinct_id: 'd' }),
      401,
      'authentication_error',
    ],
  ])('answers %s with its status', async (_name, body, status, type) => {
    const res = await h.post('/e/', body, { origin: 'https://app.example' });
    expect(res.status).toBe(status);
    expect(res.json).toMatchObject({ type, code: expect.any(String), detail: expect.any(String) });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
  });

  it('uses code invalid_api_key for an unknown key and missing_api_key for none', async () => {
    expect(
      (await h.post('/e/', json({ api_key: 'phc_nope', event: 'e', distinct_id: 'd' }))).json,
    ).toMatchObject({ code: 'invalid_api_key' });
    expect((await h.post('/e/', json({ event: 'e', distinct_id: 'd' }))).json).toMatchObject({
      code: 'missing_api_key',
    });
  });

  it('rejects an unknown token without a Postgres query once cached', async () => {
    const unknown = `phc_${uniqueName('unknown')}`;
    const before = h.dbQueries();
    expect((await h.post('/e/', json({ api_key: unknown, event: 'e', distinct_id: 'd' }))).status).toBe(401);
    expect(h.dbQueries()).toBe(before + 1);
    for (let i = 0; i < 5; i++)
      expect((await h.post('/e/', json({ api_key: unknown, event: 'e', distinct_id: 'd' }))).status).toBe(
        401,
      );
    expect(h.dbQueries()).toBe(before + 1);
    // The known token too: looked up at most once, then served from the caches.
    const afterKnown = h.dbQueries();
    for (let i = 0; i < 5; i++)
      expect((await h.post('/e/', json({ api_key: h.token, event: 'e', distinct_id: did() }))).status).toBe(
        200,
      );
    expect(h.dbQueries()).toBe(afterKnown);
  });
});

describe('event rules and routing', () => {
  it('ingests the valid events of a batch mixing valid, nameless and id-less ones, and answers 200', async () => {
    const id = did();
    const batch = [
      { event: 'ok1', distinct_id: id },
      { distinct_id: id, properties: {} },
      { event: 'ok2', properties: { distinct_id: id } },
      { event: '', distinct_id: id },
      { event: 'no id' },
      { event: 'empty id', distinct_id: '' },
      { event: 'ok3', distinct_id: id },
    ];
    const res = await h.post('/batch/', json({ api_key: h.token, batch }));
    expect(res.status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 3);
    expect(mine(id)(h.consumed).map((c) => c.message.event)).toEqual(['ok1', 'ok2', 'ok3']);
  });

  it('stringifies numeric distinct ids', async () => {
    const n = Math.floor(Math.random() * 1e12);
    expect((await h.post('/e/', json({ api_key: h.token, event: 'num', distinct_id: n }))).status).toBe(200);
    await h.waitFor((all) => mine(String(n))(all).length === 1);
  });

  it('keeps per-key order on Kafka across a batch and following single requests', async () => {
    const id = did();
    const batch = Array.from({ length: 15 }, (_, i) => ({
      event: 'seq',
      distinct_id: id,
      properties: { seq: i },
    }));
    expect((await h.post('/batch/', json({ api_key: h.token, batch }))).status).toBe(200);
    for (let i = 15; i < 19; i++) {
      expect(
        (
          await h.post(
            '/e/',
            json({ api_key: h.token, event: 'seq', distinct_id: id, properties: { seq: i } }),
          )
        ).status,
      ).toBe(200);
    }
    await h.waitFor((all) => mine(id)(all).length === 19);
    const got = mine(id)(h.consumed);
    expect(new Set(got.map((c) => `${c.topic}/${c.partition}`)).size).toBe(1);
    expect(got.map((c) => c.offset)).toEqual([...got.map((c) => c.offset)].sort((a, b) => a - b));
    expect(got.map((c) => c.message.properties.seq)).toEqual(Array.from({ length: 19 }, (_, i) => i));
  });

  it('sends a historical batch only to the historical topic, keyed, even past the spike limit', async () => {
    const id = did();
    const batch = Array.from({ length: 30 }, (_, i) => ({
      event: 'old',
      distinct_id: id,
      timestamp: '2020-01-01T00:00:00Z',
      properties: { i },
    }));
    expect(
      (await h.post('/batch/', json({ api_key: h.token, historical_migration: true, batch }))).status,
    ).toBe(200);
    // Nothing more arrives: a marker sent afterwards with the same key lands on the same
    // historical partition behind the batch, so once it is read, every copy of the batch is too.
    const marker = [{ event: 'marker', distinct_id: id, timestamp: '2020-01-01T00:00:00Z' }];
    expect(
      (await h.post('/batch/', json({ api_key: h.token, historical_migration: true, batch: marker }))).status,
    ).toBe(200);
    await h.waitFor((all) => mine(id)(all).some((c) => c.message.event === 'marker'));
    const got = mine(id)(h.consumed).filter((c) => c.message.event === 'old');
    expect(got).toHaveLength(30);
    expect(
      got.every(
        (c) =>
          c.topic === TOPICS.historical && c.key === `${h.token}:${id}` && c.message.historical_migration,
      ),
    ).toBe(true);
  });

  it('sends a spiking key past its burst to the overflow topic without a key', async () => {
    const id = did();
    const batch = Array.from({ length: 25 }, (_, i) => ({
      event: 'spike',
      distinct_id: id,
      properties: { i },
    }));
    expect((await h.post('/batch/', json({ api_key: h.token, batch }))).status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 25);
    const got = mine(id)(h.consumed);
    const main = got.filter((c) => c.topic === TOPICS.main);
    const overflow = got.filter((c) => c.topic === TOPICS.overflow);
    expect(main).toHaveLength(20);
    expect(main.every((c) => c.key === `${h.token}:${id}`)).toBe(true);
    expect(overflow).toHaveLength(5);
    expect(overflow.every((c) => c.key === null)).toBe(true);
    // Another key is unaffected.
    const other = did();
    expect((await h.post('/e/', json({ api_key: h.token, event: 'calm', distinct_id: other }))).status).toBe(
      200,
    );
    await h.waitFor((all) => mine(other)(all).length === 1);
    expect(mine(other)(h.consumed)[0]!.topic).toBe(TOPICS.main);
  });

  it('turns a legacy /engage/ update into an $identify event', async () => {
    const id = did();
    const res = await h.post('/engage/', json({ $token: h.token, $distinct_id: id, $set: { plan: 'pro' } }));
    expect(res.status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 1);
    expect(mine(id)(h.consumed)[0]!.message).toMatchObject({
      event: '$identify',
      properties: { $set: { plan: 'pro' } },
    });
  });
});

describe('through the edge', () => {
  let edge: Edge;
  beforeAll(async () => {
    const up = { host: '127.0.0.1', port: h.port };
    edge = await startEdge({
      host: '127.0.0.1',
      port: 0,
      upstreams: { capture: up, management: up, decide: up },
    });
  });
  afterAll(async () => {
    await edge?.stop();
  });

  it('delivers an event with the client address the edge appended', async () => {
    const id = did();
    const res = await fetch(`http://127.0.0.1:${edge.port}/i/v0/e/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json({ api_key: h.token, event: 'via edge', distinct_id: id }),
    });
    expect(res.status).toBe(200);
    await h.waitFor((all) => mine(id)(all).length === 1);
    expect(mine(id)(h.consumed)[0]!.message).toMatchObject({ event: 'via edge', ip: '127.0.0.1' });
  });
});
