// The list filters PostHog's API has, served instead of silently ignored: persons (search,
// email, distinct_id, properties), events (event, distinct_id, person_id, before, after,
// properties with the operators of flag matching), feature flags (search, active, type), cohorts
// and early access features (search); any other parameter is a 400 naming it. Also what the
// route table gives every path: 405 with Allow for a wrong method, and CORS preflights.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let ann: string;
let bo: string;
const base = Date.parse('2026-03-01T00:00:00.000Z');

async function person(distinctIds: string[], properties: object) {
  const uuid = randomUUID();
  const p = await h.prisma.person.create({ data: { uuid, teamId: f.teamA.id, properties } });
  await h.prisma.personDistinctId.createMany({
    data: distinctIds.map((distinctId) => ({ teamId: f.teamA.id, distinctId, personId: p.id })),
  });
  return uuid;
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['*']);
  ann = await person(['ann-device', 'ann@example.com'], {
    email: 'ann@example.com',
    name: 'Ann Lee',
    plan: 'pro',
    age: 41,
  });
  bo = await person(['bo-device'], { email: 'bo@other.test', name: 'Bo', plan: 'free', age: 9 });
  await person(['anon-1'], {});
  const event = (i: number, event: string, distinctId: string, properties: object) => ({
    uuid: randomUUID(),
    teamId: f.teamA.id,
    event,
    distinctId,
    properties,
    timestamp: new Date(base + i * 60_000),
  });
  await h.prisma.event.createMany({
    data: [
      event(0, '$pageview', 'ann-device', { $current_url: 'https://a.test/pricing', price: 10, beta: true }),
      event(1, 'signed_up', 'ann@example.com', { plan: 'pro', price: '120' }),
      event(2, '$pageview', 'bo-device', { $current_url: 'https://a.test/docs', price: 9.5, beta: 'false' }),
      event(3, 'clicked', 'bo-device', { label: 'Buy', when: '2026-02-01T10:00:00Z' }),
      event(4, '$pageview', 'nobody', { $current_url: 'https://a.test/' }),
    ],
  });
  const flag = (key: string, extra: object = {}) =>
    h.prisma.featureFlag.create({ data: { teamId: f.teamA.id, key, name: `Name of ${key}`, ...extra } });
  await flag('checkout-redesign');
  await flag('dark-mode', { active: false });
  await flag('pricing-test', {
    filters: { multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] } },
  });
  await flag('service-config', { isRemoteConfiguration: true, name: 'Remote CHECKOUT settings' });
  for (const name of ['Power users', 'Churned', 'power sellers'])
    await h.prisma.cohort.create({ data: { teamId: f.teamA.id, name } });
  for (const name of ['New editor', 'Dark theme'])
    await h.prisma.earlyAccessFeature.create({ data: { teamId: f.teamA.id, name } });
});
afterAll(() => h?.stop());

const get = (path: string) => call(h, 'GET', `/api/projects/${f.teamA.id}${path}`, key);
const q = encodeURIComponent;

describe('persons', () => {
  const ids = async (query: string) => {
    const r = await get(`/persons/?${query}`);
    expect(r.status).toBe(200);
    return (r.body.results as { uuid: string }[]).map((p) => p.uuid).sort();
  };

  it('search: a distinct id exactly, or text in the email or name', async () => {
    expect(await ids('search=bo-device')).toEqual([bo]);
    expect(await ids('search=bo-dev')).toEqual([]);
    expect(await ids('search=EXAMPLE.com')).toEqual([ann]);
    expect(await ids('search=lee')).toEqual([ann]);
    expect(await ids('search=zzz')).toEqual([]);
    const r = await get('/persons/?search=lee');
    expect(r.body.count).toBe(1);
  });

  it('email (exact), distinct_id and person properties', async () => {
    expect(await ids(`email=${q('ann@example.com')}`)).toEqual([ann]);
    expect(await ids('email=ann')).toEqual([]);
    expect(await ids('distinct_id=bo-device')).toEqual([bo]);
    const props = (filters: object) => ids(`properties=${q(JSON.stringify(filters))}`);
    expect(await props([{ key: 'plan', value: 'PRO', type: 'person' }])).toEqual([ann]);
    expect(await props([{ key: 'age', value: 18, operator: 'gt', type: 'person' }])).toEqual([ann]);
    expect(await props([{ key: 'plan', operator: 'is_not_set', type: 'person' }])).toHaveLength(1);
    expect(
      await props({
        type: 'OR',
        values: [
          { key: 'plan', value: 'free', type: 'person' },
          { key: 'name', value: '^ann', operator: 'regex', type: 'person' },
        ],
      }),
    ).toEqual([bo]);
  });

  it('refuses filters it cannot apply, naming the parameter', async () => {
    for (const [query, attr] of [
      ['properties=nope', 'properties'],
      [`properties=${q('[{"key":"x","value":1,"type":"event"}]')}`, 'properties'],
      [`properties=${q('[{"key":"x","value":1,"operator":"near"}]')}`, 'properties'],
      [`properties=${q('[{"key":"x","value":"(?=a)","operator":"regex"}]')}`, 'properties'],
      ['format=csv', 'format'],
      ['cohort=1', 'cohort'],
      ['search=a&search=b', 'search'],
    ]) {
      const r = await get(`/persons/?${query}`);
      expect([query, r.status, r.body.attr]).toEqual([query, 400, attr]);
    }
  });
});

describe('events', () => {
  const names = async (query: string) => {
    const r = await get(`/events/?${query}`);
    expect([query, r.status]).toEqual([query, 200]);
    return (r.body.results as { event: string; distinct_id: string }[]).map(
      (e) => `${e.event}@${e.distinct_id}`,
    );
  };

  it('event, distinct_id, person_id, before and after', async () => {
    expect(await names('event=%24pageview')).toEqual([
      '$pageview@nobody',
      '$pageview@bo-device',
      '$pageview@ann-device',
    ]);
    expect(await names('distinct_id=bo-device')).toEqual(['clicked@bo-device', '$pageview@bo-device']);
    expect(await names(`person_id=${ann}`)).toEqual(['signed_up@ann@example.com', '$pageview@ann-device']);
    expect(await names(`person_id=${ann.toUpperCase()}`)).toHaveLength(2);
    const at = (i: number) => q(new Date(base + i * 60_000).toISOString());
    expect(await names(`after=${at(1)}&before=${at(4)}`)).toEqual([
      'clicked@bo-device',
      '$pageview@bo-device',
    ]);
  });

  it('properties: event properties with the operators of flag matching, and person properties', async () => {
    const props = (filters: object) => names(`properties=${q(JSON.stringify(filters))}`);
    expect(await props([{ key: '$current_url', value: '/DOCS', operator: 'icontains' }])).toEqual([
      '$pageview@bo-device',
    ]);
    // Numbers compare as numbers ("120" > 10), text as text.
    expect(await props([{ key: 'price', value: 10, operator: 'gte', type: 'event' }])).toEqual([
      'signed_up@ann@example.com',
      '$pageview@ann-device',
    ]);
    expect(await props([{ key: 'beta', value: ['true'], operator: 'exact' }])).toEqual([
      '$pageview@ann-device',
    ]);
    expect(await props([{ key: 'beta', value: 'true', operator: 'is_not' }])).toHaveLength(4);
    expect(await props([{ key: 'label', operator: 'is_set' }])).toEqual(['clicked@bo-device']);
    expect(await props([{ key: 'when', value: '2026-02-15', operator: 'is_date_before' }])).toEqual([
      'clicked@bo-device',
    ]);
    expect(
      await props([
        { key: '$current_url', value: 'a\\.test/(pricing|docs)$', operator: 'regex' },
        { key: 'plan', value: 'pro', type: 'person' },
      ]),
    ).toEqual(['$pageview@ann-device']);
    expect(
      await props([{ key: 'email', value: 'other.test', operator: 'not_icontains', type: 'person' }]),
    ).toEqual(['$pageview@nobody', 'signed_up@ann@example.com', '$pageview@ann-device']);
  });

  it('refuses what it cannot apply, naming the parameter', async () => {
    for (const [query, attr] of [
      ['person_id=42', 'person_id'],
      ['after=yesterday', 'after'],
      [`properties=${q('[{"key":"x","value":1,"type":"cohort"}]')}`, 'properties'],
      [`properties=${q('{"key":"x"}')}`, 'properties'],
      ['select=event', 'select'],
      ['where=1', 'where'],
      ['offset=10', 'offset'],
    ]) {
      const r = await get(`/events/?${query}`);
      expect([query, r.status, r.body.attr]).toEqual([query, 400, attr]);
    }
  });
});

describe('feature flags, cohorts and early access features', () => {
  const keys = async (path: string, field = 'key') => {
    const r = await get(path);
    expect([path, r.status]).toEqual([path, 200]);
    expect(r.body.count).toBe(r.body.results.length);
    return (r.body.results as Record<string, string>[]).map((x) => x[field]).sort();
  };

  it('feature flags: search in key or name, active, type', async () => {
    expect(await keys('/feature_flags/?search=CHECKOUT')).toEqual(['checkout-redesign', 'service-config']);
    expect(await keys('/feature_flags/?active=false')).toEqual(['dark-mode']);
    expect(await keys('/feature_flags/?active=true&search=mode')).toEqual([]);
    expect(await keys('/feature_flags/?type=multivariant')).toEqual(['pricing-test']);
    expect(await keys('/feature_flags/?type=boolean')).toEqual([
      'checkout-redesign',
      'dark-mode',
      'service-config',
    ]);
    expect(await keys('/feature_flags/?type=remote_config')).toEqual(['service-config']);
    expect(await keys('/feature_flags/?type=experiment')).toEqual([]);
    for (const query of ['active=maybe', 'type=other', 'created_by_id=1', 'tags=x']) {
      const r = await get(`/feature_flags/?${query}`);
      expect([query, r.status, r.body.attr]).toEqual([query, 400, query.split('=')[0]]);
    }
  });

  it('cohorts and early access features: search in the name', async () => {
    expect(await keys('/cohorts/?search=power', 'name')).toEqual(['Power users', 'power sellers']);
    expect(await keys('/early_access_feature/?search=THEME', 'name')).toEqual(['Dark theme']);
    expect(await keys('/early_access_feature/?search=', 'name')).toEqual(['Dark theme', 'New editor']);
    expect((await get('/cohorts/?is_static=true')).body).toMatchObject({ attr: 'is_static' });
  });
});

describe('methods and preflights', () => {
  it('answers a wrong method on a known path with 405 and Allow (after authenticating)', async () => {
    for (const [method, path, allow] of [
      ['DELETE', `/api/projects/${f.teamA.id}/events/`, 'GET, HEAD, OPTIONS'],
      ['POST', `/api/projects/${f.teamA.id}/persons/`, 'GET, HEAD, OPTIONS'],
      ['PATCH', '/api/organizations/', 'GET, HEAD, POST, OPTIONS'],
      ['PUT', '/api/users/@me/', 'GET, HEAD, PATCH, DELETE, OPTIONS'],
    ] as const) {
      const r = await call(h, method, path, key);
      expect([method, path, r.status, r.headers.get('allow'), r.body.code]).toEqual([
        method,
        path,
        405,
        allow,
        'method_not_allowed',
      ]);
      expect((await call(h, method, path)).status).toBe(401);
    }
  });

  it('answers a preflight with 204 and Allow, without a key, and no CORS headers (management is not read cross-origin)', async () => {
    const res = await fetch(`${h.url}/api/projects/${f.teamA.id}/feature_flags/`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://dashboard.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect([...res.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});
