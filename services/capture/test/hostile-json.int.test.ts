// Hostile JSON never gets a 5xx. Events nested deeper than MAX_JSON_DEPTH (counted from the event
// object) are refused with a 400 when sent alone and dropped (counted) from batches, on the fast
// path and the Express route alike, and only the well-formed events of a batch reach Kafka.
import { MAX_JSON_DEPTH } from '@sett/schemas';
import { uniqueName } from '@sett/testing';
import { startHarness, type Harness } from './helpers';

jest.setTimeout(60_000);
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h?.close();
}, 30_000);

/** JSON text of an object nested `depth` containers deep ({"a":{"a":...}}), `leaf` at the bottom. */
const deepObject = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
/** The same with arrays. */
const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** An event (JSON text) whose properties are `propertiesJson`. */
const eventJson = (token: string, distinctId: string, propertiesJson: string) =>
  `{"api_key":${JSON.stringify(token)},"event":"deep","distinct_id":${JSON.stringify(distinctId)},"properties":${propertiesJson}}`;

async function post(base: string, path: string, body: string) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
  });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type'), text };
}

async function droppedTooDeep(base: string): Promise<number> {
  const metrics = await (await fetch(`${base}/_metrics`)).text();
  const match = /capture_events_dropped_total\{reason="too_deep"[^}]*\} (\d+)/.exec(metrics);
  return match ? Number(match[1]) : 0;
}

async function accepted(base: string): Promise<number> {
  const metrics = await (await fetch(`${base}/_metrics`)).text();
  const match = /capture_events_accepted_total\{topic="events_plugin_ingestion"[^}]*\} (\d+)/.exec(metrics);
  return match ? Number(match[1]) : 0;
}

describe.each([['capture', () => h.url]])('over-deep events (%s)', (_name, base) => {
  it.each([
    ['3000 deep with a NUL at the bottom', deepObject(3000, '"\\u0000"')],
    ['100k deep objects', deepObject(100_000)],
    ['100k deep arrays', `{"a":${deepArray(100_000)}}`],
  ])('refuses a single event %s with a 400 JSON error', async (_label, properties) => {
    const before = await droppedTooDeep(base());
    const res = await post(base(), '/i/v0/e/', eventJson(h.token, uniqueName('deep'), properties));
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(res.text)).toEqual({
      type: 'validation_error',
      code: 'too_deep',
      detail: expect.stringContaining(String(MAX_JSON_DEPTH)),
      attr: 'properties',
    });
    expect(await droppedTooDeep(base())).toBe(before + 1);
  });

  it('accepts an event exactly MAX_JSON_DEPTH deep and refuses one level more', async () => {
    // The event object is level 1, its properties level 2.
    const id = uniqueName('edge');
    const atLimit = await post(base(), '/e/', eventJson(h.token, id, deepObject(MAX_JSON_DEPTH - 1)));
    expect(atLimit.status).toBe(200);
    const over = await post(base(), '/e/', eventJson(h.token, id, deepObject(MAX_JSON_DEPTH)));
    expect(over.status).toBe(400);
    await h.waitFor((all) => all.some((c) => c.message.distinct_id === id));
  });

  it.each([
    [
      '/batch/ {batch: [...]}',
      '/batch/',
      (events: string[]) => `{"api_key":"TOKEN","batch":[${events.join(',')}]}`,
    ],
    ['an array body', '/e/', (events: string[]) => `[${events.join(',')}]`],
  ])('drops the deep event of %s, counts it, and produces the rest', async (_label, path, wrap) => {
    const good = uniqueName('good');
    const bad = uniqueName('bad');
    const before = await droppedTooDeep(base());
    const acceptedBefore = await accepted(base());
    const body = wrap([
      eventJson(h.token, good, '{"n":1}'),
      eventJson(h.token, bad, deepObject(100_000)),
      eventJson(h.token, bad, `{"x":${deepArray(3000)}}`),
      eventJson(h.token, good, '{"n":2}'),
    ]).replace('TOKEN', h.token);
    const res = await post(base(), path, body);
    expect(res.status).toBe(200);
    expect(await droppedTooDeep(base())).toBe(before + 2);
    await h.waitFor((all) => all.filter((c) => c.message.distinct_id === good).length === 2);
    // Kafka acknowledged exactly the two good events of this request, so the deep ones never
    // reached the producer (not merely not consumed yet).
    expect(await accepted(base())).toBe(acceptedBefore + 2);
    expect(h.consumed.filter((c) => c.message.distinct_id === bad)).toHaveLength(0);
  });

  it('refuses a legacy /engage/ update with an over-deep $set', async () => {
    const res = await post(
      base(),
      '/engage/',
      `{"$token":${JSON.stringify(h.token)},"$distinct_id":"e1","$set":${deepObject(100_000)}}`,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ type: 'validation_error', code: 'too_deep' });
  });
});

describe('a huge distinct id (it is in the record key as well as the value)', () => {
  it('is dropped from a batch as too large, and the rest is accepted', async () => {
    const good = uniqueName('good');
    const huge = 'd'.repeat(600_000);
    const body = `{"api_key":${JSON.stringify(h.token)},"batch":[${[
      eventJson(h.token, good, '{}'),
      eventJson(h.token, huge, '{}'),
      eventJson(h.token, good, '{}'),
    ].join(',')}]}`;
    const res = await post(h.url, '/batch/', body);
    expect(res.status).toBe(200);
    await h.waitFor((all) => all.filter((c) => c.message.distinct_id === good).length === 2);
  });

  it('is refused alone with a 413', async () => {
    const res = await post(h.url, '/e/', eventJson(h.token, 'd'.repeat(600_000), '{}'));
    expect(res.status).toBe(413);
  });
});

describe('odd but well-formed JSON never gets a 5xx', () => {
  const t = () => JSON.stringify(h.token);
  const cases: Array<[string, string, () => string]> = [
    ['null body', '/e/', () => 'null'],
    ['a number', '/e/', () => '123'],
    ['a string', '/e/', () => '"event"'],
    ['an array of scalars', '/e/', () => '[1,"a",null,true]'],
    ['batch that is an object', '/batch/', () => `{"api_key":${t()},"batch":{"__proto__":[]}}`],
    ['batch of nulls', '/batch/', () => `{"api_key":${t()},"batch":[null,null]}`],
    [
      'empty batch with a deep extra field',
      '/batch/',
      () => `{"api_key":${t()},"batch":[],"x":${deepObject(100_000)}}`,
    ],
    ['deep api_key', '/e/', () => `{"api_key":${deepObject(100_000)},"event":"e","distinct_id":"d"}`],
    [
      '__proto__ keys everywhere',
      '/e/',
      () =>
        `{"__proto__":{"event":"x","polluted":1},"api_key":${t()},"event":"e","distinct_id":"d","properties":{"__proto__":{"$set":{"a":1}},"constructor":{"prototype":{"x":1}}},"$set":{"__proto__":{"b":2},"toJSON":1,"hasOwnProperty":2},"$set_once":{"__proto__":null}}`,
    ],
    [
      'numbers as keys',
      '/e/',
      () => `{"api_key":${t()},"event":"e","distinct_id":"d","properties":{"0":1,"1e400":2,"-1":{"2":[3]}}}`,
    ],
    [
      'properties an array',
      '/e/',
      () => `{"api_key":${t()},"event":"e","distinct_id":"d","properties":[1,2]}`,
    ],
    ['properties a string', '/e/', () => `{"api_key":${t()},"event":"e","distinct_id":"d","properties":"p"}`],
    ['properties null', '/e/', () => `{"api_key":${t()},"event":"e","distinct_id":"d","properties":null}`],
    ['distinct_id an object', '/e/', () => `{"api_key":${t()},"event":"e","distinct_id":{"id":1}}`],
    [
      'distinct_id in properties an object',
      '/e/',
      () => `{"api_key":${t()},"event":"e","properties":{"distinct_id":{"a":[1]}}}`,
    ],
    ['$distinct_id an array', '/e/', () => `{"api_key":${t()},"event":"e","$distinct_id":[1]}`],
    ['distinct_id a huge number', '/e/', () => `{"api_key":${t()},"event":"e","distinct_id":1e308}`],
    [
      'offset huge, timestamp odd',
      '/e/',
      () => `{"api_key":${t()},"event":"e","distinct_id":"d","offset":1e308,"timestamp":"","sent_at":"x"}`,
    ],
    ['event a number', '/e/', () => `{"api_key":${t()},"event":1,"distinct_id":"d"}`],
    [
      'token inside properties an object',
      '/e/',
      () => `{"event":"e","distinct_id":"d","properties":{"token":{"a":1}}}`,
    ],
    [
      'engage with an object id',
      '/engage/',
      () => `{"$token":${t()},"$distinct_id":{"a":1},"$set":{"__proto__":1}}`,
    ],
    [
      'lone surrogates and NUL in keys and values',
      '/e/',
      () =>
        `{"api_key":${t()},"event":"\\ud800","distinct_id":"\\u0000","properties":{"\\udc00\\u0000":"\\ud800x"}}`,
    ],
    [
      '50k nameless events',
      '/batch/',
      () => `{"api_key":${t()},"batch":[${Array(50_000).fill('{}').join(',')}]}`,
    ],
    [
      '5k events, one per distinct id',
      '/batch/',
      () =>
        `{"api_key":${t()},"batch":[${Array.from({ length: 5000 }, (_, i) => `{"event":"e","distinct_id":"many-${i}","properties":{"i":${i}}}`).join(',')}]}`,
    ],
    [
      'a wide event, 100k properties',
      '/e/',
      () =>
        `{"api_key":${t()},"event":"e","distinct_id":"wide","properties":{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":${i}`).join(',')}}}`,
    ],
  ];

  it.each(cases)('%s', async (_label, path, body) => {
    const res = await post(h.url, path, body());
    expect(res.status).toBeLessThan(500);
    expect(res.contentType).toMatch(/^application\/json/);
    expect(() => JSON.parse(res.text)).not.toThrow();
  });
});
