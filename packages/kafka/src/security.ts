// Turns Sett's Kafka security settings (validated and read from files by @sett/config) into the
// `ssl` and `sasl` options of a kafkajs client. createKafka is the only caller, so every producer,
// consumer and admin client connects the same way.
import type { ConnectionOptions } from 'node:tls';
import type { KafkaSecurityConfig } from '@sett/config';
import type { SASLOptions } from 'kafkajs';

/** The settings as @sett/config validated them (files already read). */
export type KafkaSecurity = KafkaSecurityConfig;

export type KafkajsSecurityOptions = { ssl?: ConnectionOptions; sasl?: SASLOptions };

const MECHANISMS = {
  PLAIN: 'plain',
  'SCRAM-SHA-256': 'scram-sha-256',
  'SCRAM-SHA-512': 'scram-sha-512',
} as const;

export function kafkajsSecurityOptions(security: KafkaSecurity | undefined): KafkajsSecurityOptions {
  if (security === undefined || security.protocol === 'PLAINTEXT') return {};
  const usesTls = security.protocol === 'SSL' || security.protocol === 'SASL_SSL';
  const usesSasl = security.protocol === 'SASL_PLAINTEXT' || security.protocol === 'SASL_SSL';
  const result: KafkajsSecurityOptions = {};

  if (usesTls) {
    const t = security.tls ?? { verify: true };
    // Paths without contents: the config was loaded without `kafkaClient`, so the files were
    // never read. Connecting anyway would silently trust the wrong CAs or skip the certificate.
    if (
      (t.caFile !== undefined && t.ca === undefined) ||
      (t.certFile !== undefined && t.cert === undefined)
    ) {
      throw new Error('Kafka TLS files were not read: load the config with { kafkaClient: true }');
    }
    // Only keys that are set: kafkajs merges this object over its own { host, port, servername },
    // so an explicit `servername: undefined` would switch SNI off.
    const ssl: ConnectionOptions = { rejectUnauthorized: t.verify };
    if (t.ca !== undefined) ssl.ca = t.ca;
    if (t.cert !== undefined) ssl.cert = t.cert;
    if (t.key !== undefined) ssl.key = t.key;
    if (t.keyPassword !== undefined) ssl.passphrase = t.keyPassword;
    if (t.servername !== undefined) ssl.servername = t.servername;
    result.ssl = ssl;
  }

  if (usesSasl) {
    const s = security.sasl;
    if (s === undefined)
      throw new Error(`Kafka security protocol ${security.protocol} needs SASL credentials`);
    result.sasl = { mechanism: MECHANISMS[s.mechanism], username: s.username, password: s.password };
  }
  return result;
}

/** Thrown when a setting has no librdkafka equivalent; `auto` then produces with kafkajs. */
export class UnsupportedByClientError extends Error {
  override readonly name = 'UnsupportedByClientError';
}

const RDKAFKA_PROTOCOLS = {
  PLAINTEXT: 'plaintext',
  SSL: 'ssl',
  SASL_PLAINTEXT: 'sasl_plaintext',
  SASL_SSL: 'sasl_ssl',
} as const;

/**
 * The same settings as librdkafka configuration. librdkafka reads the PEM files itself (all
 * certificates of a CA bundle); without a CA file it uses the system's CA store (Debian's
 * ca-certificates, `probe` finds it). It has no way to send another SNI name than the broker's
 * host, so KAFKA_SSL_SERVERNAME is refused here (UnsupportedByClientError).
 */
export function rdkafkaSecurityConfig(security: KafkaSecurity | undefined): Record<string, string | boolean> {
  if (security === undefined || security.protocol === 'PLAINTEXT') return {};
  const config: Record<string, string | boolean> = {
    'security.protocol': RDKAFKA_PROTOCOLS[security.protocol],
  };
  if (security.protocol === 'SSL' || security.protocol === 'SASL_SSL') {
    const t = security.tls ?? { verify: true };
    if (t.servername !== undefined)
      throw new UnsupportedByClientError('KAFKA_SSL_SERVERNAME has no librdkafka equivalent');
    config['ssl.ca.location'] = t.caFile ?? 'probe';
    if (t.certFile !== undefined) config['ssl.certificate.location'] = t.certFile;
    if (t.keyFile !== undefined) config['ssl.key.location'] = t.keyFile;
    if (t.keyPassword !== undefined) config['ssl.key.password'] = t.keyPassword;
    config['enable.ssl.certificate.verification'] = t.verify;
    config['ssl.endpoint.identification.algorithm'] = t.verify ? 'https' : 'none';
  }
  if (security.protocol === 'SASL_PLAINTEXT' || security.protocol === 'SASL_SSL') {
    const s = security.sasl;
    if (s === undefined)
      throw new Error(`Kafka security protocol ${security.protocol} needs SASL credentials`);
    config['sasl.mechanisms'] = s.mechanism;
    config['sasl.username'] = s.username;
    config['sasl.password'] = s.password;
  }
  return config;
}
