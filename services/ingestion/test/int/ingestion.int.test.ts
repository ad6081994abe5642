// End to end in-process: real broker (private), Postgres, Redis. Persons, identify, alias,
// groups, personless events, drops, dead letters, and redelivery changing nothing.
import type { Consumer } from 'kafkajs';
import { decodeGroupTypes, redisKeys } from '@sett/cache';
import { TOPICS, type DeadLetterMessage } from '@sett/kafka';
import {
  captureMessage,
  countEvents,
  createTeam,
  metricValue,
  personState,
  produce,
  setupEnv,
  startWorker,
  waitFor,
  type Env,
} from './helpers';

jest.setTimeout(60_000);

let env: Env;
let team: { teamId: number; token: string };
let running: ReturnType<typeof startWorker>;

beforeAll(async () => {
  env = await setupEnv(4);
  team = await createTeam(env.pool);
  running = startWorker(env);
  await running.worker.start();
}, 60_000);

afterAll(async () => {
  await running?.worker.stop();
  await env?.close();
}, 60_000);

it('creates persons, applies $set / $set_once / $unset, merges on $identify and $create_alias, and stores every kind of event', async () => {
  const t = team.token;
  const messages = [
    captureMessage(t, 'anon-1', '$pageview', {
      $current_url: 'https://x.test/a',
      $set_once: { initial_url: '/a' },
      $set: { seen: 1 },
    }),
    captureMessage(t, 'anon-1', '$pageview', {
      $current_url: 'https://x.test/b',
      $set_once: { initial_url: '/b' },
      $set: { seen: 2, tmp: true },
    }),
    captureMessage(t, 'user-1', 'signed in', { $set: { plan: 'pro' } }),
    captureMessage(t, 'user-1', '$identify', { $anon_distinct_id: 'anon-1', $set: { email: 'u1@x.test' } }),
    captureMessage(t, 'anon-1', 'after merge', { $unset: ['tmp'] }),
    // alias: other-1 is merged into main-1, which survives
    captureMessage(t, 'main-1', 'e', { $set: { who: 'main', main_only: 1 } }),
    captureMessage(t, 'other-1', 'e', { $set: { who: 'other', other_only: 1 } }),
    captureMessage(t, 'other-1', '$create_alias', { alias: 'main-1' }),
    captureMessage(t, 'anon-2', '$screen', { $screen_name: 'Home' }),
    captureMessage(t, 'anon-2', 'survey sent', { $survey_id: 's1', $survey_response_q1: 'yes' }),
    captureMessage(t, 'anon-2', '$feature_flag_called', {
      $feature_flag: 'f',
      $feature_flag_response: 'test',
      '$feature/f': 'test',
    }),
    captureMessage(t, 'ghost', 'personless', { $process_person_profile: false, $set: { ignored: true } }),
  ];
  await produce(env.producer, messages);
  await waitFor(
    'all events stored',
    async () => (await countEvents(env.pool, team.teamId)) === messages.length,
  );

  const state = await personState(env.pool, team.teamId);
  expect(state).toEqual([
    {
      ids: ['anon-1', 'user-1'],
      properties: { initial_url: '/a', seen: 2, plan: 'pro', email: 'u1@x.test' },
      isIdentified: true,
    },
    { ids: ['anon-2'], properties: {}, isIdentified: false },
    {
      ids: ['main-1', 'other-1'],
      properties: { who: 'main', main_only: 1, other_only: 1 },
      isIdentified: true,
    },
  ]);

  const { rows } = await env.pool.query(
    `SELECT e.event, e.distinct_id, e.person_id, e.properties, p.uuid AS current_person
       FROM events e LEFT JOIN person_distinct_ids d ON d.team_id = e.team_id AND d.distinct_id = e.distinct_id
       LEFT JOIN persons p ON p.id = d.person_id WHERE e.team_id = $1`,
    [team.teamId],
  );
  const byEvent = new Map(rows.map((r) => [r.event, r]));
  // Personless: no person id, no person created.
  expect(byEvent.get('personless')).toMatchObject({ person_id: null, current_person: null });
  // Every stored event still resolves to its surviving person through person_distinct_ids.
  for (const r of rows) if (r.event !== 'personless') expect(r.current_person).toBeTruthy();
  expect(byEvent.get('$feature_flag_called')!.properties).toMatchObject({
    '$feature/f': 'test',
    $feature_flag: 'f',
  });
  expect(byEvent.get('survey sent')!.properties).toMatchObject({ $survey_id: 's1' });
});

it('handles $groupidentify and $groups, publishes group types to Redis, and caps group types at five', async () => {
  const t = team.token;
  const types = ['company', 'project', 'team', 'org', 'region', 'sixth'];
  const messages = [
    ...types.map((type, i) =>
      captureMessage(t, 'g-user', '$groupidentify', {
        $group_type: type,
        $group_key: `${type}-k`,
        $group_set: { n: i },
      }),
    ),
    captureMessage(t, 'g-user', '$groupidentify', {
      $group_type: 'company',
      $group_key: 'company-k',
      $group_set: { name: 'Acme' },
    }),
    captureMessage(t, 'g-user', 'with groups', {
      $groups: { company: 'company-k', region: 'eu', unknown: 'x', sixth: 'y' },
    }),
    captureMessage(t, 'g-user', 'with new group key', { $groups: { company: 'never-identified' } }),
  ];
  const before = await countEvents(env.pool, team.teamId);
  await produce(env.producer, messages);
  await waitFor(
    'group events stored',
    async () => (await countEvents(env.pool, team.teamId)) === before + messages.length,
  );

  const mappings = await env.pool.query(
    'SELECT group_type, group_type_index FROM group_type_mappings WHERE team_id = $1 ORDER BY group_type_index',
    [team.teamId],
  );
  expect(mappings.rows).toEqual(
    types.slice(0, 5).map((group_type, group_type_index) => ({ group_type, group_type_index })),
  );
  const groups = await env.pool.query(
    'SELECT group_type_index, group_key, group_properties FROM groups WHERE team_id = $1 ORDER BY group_type_index',
    [team.teamId],
  );
  expect(groups.rows).toHaveLength(5);
  expect(groups.rows[0]).toEqual({
    group_type_index: 0,
    group_key: 'company-k',
    group_properties: { n: 0, name: 'Acme' },
  });
  const ev = await env.pool.query(
    `SELECT event, group_0, group_1, group_4 FROM events WHERE team_id = $1 AND event LIKE 'with%' ORDER BY event`,
    [team.teamId],
  );
  expect(ev.rows).toEqual([
    { event: 'with groups', group_0: 'company-k', group_1: null, group_4: 'eu' },
    { event: 'with new group key', group_0: 'never-identified', group_1: null, group_4: null },
  ]);
  // $groups never creates a group.
  const created = await env.pool.query(`SELECT 1 FROM groups WHERE group_key = 'never-identified'`);
  expect(created.rowCount).toBe(0);
  expect(await metricValue(running.registry, 'sett_ingestion_group_type_limit_total')).toBe(1);
  expect(decodeGroupTypes(await env.redis.get(redisKeys.groupTypes(team.teamId)))).toEqual({
    0: 'company',
    1: 'project',
    2: 'team',
    3: 'org',
    4: 'region',
  });
  // The project's query data version moved with its batches (management's result cache).
  expect(Number(await env.redis.get(redisKeys.queryDataVersion(team.teamId)))).toBeGreaterThan(0);
});

it('records the event names and event, person and group properties it stores, with their types', async () => {
  const own = await createTeam(env.pool);
  const t = own.token;
  const messages = [
    captureMessage(t, 'd-1', 'defined', {
      plan: 'pro',
      price: 12.5,
      paid: true,
      flagged: 'false',
      signed_up_at: '2026-01-02T03:04:05Z',
      created_time: 1_767_225_600,
      utm_source: '2026-01-01',
      nested: { a: 1 },
      $set: { email: 'd@x.test' },
      $set_once: { first_seen: '2026-01-01' },
    }),
    captureMessage(t, 'd-1', 'defined', { price: 'not a number now', extra: 1 }),
    captureMessage(t, 'd-2', 'other', { plan: 'free', ['k'.repeat(401)]: 1 }),
    captureMessage(t, 'd-2', '$groupidentify', {
      $group_type: 'company',
      $group_key: 'c1',
      $group_set: { seats: 5 },
    }),
  ];
  await produce(env.producer, messages);
  await waitFor(
    'definitions recorded',
    async () =>
      (
        await env.pool.query(
          `SELECT 1 FROM property_definitions WHERE team_id = $1 AND name IN ('seats', 'extra', 'plan', 'email')
            UNION ALL SELECT 1 FROM event_definitions WHERE team_id = $1`,
          [own.teamId],
        )
      ).rowCount === 7,
  );
  const events = await env.pool.query(
    'SELECT name, last_seen_at IS NOT NULL AS seen FROM event_definitions WHERE team_id = $1 ORDER BY name',
    [own.teamId],
  );
  expect(events.rows).toEqual([
    { name: '$groupidentify', seen: true },
    { name: 'defined', seen: true },
    { name: 'other', seen: true },
  ]);
  const properties = await env.pool.query(
    `SELECT type, group_type_index, name, property_type, is_numerical FROM property_definitions
      WHERE team_id = $1 ORDER BY type, name`,
    [own.teamId],
  );
  const byName = (type: number) =>
    Object.fromEntries(
      properties.rows
        .filter((r) => r.type === type)
        .map((r) => [r.name, [r.property_type, r.is_numerical, r.group_type_index]]),
    );
  expect(byName(1)).toMatchObject({
    plan: ['String', false, -1],
    price: ['Numeric', true, -1],
    paid: ['Boolean', false, -1],
    flagged: ['Boolean', false, -1],
    signed_up_at: ['DateTime', false, -1],
    created_time: ['DateTime', false, -1],
    utm_source: ['String', false, -1],
    nested: [null, false, -1],
    extra: ['Numeric', true, -1],
  });
  // A name over 400 characters is stored with its event, not as a definition.
  expect(properties.rows.filter((r) => r.name.length > 400)).toEqual([]);
  // $set and friends are not event properties; they are person properties.
  expect(byName(1)).not.toHaveProperty('$set');
  expect(byName(1)).not.toHaveProperty('$group_set');
  expect(byName(2)).toEqual({ email: ['String', false, -1], first_seen: ['DateTime', false, -1] });
  expect(byName(3)).toEqual({ seats: ['Numeric', true, 0] });
  const pairs = await env.pool.query(
    `SELECT event, property FROM event_properties WHERE team_id = $1 AND property IN ('plan', 'extra') ORDER BY 1, 2`,
    [own.teamId],
  );
  expect(pairs.rows).toEqual([
    { event: 'defined', property: 'extra' },
    { event: 'defined', property: 'plan' },
    { event: 'other', property: 'plan' },
  ]);
  expect(
    await metricValue(running.registry, 'sett_ingestion_definitions_written_total', {
      table: 'event_definitions',
    }),
  ).toBeGreaterThanOrEqual(3);
});

it('drops unknown tokens and nameless events, dead-letters bad messages with the reason, and keeps going', async () => {
  const before = await countEvents(env.pool);
  const good = captureMessage(team.token, 'after-bad', 'still ingested');
  await env.producer.send(TOPICS.main, [
    { key: 'k', value: '{"this is": not json' },
    { key: 'k', value: JSON.stringify({ ...captureMessage(team.token, 'x', 'e'), uuid: 'not-a-uuid' }) },
    { key: 'k', value: JSON.stringify({ ...captureMessage(team.token, 'x', 'e'), event: '' }) },
    { key: 'k', value: JSON.stringify(captureMessage('phc_unknown_token', 'x', 'e')) },
    { key: 'k', value: JSON.stringify(good) },
  ]);
  await waitFor(
    'the good event',
    async () => (await env.pool.query('SELECT 1 FROM events WHERE uuid = $1', [good.uuid])).rowCount === 1,
  );
  expect(await countEvents(env.pool)).toBe(before + 1);
  await waitFor(
    'drop counters',
    async () =>
      (await metricValue(running.registry, 'sett_ingestion_dropped_events_total', {
        reason: 'unknown_token',
      })) === 1,
  );
  expect(
    await metricValue(running.registry, 'sett_ingestion_dropped_events_total', {
      reason: 'missing_event_name',
    }),
  ).toBe(1);
  expect(await metricValue(running.registry, 'sett_ingestion_dead_letters_total')).toBe(2);

  const letters: DeadLetterMessage[] = [];
  const consumer: Consumer = env.kafka.consumer({
    groupId: `dlq-reader-${Date.now()}`,
    sessionTimeout: 3000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 200,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPICS.deadLetter], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => void letters.push(JSON.parse(message.value!.toString())),
  });
  try {
    await waitFor('two dead letters', () => letters.length >= 2);
  } finally {
    await consumer.disconnect();
  }
  expect(letters.map((l) => l.reason).sort()).toEqual([
    expect.stringMatching(/^invalid JSON/),
    expect.stringMatching(/^uuid is not a UUID/),
  ]);
  expect(letters.find((l) => l.reason.startsWith('invalid JSON'))).toMatchObject({
    topic: TOPICS.main,
    value: '{"this is": not json',
    value_encoding: 'utf8',
  });
});

it('a redelivery of everything (a second consumer group from the beginning) changes nothing', async () => {
  const snapshot = async () => ({
    events: (
      await env.pool.query('SELECT uuid, person_id, properties, timestamp, group_0 FROM events ORDER BY uuid')
    ).rows,
    persons: (
      await env.pool.query('SELECT id, uuid, properties, version, is_identified FROM persons ORDER BY id')
    ).rows,
    ids: (
      await env.pool.query(
        'SELECT distinct_id, person_id, version FROM person_distinct_ids ORDER BY distinct_id',
      )
    ).rows,
    groups: (
      await env.pool.query('SELECT group_key, group_properties, version FROM groups ORDER BY group_key')
    ).rows,
  });
  const before = await snapshot();
  const replay = startWorker(env, { groupIds: { live: 'replay-live', historical: 'replay-historical' } });
  await replay.worker.start();
  try {
    await waitFor('the replay to catch up', async () => {
      const lag = await replay.worker.lag();
      return lag.some((l) => l.committedOffset !== '-1') && lag.every((l) => l.lag === 0);
    });
  } finally {
    await replay.worker.stop();
  }
  expect(await metricValue(replay.registry, 'sett_ingestion_redelivered_events_total')).toBeGreaterThan(0);
  expect(await snapshot()).toEqual(before);
});
