// The kafkajs `ssl` and `sasl` options createKafka builds from Sett's security settings, checked
// from the environment variables through loadConfig to what kafkajs receives.
import type { KafkaConfig } from 'kafkajs';
import { loadConfig } from '@sett/config';
import {
  createKafka,
  kafkajsSecurityOptions,
  rdkafkaSecurityConfig,
  resolveKafkaClient,
  UnsupportedByClientError,
  type KafkaSecurity,
} from '../src';

// Records what createKafka passes to the kafkajs constructor (the real class still does the work).
const mockKafkaConfigs: KafkaConfig[] = [];
jest.mock('kafkajs', () => {
  const actual = jest.requireActual<typeof import('kafkajs')>('kafkajs');
  class RecordingKafka extends actual.Kafka {
    constructor(config: KafkaConfig) {
      super(config);
      mockKafkaConfigs.push(config);
    }
  }
  return { ...actual, Kafka: RecordingKafka };
});

const fromEnv = (env: Record<string, string>) =>
  kafkajsSecurityOptions(loadConfig(env, { kafkaClient: true }).kafka.security);
const SASL = { KAFKA_SASL_USERNAME: 'api-key', KAFKA_SASL_PASSWORD: 'api-secret' };

it('passes neither ssl nor sasl for plaintext or no settings', () => {
  expect(kafkajsSecurityOptions(undefined)).toEqual({});
  expect(fromEnv({})).toEqual({});
  expect(fromEnv({ KAFKA_SECURITY_PROTOCOL: 'PLAINTEXT' })).toEqual({});
});

it.each([
  ['PLAIN', 'plain'],
  ['SCRAM-SHA-256', 'scram-sha-256'],
  ['SCRAM-SHA-512', 'scram-sha-512'],
] as const)('maps SASL_PLAINTEXT with %s to kafkajs mechanism %s and no TLS', (mechanism, kafkajsName) => {
  expect(
    fromEnv({ KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', KAFKA_SASL_MECHANISM: mechanism, ...SASL }),
  ).toEqual({
    sasl: { mechanism: kafkajsName, username: 'api-key', password: 'api-secret' },
  });
});

it.each([
  ['PLAIN', 'plain'],
  ['SCRAM-SHA-256', 'scram-sha-256'],
  ['SCRAM-SHA-512', 'scram-sha-512'],
] as const)('maps SASL_SSL with %s to TLS with verification plus SASL %s', (mechanism, kafkajsName) => {
  expect(fromEnv({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: mechanism, ...SASL })).toEqual({
    ssl: { rejectUnauthorized: true },
    sasl: { mechanism: kafkajsName, username: 'api-key', password: 'api-secret' },
  });
});

it('maps SSL to verified TLS with only the options that are set', () => {
  const options = fromEnv({ KAFKA_SECURITY_PROTOCOL: 'SSL' });
  expect(options).toEqual({ ssl: { rejectUnauthorized: true } });
  // kafkajs merges ssl over its own { host, port, servername }: an undefined key would erase SNI.
  expect(Object.keys(options.ssl!)).toEqual(['rejectUnauthorized']);
});

it('maps every TLS setting onto the node:tls option of the same meaning', () => {
  const security: KafkaSecurity = {
    protocol: 'SSL',
    tls: {
      ca: 'CA PEM',
      cert: 'CERT PEM',
      key: 'KEY PEM',
      keyPassword: 'pass',
      servername: 'kafka.internal',
      verify: false,
    },
  };
  expect(kafkajsSecurityOptions(security)).toEqual({
    ssl: {
      ca: 'CA PEM',
      cert: 'CERT PEM',
      key: 'KEY PEM',
      passphrase: 'pass',
      servername: 'kafka.internal',
      rejectUnauthorized: false,
    },
  });
  expect(kafkajsSecurityOptions({ protocol: 'SSL', tls: { verify: true, servername: 'x.y' } })).toEqual({
    ssl: { rejectUnauthorized: true, servername: 'x.y' },
  });
});

it('refuses TLS file paths whose contents were never read (config loaded without kafkaClient)', () => {
  const security = loadConfig({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: '/etc/kafka/ca.pem' })
    .kafka.security;
  expect(() => kafkajsSecurityOptions(security)).toThrow(/kafkaClient: true/);
});

it('refuses a SASL protocol without credentials (a caller bypassing loadConfig)', () => {
  expect(() => kafkajsSecurityOptions({ protocol: 'SASL_SSL', tls: { verify: true } })).toThrow(
    /SASL_SSL needs SASL credentials/,
  );
});

it('createKafka hands the options to kafkajs', () => {
  const security = loadConfig({
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
    KAFKA_SSL_SERVERNAME: 'kafka.internal',
    ...SASL,
  }).kafka.security;
  createKafka({ brokers: ['b:9096'], clientId: 't', security });
  expect(mockKafkaConfigs.at(-1)).toMatchObject({
    brokers: ['b:9096'],
    ssl: { rejectUnauthorized: true, servername: 'kafka.internal' },
    sasl: { mechanism: 'scram-sha-512', username: 'api-key', password: 'api-secret' },
  });
  createKafka({ brokers: ['b:9092'], clientId: 't' });
  expect(mockKafkaConfigs.at(-1)).not.toHaveProperty('ssl');
  expect(mockKafkaConfigs.at(-1)).not.toHaveProperty('sasl');
});

it('createKafka warns when TLS verification is off, and only then', () => {
  const warnings: string[] = [];
  const logger = { info: () => {}, debug: () => {}, error: () => {}, warn: (m: string) => warnings.push(m) };
  const tls = (verify: boolean) => ({ protocol: 'SSL' as const, tls: { verify } });
  createKafka({ brokers: ['b:9093'], clientId: 't', logger, security: tls(true) });
  expect(warnings).toEqual([]);
  createKafka({ brokers: ['b:9093'], clientId: 't', logger, security: tls(false) });
  expect(warnings).toEqual([expect.stringContaining('KAFKA_SSL_VERIFY=false')]);
});

describe('rdkafkaSecurityConfig', () => {
  it('maps SASL_SSL with a CA file and a client certificate onto librdkafka settings', () => {
    expect(
      rdkafkaSecurityConfig({
        protocol: 'SASL_SSL',
        sasl: { mechanism: 'SCRAM-SHA-512', username: 'sett', password: 'secret' },
        tls: { verify: true, caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem', keyPassword: 'p' },
      }),
    ).toEqual({
      'security.protocol': 'sasl_ssl',
      'sasl.mechanisms': 'SCRAM-SHA-512',
      'sasl.username': 'sett',
      'sasl.password': 'secret',
      'ssl.ca.location': '/ca.pem',
      'ssl.certificate.location': '/c.pem',
      'ssl.key.location': '/k.pem',
      'ssl.key.password': 'p',
      'enable.ssl.certificate.verification': true,
      'ssl.endpoint.identification.algorithm': 'https',
    });
  });

  it('uses the system CA store without a CA file, turns verification off on request, and is empty for plaintext', () => {
    expect(rdkafkaSecurityConfig({ protocol: 'SSL', tls: { verify: false } })).toEqual({
      'security.protocol': 'ssl',
      'ssl.ca.location': 'probe',
      'enable.ssl.certificate.verification': false,
      'ssl.endpoint.identification.algorithm': 'none',
    });
    expect(rdkafkaSecurityConfig({ protocol: 'PLAINTEXT' })).toEqual({});
    expect(rdkafkaSecurityConfig(undefined)).toEqual({});
  });

  it('refuses KAFKA_SSL_SERVERNAME, which librdkafka cannot send: auto then produces with kafkajs', () => {
    const security = { protocol: 'SSL' as const, tls: { verify: true, servername: 'kafka.example.com' } };
    expect(() => rdkafkaSecurityConfig(security)).toThrow(UnsupportedByClientError);
    expect(resolveKafkaClient('auto', security)).toEqual({
      client: 'kafkajs',
      fallbackReason: expect.stringMatching(/KAFKA_SSL_SERVERNAME/),
    });
    expect(() => resolveKafkaClient('node-rdkafka', security)).toThrow(/KAFKA_CLIENT is node-rdkafka/);
    expect(resolveKafkaClient('auto', { protocol: 'PLAINTEXT' })).toEqual({ client: 'node-rdkafka' });
    expect(resolveKafkaClient('kafkajs')).toEqual({ client: 'kafkajs' });
  });
});
