// What capture answers through the route mechanism, exactly: status, body and headers (CORS,
// content type and length, Allow, Retry-After, Connection) for successes and every kind of error;
// mixed-case paths; request ids; HTTP metrics by route template; and JSON posted as a form
// (curl -d) accepted end to end.
import { gzipSync } from 'node:zlib';
import { uniqueName } from '@sett/testing';
import { startHarness, type Harness } from './helpers';

jest.setTimeout(60_000);
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { CAPTURE_MAX_BODY_BYTES: '4096', KAFKA_MESSAGE_MAX_BYTES: '3000' } });
}, 60_000);
afterAll(async () => {
  await h?.close();
}, 30_000);

const HEADERS = [
  'content-type',
  'content-length',
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'vary',
  'allow',
  'retry-after',
  'connection',
];

type Case = { method?: string; path: string; body?: string | Buffer; headers?: Record<string, string> };

async function call(base: string, c: Case) {
  const res = await fetch(`${base}${c.path}`, {
    method: c.method ?? 'POST',
    body: c.body,
    headers: { 'content-type': 'application/json', ...c.headers },
  });
  const headers = Object.fromEntries(HEADERS.map((name) => [name, res.headers.get(name)]));
  // Every answer carries a request id; a fresh one each time, so compared by shape only.
  headers['x-request-id'] = /^[0-9a-f-]{36}$/.test(res.headers.get('x-request-id') ?? '') ? 'uuid' : null;
  return { status: res.status, headers, body: await res.text() };
}

describe('capture answers', () => {
  const event = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ api_key: h.token, event: 'e', distinct_id: uniqueName('u'), ...extra });
  const cases: Array<[string, () => Case]> = [
    ['a single event', () => ({ path: '/i/v0/e/', body: event() })],
    [
      'a batch, from a browser',
      () => ({
        path: '/batch',
        body: JSON.stringify({ api_key: h.token, batch: [JSON.parse(event())] }),
        headers: { origin: 'https://app.example' },
      }),
    ],
    [
      'gzip with compression=gzip-js',
      () => ({ path: '/e/?compression=gzip-js&ver=1.2', body: gzipSync(event()) }),
    ],
    ['malformed JSON', () => ({ path: '/e/', body: '{"api_key": ' })],
    ['an empty body', () => ({ path: '/capture/', body: '' })],
    [
      'wrong types',
      () => ({ path: '/track', body: JSON.stringify({ api_key: h.token, event: 5, distinct_id: 'd' }) }),
    ],
    ['no api key', () => ({ path: '/e/', body: JSON.stringify({ event: 'e', distinct_id: 'd' }) })],
    [
      'an unknown api key',
      () => ({ path: '/e/', body: JSON.stringify({ api_key: 'phc_nobody', event: 'e', distinct_id: 'd' }) }),
    ],
    [
      'a personal api key',
      () => ({ path: '/e/', body: JSON.stringify({ api_key: 'phx_secret', event: 'e', distinct_id: 'd' }) }),
    ],
    [
      'a body over the wire limit',
      () => ({ path: '/batch/', body: JSON.stringify({ api_key: h.token, batch: [], p: 'x'.repeat(5000) }) }),
    ],
    [
      'an event over the message limit',
      () => ({ path: '/e/', body: event({ properties: { p: 'x'.repeat(3500) } }).slice(0, 4000) }),
    ],
    [
      'a single event too large for Kafka',
      () => ({ path: '/e/', body: event({ properties: { p: 'x'.repeat(2900) } }) }),
    ],
    [
      'an unsupported Content-Encoding',
      () => ({ path: '/e/', body: event(), headers: { 'content-encoding': 'br' } }),
    ],
    ['a GET (405)', () => ({ method: 'GET', path: '/e/', headers: { origin: 'https://app.example' } })],
    ['an unknown path (404)', () => ({ path: '/nope/', body: event() })],
  ];

  // status, the headers above, and the body of each answer (the route mechanism's contract).
  const expected: Record<string, [number, Record<string, string | null>, string]> = {
    'a single event': [
      200,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '12',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"status":1}',
    ],
    'a batch, from a browser': [
      200,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '12',
        'access-control-allow-origin': 'https://app.example',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"status":1}',
    ],
    'gzip with compression=gzip-js': [
      200,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '12',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"status":1}',
    ],
    'malformed JSON': [
      400,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '146',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"validation_error","code":"invalid_payload","detail":"Malformed request body: not valid JSON (Unexpected end of JSON input).","attr":null}',
    ],
    'an empty body': [
      400,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '175',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"validation_error","code":"invalid_payload","detail":"No data found. Make sure to use a POST request when sending the payload in the body of the request.","attr":null}',
    ],
    'wrong types': [
      400,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '105',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"validation_error","code":"invalid_payload","detail":"event must be string,null.","attr":"event"}',
    ],
    'no api key': [
      401,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '161',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"authentication_error","code":"missing_api_key","detail":"API key not provided. You can find your project API key in your project settings.","attr":null}',
    ],
    'an unknown api key': [
      401,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '164',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"authentication_error","code":"invalid_api_key","detail":"Project API key invalid. You can find your project API key in your project settings.","attr":null}',
    ],
    'a personal api key': [
      401,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '153',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"authentication_error","code":"invalid_api_key","detail":"A personal API key was sent; capture takes the project API key (phc_...).","attr":null}',
    ],
    'a body over the wire limit': [
      413,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '117',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'close',
        'x-request-id': 'uuid',
      },
      '{"type":"invalid_request","code":"payload_too_large","detail":"Request body must be at most 4096 bytes.","attr":null}',
    ],
    'an event over the message limit': [
      413,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '118',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"invalid_request","code":"payload_too_large","detail":"Event is larger than the 1976 byte limit.","attr":null}',
    ],
    'a single event too large for Kafka': [
      413,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '118',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"invalid_request","code":"payload_too_large","detail":"Event is larger than the 1976 byte limit.","attr":null}',
    ],
    'an unsupported Content-Encoding': [
      400,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '117',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"validation_error","code":"unsupported_encoding","detail":"Unsupported Content-Encoding \\"br\\".","attr":null}',
    ],
    'a GET (405)': [
      405,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '105',
        'access-control-allow-origin': 'https://app.example',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: 'POST, OPTIONS',
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"invalid_request","code":"method_not_allowed","detail":"Method \\"GET\\" not allowed.","attr":null}',
    ],
    'an unknown path (404)': [
      404,
      {
        'content-type': 'application/json; charset=utf-8',
        'content-length': '79',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': null,
        vary: 'Origin',
        allow: null,
        'retry-after': null,
        connection: 'keep-alive',
        'x-request-id': 'uuid',
      },
      '{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}',
    ],
  };

  it.each(cases)('answers %s with its status, headers and body', async (name, make) => {
    const [status, headers, body] = expected[name]!;
    expect(await call(h.url, make())).toEqual({ status, headers, body });
  });

  it('echoes a safe X-Request-Id and replaces an unsafe one', async () => {
    for (const base of [h.url]) {
      const echoed = await fetch(`${base}/i/v0/e/`, {
        method: 'POST',
        body: event(),
        headers: { 'content-type': 'application/json', 'x-request-id': 'edge-7f3a:42' },
      });
      expect(echoed.headers.get('x-request-id')).toBe('edge-7f3a:42');
      const replaced = await fetch(`${base}/i/v0/e/`, {
        method: 'POST',
        body: event(),
        headers: { 'content-type': 'application/json', 'x-request-id': 'bad id; "quoted"' },
      });
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('serves mixed-case paths with the same answer', async () => {
    const res = await call(h.url, { path: '/E/', body: event() });
    expect(res.status).toBe(200);
    expect(res.body).toBe('{"status":1}');
  });

  it('counts requests in the HTTP metrics by route template and status', async () => {
    await call(h.url, { path: '/i/v0/e', body: event() });
    await call(h.url, { path: '/i/v0/e/', body: '{' });
    const metrics = await (await fetch(`${h.url}/_metrics`)).text();
    expect(metrics).toMatch(
      /http_requests_total\{method="POST",route="\/i\/v0\/e\/",status="200"[^}]*\} [1-9]/,
    );
    expect(metrics).toMatch(
      /http_requests_total\{method="POST",route="\/i\/v0\/e\/",status="400"[^}]*\} [1-9]/,
    );
    expect(metrics).toMatch(
      /http_request_duration_seconds_count\{[^}]*method="POST",route="\/i\/v0\/e\/"[^}]*\} [1-9]/,
    );
  });
});

it('ingests JSON posted as a form without a data field (curl -d)', async () => {
  const id = uniqueName('curl');
  const res = await h.post(
    '/i/v0/e/',
    JSON.stringify({ api_key: h.token, event: 'from curl', distinct_id: id }),
    { 'content-type': 'application/x-www-form-urlencoded' },
  );
  expect(res.status).toBe(200);
  await h.waitFor((all) => all.some((c) => c.message.distinct_id === id && c.message.event === 'from curl'));
});
