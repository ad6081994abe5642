// ensureTopics against the dev broker, whose createTopics is broken: existing topics are
// success, a topic that cannot be created is a clear error.
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createKafka, ensureTopics, TOPICS, TopicsMissingError } from '../src';

jest.setTimeout(60000);

let broker: DevBroker;
beforeAll(async () => {
  broker = await startDevBroker({ partitions: 2 });
});
afterAll(async () => {
  await broker?.stop();
});

it('treats pre-created topics as present and reports ones it could not create', async () => {
  const kafka = createKafka({ brokers: broker.brokers, clientId: 'topic-admin-test', logLevel: 'nothing' });
  const all = Object.values(TOPICS).map((topic) => ({ topic, numPartitions: 2 }));
  await expect(ensureTopics(kafka, all)).resolves.toEqual({ created: [], existing: Object.values(TOPICS) });

  const error = await ensureTopics(kafka, [...all, { topic: 'not_there', numPartitions: 1 }]).catch(
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TopicsMissingError);
  expect((error as TopicsMissingError).missing).toEqual(['not_there']);
});
