// SASL round trips with Sett's Kafka client. The dev broker (librdkafka's mock) has no SASL at
// all (it does not offer SaslHandshake), so the test proxy plays the broker's side of PLAIN and
// SCRAM in front of it; the client side is exactly what a service builds: env -> loadConfig ->
// createKafka. Covered: the MSK shape (SASL_SSL, SCRAM-SHA-512), the Confluent Cloud shape
// (SASL_SSL, PLAIN), SCRAM-SHA-256 over SASL_PLAINTEXT, and a wrong password; and the same
// settings given to node-rdkafka (the producer Sett ships), read back by kafkajs.
import type { Kafka, KafkaMessage } from 'kafkajs';
import { loadConfig } from '@sett/config';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createKafkajsProducer, createKafka, createProducer, ensureTopics } from '@sett/kafka';
import { createTestCa, startKafkaProxy, type KafkaProxy, type TestCa } from '../src';

jest.setTimeout(60_000);

const TOPIC = 'sasl_round_trip';
const SERVERNAME = 'broker.sett.test';
const USERS = { 'sett-capture': 'correct horse battery staple', 'api-key-1': 'api-secret-1' };

let broker: DevBroker;
let pki: TestCa;
let saslSsl: KafkaProxy;
let saslPlaintext: KafkaProxy;
const clients: Array<{ disconnect(): Promise<void> }> = [];

beforeAll(async () => {
  broker = await startDevBroker({ topics: { [TOPIC]: 1 } });
  // 127.0.0.1 too: librdkafka checks the certificate against the host it connects to (it has no
  // SNI override, KAFKA_SSL_SERVERNAME).
  pki = createTestCa({ serverDnsNames: [SERVERNAME], serverIps: ['127.0.0.1'] });
  const mechanisms = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
  saslSsl = await startKafkaProxy({
    brokers: broker.brokers,
    tls: { cert: pki.server.cert, key: pki.server.key },
    sasl: { mechanisms: [...mechanisms], users: USERS },
  });
  saslPlaintext = await startKafkaProxy({
    brokers: broker.brokers,
    sasl: { mechanisms: [...mechanisms], users: USERS },
  });
});

afterAll(async () => {
  for (const c of clients) await c.disconnect().catch(() => undefined);
  await saslSsl?.close();
  await saslPlaintext?.close();
  await broker?.stop();
  pki?.remove();
});

function kafkaFromEnv(env: Record<string, string>, retries = 5): Kafka {
  const config = loadConfig(env, { kafkaClient: true });
  return createKafka({
    brokers: config.kafkaBrokers,
    clientId: 'kafka-sasl-test',
    security: config.kafka.security,
    logLevel: 'nothing',
    retry: { retries, initialRetryTime: 100, maxRetryTime: 500 },
  });
}

const overTls = (mechanism: string, username: string, password: string) => ({
  KAFKA_BROKERS: saslSsl.brokers.join(','),
  KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
  KAFKA_SASL_MECHANISM: mechanism,
  KAFKA_SASL_USERNAME: username,
  KAFKA_SASL_PASSWORD: password,
  KAFKA_SSL_CA_FILE: pki.ca.certFile,
  KAFKA_SSL_SERVERNAME: SERVERNAME,
});

async function produceOne(kafka: Kafka, value: string): Promise<void> {
  const producer = createKafkajsProducer({ kafka, lingerMs: 0 });
  clients.push(producer);
  await producer.connect();
  await producer.send(TOPIC, [{ key: 'k', value }]);
}

it('SASL_SSL with SCRAM-SHA-512 (the MSK shape): produce, consume and the topic check', async () => {
  const kafka = kafkaFromEnv(overTls('SCRAM-SHA-512', 'sett-capture', USERS['sett-capture']));
  await expect(ensureTopics(kafka, [{ topic: TOPIC, numPartitions: 1 }])).resolves.toMatchObject({
    existing: [TOPIC],
  });
  const value = `scram ${Date.now()}`;
  await produceOne(kafka, value);

  const consumer = kafka.consumer({
    groupId: `sasl-${process.pid}-${Date.now()}`,
    sessionTimeout: 3000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 200,
  });
  clients.push(consumer);
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  const received = await new Promise<KafkaMessage>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value?.toString() === value) resolve(message);
      },
    });
  });
  expect(received.key?.toString()).toBe('k');
  expect(saslSsl.logins().ok).toContain('SCRAM-SHA-512 sett-capture');
  expect(saslSsl.logins().failed).toEqual([]);
});

it('SASL_SSL with PLAIN (the Confluent Cloud shape: API key and secret)', async () => {
  await produceOne(kafkaFromEnv(overTls('PLAIN', 'api-key-1', 'api-secret-1')), 'plain');
  expect(saslSsl.logins().ok).toContain('PLAIN api-key-1');
});

it('SASL_PLAINTEXT with SCRAM-SHA-256', async () => {
  const kafka = kafkaFromEnv({
    KAFKA_BROKERS: saslPlaintext.brokers.join(','),
    KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
    KAFKA_SASL_USERNAME: 'sett-capture',
    KAFKA_SASL_PASSWORD: USERS['sett-capture'],
  });
  await produceOne(kafka, 'scram-256');
  expect(saslPlaintext.logins().ok).toContain('SCRAM-SHA-256 sett-capture');
});

it.each(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'])(
  'a wrong password fails with a clear error (%s)',
  async (mechanism) => {
    const producer = kafkaFromEnv(overTls(mechanism, 'sett-capture', 'wrong'), 0).producer();
    clients.push(producer);
    const error = await producer.connect().then(
      () => new Error('connected with a wrong password'),
      (e: unknown) => e as Error,
    );
    expect(error.message).toMatch(/authentication failed|invalid credentials/i);
    expect(saslSsl.logins().failed).toContain(`${mechanism} sett-capture`);
  },
);

describe('node-rdkafka with the same settings', () => {
  /** Produces one message through createProducer forced onto node-rdkafka; kafkajs reads it back. */
  async function roundTrip(env: Record<string, string>, value: string): Promise<void> {
    const config = loadConfig(env, { kafkaClient: true });
    const producer = createProducer({
      brokers: config.kafkaBrokers,
      clientId: 'kafka-sasl-rdkafka-test',
      security: config.kafka.security,
      client: 'node-rdkafka',
      compression: 'lz4',
      lingerMs: 0,
      sendTimeoutMs: 10_000,
    });
    clients.push(producer);
    await producer.connect();
    expect(producer.client).toBe('node-rdkafka');
    await producer.send(TOPIC, [{ key: 'rdk', value }]);

    const kafka = kafkaFromEnv({
      ...env,
      KAFKA_SSL_SERVERNAME: env.KAFKA_SECURITY_PROTOCOL === 'SASL_SSL' ? SERVERNAME : '',
    });
    const consumer = kafka.consumer({
      groupId: `sasl-rdk-${process.pid}-${Date.now()}`,
      sessionTimeout: 3000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    clients.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.value?.toString() === value) resolve();
        },
      });
    });
  }

  // PLAIN over TLS with the CA file (the Confluent Cloud shape): the certificate is verified
  // against 127.0.0.1. SCRAM is left out here: librdkafka 2.0.2's client-final message repeats the
  // client nonce in front of the one this test proxy sends back, and the proxy refuses it, so a
  // SCRAM login through node-rdkafka is only known to work against real brokers.
  it('SASL_SSL with PLAIN and a CA file', async () => {
    const { KAFKA_SSL_SERVERNAME: _sni, ...env } = overTls('PLAIN', 'api-key-1', 'api-secret-1');
    const before = saslSsl.logins();
    await roundTrip(env, `rdkafka plain over tls ${Date.now()}`);
    expect(saslSsl.logins().ok.length).toBeGreaterThan(before.ok.length);
    expect(saslSsl.logins().failed).toEqual(before.failed);
  });

  it('SASL_PLAINTEXT with PLAIN', async () => {
    await roundTrip(
      {
        KAFKA_BROKERS: saslPlaintext.brokers.join(','),
        KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
        KAFKA_SASL_MECHANISM: 'PLAIN',
        KAFKA_SASL_USERNAME: 'api-key-1',
        KAFKA_SASL_PASSWORD: 'api-secret-1',
      },
      `rdkafka plain ${Date.now()}`,
    );
    expect(saslPlaintext.logins().ok).toContain('PLAIN api-key-1');
  });
});
