// Sett's Kafka client over TLS, end to end: the settings go through loadConfig and createKafka
// exactly as in a service's main.ts, and every connection passes a TLS-terminating proxy in front
// of a private dev broker (the proxy rewrites the brokers' advertised addresses to itself, so no
// connection can fall back to the plaintext ports). The proxy demands a client certificate, so a
// round trip also proves the certificate and key files are used.
import type { Kafka, KafkaMessage } from 'kafkajs';
import { loadConfig } from '@sett/config';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createKafkajsProducer, createKafka, ensureTopics } from '@sett/kafka';
import { createTestCa, startKafkaProxy, type KafkaProxy, type TestCa } from '../src';

jest.setTimeout(60_000);

const TOPIC = 'tls_round_trip';
const SERVERNAME = 'broker.sett.test';

let broker: DevBroker;
let pki: TestCa;
let otherPki: TestCa;
let proxy: KafkaProxy;
const clients: Array<{ disconnect(): Promise<void> }> = [];

beforeAll(async () => {
  broker = await startDevBroker({ topics: { [TOPIC]: 1 } });
  // The broker certificate names only SERVERNAME, not 127.0.0.1 where the proxy listens: a client
  // must send and check that name (KAFKA_SSL_SERVERNAME) to get through.
  pki = createTestCa({ serverDnsNames: [SERVERNAME] });
  otherPki = createTestCa({ serverDnsNames: [SERVERNAME], caName: 'Someone else CA' });
  proxy = await startKafkaProxy({
    brokers: broker.brokers,
    tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert, requireClientCert: true },
  });
});

afterAll(async () => {
  for (const c of clients) await c.disconnect().catch(() => undefined);
  await proxy?.close();
  await broker?.stop();
  pki?.remove();
  otherPki?.remove();
});

/** A client built the way services build theirs: env -> loadConfig -> createKafka. */
function kafkaFromEnv(env: Record<string, string>, retries = 5): Kafka {
  const config = loadConfig(
    { KAFKA_BROKERS: proxy.brokers.join(','), KAFKA_SECURITY_PROTOCOL: 'SSL', ...env },
    { kafkaClient: true },
  );
  return createKafka({
    brokers: config.kafkaBrokers,
    clientId: 'kafka-tls-test',
    security: config.kafka.security,
    logLevel: 'nothing',
    retry: { retries, initialRetryTime: 100, maxRetryTime: 500 },
  });
}

const goodEnv = () => ({
  KAFKA_SSL_CA_FILE: pki.ca.certFile,
  KAFKA_SSL_CERT_FILE: pki.client.certFile,
  KAFKA_SSL_KEY_FILE: pki.client.keyFile,
  KAFKA_SSL_SERVERNAME: SERVERNAME,
});

/** Connects a producer and returns the error it failed with (fails the test if it connects). */
async function connectError(kafka: Kafka): Promise<Error> {
  const producer = kafka.producer();
  clients.push(producer);
  const error = await producer.connect().then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (error === undefined) throw new Error('expected the TLS connection to fail, but it connected');
  return error;
}

it('produces and consumes through TLS with CA verification, SNI and a client certificate', async () => {
  const kafka = kafkaFromEnv(goodEnv());

  // The topic job's admin client takes the same path.
  await expect(ensureTopics(kafka, [{ topic: TOPIC, numPartitions: 1 }])).resolves.toEqual({
    created: [],
    existing: [TOPIC],
  });

  const producer = createKafkajsProducer({ kafka, lingerMs: 0 });
  clients.push(producer);
  await producer.connect();
  const value = `over tls ${Date.now()}`;
  await producer.send(TOPIC, [{ key: 'k', value }]);

  // A consumer group also reaches its coordinator through the address the proxy rewrote.
  const consumer = kafka.consumer({
    groupId: `tls-${process.pid}-${Date.now()}`,
    sessionTimeout: 3000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 200,
  });
  clients.push(consumer);
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  const received = await new Promise<KafkaMessage>((resolve) => {
    void consumer.run({ eachMessage: async ({ message }) => resolve(message) });
  });
  expect(received.value?.toString()).toBe(value);
  expect(received.key?.toString()).toBe('k');

  // Bootstrap, broker and coordinator connections all came through the proxy, each naming the
  // configured server.
  expect(proxy.connections()).toBeGreaterThanOrEqual(2);
  expect(new Set(proxy.servernames())).toEqual(new Set([SERVERNAME]));
});

it('refuses a broker whose certificate another CA signed, saying why', async () => {
  const error = await connectError(
    kafkaFromEnv({ ...goodEnv(), KAFKA_SSL_CA_FILE: otherPki.ca.certFile }, 0),
  );
  expect(error.message).toMatch(/self[- ]signed certificate in certificate chain|unable to (get|verify)/i);
});

it('checks the broker name: without KAFKA_SSL_SERVERNAME the address 127.0.0.1 does not match', async () => {
  const { KAFKA_SSL_SERVERNAME: _unused, ...env } = goodEnv();
  const error = await connectError(kafkaFromEnv(env, 0));
  expect(error.message).toMatch(/does not match certificate's altnames/);
});

it('the broker refuses a client without a certificate when it demands one', async () => {
  const { KAFKA_SSL_CERT_FILE: _c, KAFKA_SSL_KEY_FILE: _k, ...env } = goodEnv();
  await connectError(kafkaFromEnv(env, 0));
  expect(proxy.handshakeErrors().join('\n')).toMatch(/certificate/i);
});

it('KAFKA_SSL_VERIFY=false connects whatever signed the broker certificate', async () => {
  const kafka = kafkaFromEnv({
    ...goodEnv(),
    KAFKA_SSL_CA_FILE: otherPki.ca.certFile,
    KAFKA_SSL_VERIFY: 'false',
  });
  const producer = kafka.producer();
  clients.push(producer);
  await expect(producer.connect()).resolves.toBeUndefined();
});
