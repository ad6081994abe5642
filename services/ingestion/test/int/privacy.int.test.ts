// Per-project privacy at ingestion, end to end over a real broker and Postgres: GeoIP adds
// $geoip_* to events and persons (as PostHog's GeoIP transformation does) from the bundled City
// database; anonymize_ips keeps every client address out of Postgres; geoip_enabled and
// $geoip_disable turn the enrichment off; the first stored event sets ingested_event.
import { openGeoIp } from '@sett/geoip';
import {
  captureMessage,
  createTeam,
  personState,
  produce,
  setupEnv,
  startWorker,
  waitFor,
  type Env,
} from './helpers';

jest.setTimeout(60_000);

let env: Env;
let running: ReturnType<typeof startWorker>;

beforeAll(async () => {
  env = await setupEnv(2);
  running = startWorker(env, { geoip: await openGeoIp() });
  await running.worker.start();
}, 60_000);

afterAll(async () => {
  await running?.worker.stop();
  await env?.close();
}, 60_000);

const GB = '81.2.69.142';

async function storedEvents(teamId: number) {
  const { rows } = await env.pool.query<{ event: string; properties: Record<string, unknown> }>(
    'SELECT event, properties FROM events WHERE team_id = $1 ORDER BY timestamp',
    [teamId],
  );
  return rows;
}

async function settings(teamId: number, set: Record<string, boolean>) {
  for (const [column, value] of Object.entries(set))
    await env.pool.query(`UPDATE teams SET ${column} = $2 WHERE id = $1`, [teamId, value]);
}

it('GeoIP on stored events and persons; anonymize_ips drops every address after it; the switches turn it off', async () => {
  const plain = await createTeam(env.pool, 'plain');
  const anonymous = await createTeam(env.pool, 'anonymous');
  const noGeo = await createTeam(env.pool, 'nogeo');
  const idle = await createTeam(env.pool, 'idle');
  await settings(anonymous.teamId, { anonymize_ips: true });
  await settings(noGeo.teamId, { geoip_enabled: false });

  await produce(env.producer, [
    captureMessage(plain.token, 'p1', 'located', { $set: { plan: 'pro' } }, { ip: GB }),
    captureMessage(plain.token, 'p2', 'opted out', { $geoip_disable: true }, { ip: GB }),
    captureMessage(plain.token, 'p3', 'private', {}, { ip: '10.1.2.3' }),
    captureMessage(plain.token, 'p4', 'no address'),
    captureMessage(anonymous.token, 'a1', 'from capture', {}, { ip: GB }),
    captureMessage(anonymous.token, 'a2', 'client sent', { $ip: GB }),
    captureMessage(noGeo.token, 'n1', 'not located', {}, { ip: GB }),
  ]);
  await waitFor('all events stored', async () => {
    const counts = await Promise.all(
      [plain, anonymous, noGeo].map(async (t) => (await storedEvents(t.teamId)).length),
    );
    return counts.join() === '4,2,1';
  });

  const [located, optedOut, privateIp, noAddress] = await storedEvents(plain.teamId);
  expect(located!.properties).toMatchObject({
    $ip: GB,
    $geoip_country_code: 'GB',
    $geoip_country_name: 'United Kingdom',
    $geoip_continent_code: 'EU',
    $geoip_latitude: expect.any(Number),
    $geoip_longitude: expect.any(Number),
    $geoip_time_zone: expect.any(String),
  });
  // PostHog's $set / $set_once: current location on the person, first location kept.
  expect(located!.properties.$set).toMatchObject({ plan: 'pro', $geoip_country_code: 'GB' });
  expect(located!.properties.$set_once).toMatchObject({ $initial_geoip_country_code: 'GB' });
  for (const e of [optedOut!, privateIp!, noAddress!])
    expect(
      Object.keys(e.properties).filter((k) => k.startsWith('$geoip_') && k !== '$geoip_disable'),
    ).toEqual([]);
  expect(optedOut!.properties.$ip).toBe(GB);
  expect(noAddress!.properties).not.toHaveProperty('$ip');

  const persons = await personState(env.pool, plain.teamId);
  const p1 = persons.find((p) => p.ids.includes('p1'))!;
  expect(p1.properties).toMatchObject({
    plan: 'pro',
    $geoip_country_code: 'GB',
    $initial_geoip_country_code: 'GB',
  });

  // anonymize_ips: located first, then no address anywhere in Postgres.
  for (const e of await storedEvents(anonymous.teamId)) {
    expect(e.properties).not.toHaveProperty('$ip');
    expect(e.properties.$geoip_country_code).toBe('GB');
    expect(JSON.stringify(e.properties)).not.toContain(GB);
  }
  const { rows: leaks } = await env.pool.query(
    `SELECT 1 FROM persons WHERE team_id = $1 AND properties::text LIKE '%' || $2 || '%'`,
    [anonymous.teamId, GB],
  );
  expect(leaks).toEqual([]);

  const [notLocated] = await storedEvents(noGeo.teamId);
  expect(notLocated!.properties.$ip).toBe(GB);
  expect(Object.keys(notLocated!.properties).filter((k) => k.startsWith('$geoip_'))).toEqual([]);

  // ingested_event: set once the first event is stored (after the write), not for a project that
  // has none.
  const flags = async () =>
    (
      await env.pool.query<{ ingested_event: boolean }>(
        'SELECT ingested_event FROM teams WHERE id = ANY($1) ORDER BY id',
        [[plain.teamId, anonymous.teamId, noGeo.teamId, idle.teamId]],
      )
    ).rows.map((r) => r.ingested_event);
  await waitFor('ingested_event on the three projects with events', async () =>
    (await flags()).slice(0, 3).every(Boolean),
  );
  expect(await flags()).toEqual([true, true, true, false]);
});
