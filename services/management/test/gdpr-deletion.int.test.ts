// GDPR erasure end to end: the real ingestion worker on a private dev broker, the management
// API and its job runner, one database. A person's events are ingested; ingestion stops, so
// more of their events wait in Kafka; the person is deleted with delete_events. Then:
// - the person and distinct ids are gone at once;
// - the waiting events, ingested afterwards, make a new person that starts empty (none of the
//   old properties), never the old one;
// - the deletion job erases every event of the distinct ids from before the request, those that
//   were in Kafka included, and the person they made (pre-request data of the erased person);
// - an event sent after the deletion makes a new person that stays, with its event.
import { createPrisma, type PrismaClient } from '@sett/db';
import type { RunningService } from '@sett/http';
import { createSilentLogger } from '@sett/logger';
import { createBackgroundJobs } from '../src/jobs/background-jobs';
import type { JobRunner } from '../src/jobs/job-runner';
import { uuidv7At } from '../src/retention/partition-plan';
import { call, createKey, seed, serveManagement, type Fixture } from './helpers';
import {
  captureMessage,
  produce,
  setupEnv,
  startWorker,
  waitFor,
  type Env,
} from '../../ingestion/test/int/helpers';

jest.setTimeout(120_000);

let env: Env;
let prisma: PrismaClient;
let service: RunningService;
let api: { url: string };
let f: Fixture;
let key: string;
let jobs: JobRunner | undefined;
let ingestion: ReturnType<typeof startWorker> | undefined;
const groupIds = { live: 'gdpr-live', historical: 'gdpr-historical' };

beforeAll(async () => {
  env = await setupEnv(2);
  prisma = createPrisma({ databaseUrl: env.db.url, maxConnections: 3 });
  f = await seed(prisma);
  key = await createKey(prisma, f.alice.id, ['person:write']);
  const logger = createSilentLogger();
  jobs = createBackgroundJobs({
    pool: env.pool,
    logger,
    // The settle phase waits an hour; the test moves the clock by setting run_after.
    config: {
      pollIntervalMs: 50,
      leaseMs: 10_000,
      retentionIntervalMs: 3_600_000,
      personDeletionSettleMs: 3_600_000,
    },
  });
  ({ service, ...api } = await serveManagement({
    prisma,
    pool: env.pool,
    redis: env.redis,
    logger,
    onJobQueued: () => jobs?.wake(),
  }));
  jobs.start();
});

afterAll(async () => {
  await jobs?.stop();
  await ingestion?.worker.stop();
  await service?.stop();
  await prisma?.$disconnect();
  await env?.close();
});

/** An event as capture would produce it now: a UUIDv7 and the current time. */
function liveEvent(distinctId: string, event: string, properties: Record<string, unknown> = {}) {
  const now = new Date();
  return captureMessage(f.teamA.apiToken, distinctId, event, properties, {
    uuid: uuidv7At(now.getTime()),
    timestamp: now.toISOString(),
    now: now.toISOString(),
  });
}

const eventsOf = async (distinctId: string) =>
  (
    await env.pool.query<{ event: string }>(
      `SELECT event FROM events WHERE team_id = $1 AND distinct_id = $2 ORDER BY event`,
      [f.teamA.id, distinctId],
    )
  ).rows.map((r) => r.event);

const personOf = async (distinctId: string) =>
  (
    await env.pool.query<{ id: string; uuid: string; properties: Record<string, unknown> }>(
      `SELECT p.id, p.uuid, p.properties FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id
        WHERE d.team_id = $1 AND d.distinct_id = $2`,
      [f.teamA.id, distinctId],
    )
  ).rows[0];

it('erases a person and their events, including events still in Kafka at deletion time', async () => {
  ingestion = startWorker(env, { groupIds });
  await ingestion.worker.start();
  await produce(env.producer, [
    liveEvent('gdpr-anon', '1-pageview', { $set: { email: 'erase-me@x.test' } }),
    liveEvent('gdpr-user', '2-signed-in', { $set: { name: 'Erase Me' } }),
    liveEvent('gdpr-user', '$identify', { $anon_distinct_id: 'gdpr-anon' }),
    liveEvent('bystander', 'b-1', { $set: { email: 'keep@x.test' } }),
  ]);
  await waitFor(
    'first events stored',
    async () =>
      (await eventsOf('bystander')).length === 1 &&
      (await eventsOf('gdpr-user')).length === 2 &&
      (await eventsOf('gdpr-anon')).length === 1,
  );
  const old = (await personOf('gdpr-user'))!;
  expect(old.properties).toMatchObject({ email: 'erase-me@x.test', name: 'Erase Me' });
  expect((await personOf('gdpr-anon'))!.id).toBe(old.id);

  // Ingestion stops: these wait in Kafka while the person is deleted.
  await ingestion.worker.stop();
  ingestion = undefined;
  await produce(env.producer, [
    liveEvent('gdpr-user', '3-in-kafka', { $set: { in_kafka: true } }),
    liveEvent('gdpr-anon', '4-in-kafka'),
  ]);

  const del = await call(
    api,
    'DELETE',
    `/api/projects/${f.teamA.id}/persons/${old.uuid}/?delete_events=true`,
    key,
  );
  expect(del.status).toBe(202);
  const location = del.headers.get('location')!;
  expect(await personOf('gdpr-user')).toBeUndefined();
  expect(await personOf('gdpr-anon')).toBeUndefined();
  // The job's first phase runs now: the stored events go; the job waits for its settle phase.
  const waiting = await waitFor('first phase done', async () => {
    const res = await call(api, 'GET', location, key);
    return res.body.phase === 'settle' ? res.body : false;
  });
  expect(waiting).toMatchObject({ status: 'queued', events_deleted: 3 });
  expect(await eventsOf('gdpr-user')).toEqual([]);
  expect(await eventsOf('gdpr-anon')).toEqual([]);

  ingestion = startWorker(env, { groupIds });
  await ingestion.worker.start();
  await waitFor(
    'events from Kafka stored',
    async () => (await eventsOf('gdpr-user')).length === 1 && (await eventsOf('gdpr-anon')).length === 1,
    60_000,
  );

  // A new person, starting empty: nothing of the old one came back.
  const revived = (await personOf('gdpr-user'))!;
  expect(revived.id).not.toBe(old.id);
  expect(revived.properties).toEqual({ in_kafka: true });
  expect((await personOf('gdpr-anon'))!.id).not.toBe(old.id);

  // The settle time passes: the job erases what Kafka brought back from before the request.
  await env.pool.query(`UPDATE background_jobs SET run_after = now() WHERE id = $1`, [
    location.split('/')[6],
  ]);
  jobs!.wake();
  const done = await waitFor('deletion job finished', async () => {
    const res = await call(api, 'GET', location, key);
    return res.body.status === 'succeeded' ? res.body : false;
  });
  // 3 stored before the request, 2 that were in Kafka; one person each for the two distinct ids.
  expect(done).toMatchObject({ delete_events: true, events_deleted: 5, persons_swept: 2 });
  expect(await eventsOf('gdpr-user')).toEqual([]);
  expect(await eventsOf('gdpr-anon')).toEqual([]);
  expect(await personOf('gdpr-user')).toBeUndefined();
  expect(await personOf('gdpr-anon')).toBeUndefined();
  // The bystander is untouched.
  expect(await eventsOf('bystander')).toEqual(['b-1']);
  expect((await personOf('bystander'))!.properties).toEqual({ email: 'keep@x.test' });

  // After the deletion, the user comes back: a new person with only the new data, which stays.
  await produce(env.producer, [liveEvent('gdpr-user', '5-after', { $set: { fresh: true } })]);
  await waitFor('new event stored', async () => (await eventsOf('gdpr-user')).length === 1);
  const fresh = (await personOf('gdpr-user'))!;
  expect(fresh.properties).toEqual({ fresh: true });
  expect(fresh.id).not.toBe(old.id);
  expect(fresh.id).not.toBe(revived.id);
});
