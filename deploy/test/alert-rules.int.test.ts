// The shipped alert rules (deploy/monitoring/sett-alerts.yaml) against real scrapes of a running
// ingestion process: scraped once consuming, then again after a real dead letter. The first
// scrape must already carry the dead-letter counter at 0, or increase() has nothing to start
// from and the alert never fires on a process's first dead letter.
import type { ChildProcess } from 'node:child_process';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createBatchingProducer, createKafka, TOPICS } from '@sett/kafka';
import { createTestDatabase, type TestDatabase } from '@sett/testing';
import {
  parseScrape,
  promtoolPath,
  promtoolTestRules,
  seriesFromScrapes,
  spawnService,
  waitFor,
} from './promtool';

jest.setTimeout(90_000);
const DEAD = `sett_ingestion_dead_letters_total{topic="${TOPICS.main}",service="ingestion"}`;

let broker: DevBroker;
let db: TestDatabase;
let child: ChildProcess;
let base: string;

beforeAll(async () => {
  promtoolPath();
  [broker, db] = await Promise.all([startDevBroker({ partitions: 1 }), createTestDatabase()]);
  ({ base, child } = await spawnService('ingestion', {
    KAFKA_BROKERS: broker.bootstrap,
    DATABASE_URL: db.url,
    INGESTION_PORT: '0',
    INGESTION_TOPICS: 'main',
    INGESTION_GEOIP_ENABLED: 'false',
    INGESTION_SESSION_TIMEOUT_MS: '3000',
    INGESTION_HEARTBEAT_INTERVAL_MS: '300',
    INGESTION_MAX_WAIT_MS: '100',
  }));
  // Consuming: the group has joined, so what is produced from now on is read.
  await waitFor('ingestion ready', async () => (await fetch(`${base}/_ready`)).status === 200);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await broker?.stop();
  await db?.drop();
});

const scrape = async () => parseScrape(await (await fetch(`${base}/_metrics`)).text());

it('SettIngestionDeadLetters fires on the first dead letter of a fresh process, from two real scrapes', async () => {
  const before = await scrape();
  expect(before.get(DEAD)).toBe(0);

  const kafka = createKafka({ brokers: [broker.bootstrap], clientId: 'alerts-test', logLevel: 'nothing' });
  const producer = createBatchingProducer({ kafka, lingerMs: 1 });
  await producer.connect();
  await producer.send(TOPICS.main, [{ key: 'phc_x:d', value: Buffer.from('{"not": "a capture message"') }]);
  await producer.disconnect();
  let after = before;
  await waitFor('the dead letter to be counted', async () => {
    after = await scrape();
    return after.get(DEAD) === 1;
  });

  const out = promtoolTestRules([
    {
      name: 'a fresh ingestion process dead-letters one message',
      interval: '1m',
      input_series: seriesFromScrapes([before, after]),
      alert_rule_test: [
        {
          eval_time: '5m',
          alertname: 'SettIngestionDeadLetters',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', topic: TOPICS.main },
              exp_annotations: {
                summary: `1 messages from ${TOPICS.main} went to events_dead_letter in 15 minutes`,
                description:
                  'Ingestion could not process them; each dead letter carries the reason. Read them from the events_dead_letter topic.',
              },
            },
          ],
        },
      ],
    },
    {
      name: 'a quiet ingestion process: no dead-letter alert',
      interval: '1m',
      input_series: seriesFromScrapes([before, before]),
      alert_rule_test: [{ eval_time: '5m', alertname: 'SettIngestionDeadLetters', exp_alerts: [] }],
    },
  ]);
  expect(out).toContain('SUCCESS');
});
