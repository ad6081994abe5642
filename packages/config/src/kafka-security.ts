// How Sett's Kafka clients authenticate and encrypt: KAFKA_SECURITY_PROTOCOL with the names Kafka's
// own clients use, SASL credentials, and TLS files. Everything is checked here, at boot. Services
// that connect to Kafka (capture, ingestion: `kafkaClient` in LoadConfigOptions) also read the
// certificate and key files once and parse them, so a missing, unreadable or mismatched file stops
// the process with the variable's name instead of failing on the first broker connection. The
// others (decide, management, the CLI) check the settings but not the files, which are mounted
// only where Kafka is used.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, noteSetting } from './config';

export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export type KafkaSecurityProtocol = (typeof KAFKA_SECURITY_PROTOCOLS)[number];

export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

export type KafkaSaslConfig = { mechanism: KafkaSaslMechanism; username: string; password: string };

export type KafkaTlsConfig = {
  /** Where the files are (KAFKA_SSL_CA_FILE, KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE). */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** PEM bundle of trusted CAs (read only for Kafka clients); unset means Node's public CAs. */
  ca?: string;
  /** Client certificate chain (PEM) and its key, for brokers that require mutual TLS. */
  cert?: string;
  key?: string;
  /** Passphrase of an encrypted key. */
  keyPassword?: string;
  /** Name sent as SNI and checked against the broker certificate instead of the broker's host. */
  servername?: string;
  /** Verify the broker's certificate chain and name (default true). */
  verify: boolean;
};

export type KafkaSecurityConfig = {
  protocol: KafkaSecurityProtocol;
  /** Set exactly when protocol is SASL_PLAINTEXT or SASL_SSL. */
  sasl?: KafkaSaslConfig;
  /** Set exactly when protocol is SSL or SASL_SSL. */
  tls?: KafkaTlsConfig;
};

type Env = Record<string, string | undefined>;

const SASL_VARIABLES = ['KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const;
const TLS_VARIABLES = [
  'KAFKA_SSL_CA_FILE',
  'KAFKA_SSL_CERT_FILE',
  'KAFKA_SSL_KEY_FILE',
  'KAFKA_SSL_KEY_PASSWORD',
  'KAFKA_SSL_SERVERNAME',
  'KAFKA_SSL_VERIFY',
] as const;

function read(env: Env, name: string): string | undefined {
  noteSetting(name);
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function required(env: Env, name: string, why: string): string {
  const v = read(env, name);
  if (v === undefined) throw new ConfigError(name, `required when ${why}`);
  return v;
}

function readPemFile(name: string, file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(name, `cannot read "${file}": ${(error as Error).message}`);
  }
  return text;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Every certificate in the file must parse; a bundle with none is a mistake (a key, a DER file). */
function certificates(name: string, file: string, text: string): X509Certificate[] {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new ConfigError(name, `"${file}" holds no PEM certificate`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new ConfigError(
        name,
        `certificate ${i + 1} in "${file}" does not parse: ${(error as Error).message}`,
      );
    }
  });
}

function privateKey(name: string, file: string, text: string, passphrase: string | undefined): KeyObject {
  try {
    return createPrivateKey({
      key: text,
      format: 'pem',
      ...(passphrase === undefined ? {} : { passphrase }),
    });
  } catch (error) {
    const hint = passphrase === undefined ? ' (an encrypted key needs KAFKA_SSL_KEY_PASSWORD)' : '';
    throw new ConfigError(name, `"${file}" is not a usable private key: ${(error as Error).message}${hint}`);
  }
}

function sasl(env: Env, protocol: KafkaSecurityProtocol): KafkaSaslConfig {
  const why = `KAFKA_SECURITY_PROTOCOL is ${protocol}`;
  noteSetting('KAFKA_SASL_MECHANISM', { allowed: KAFKA_SASL_MECHANISMS.join(', ') });
  const rawMechanism = required(env, 'KAFKA_SASL_MECHANISM', why);
  const mechanism = rawMechanism.toUpperCase();
  if (!(KAFKA_SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw new ConfigError(
      'KAFKA_SASL_MECHANISM',
      `must be one of ${KAFKA_SASL_MECHANISMS.join(', ')}, got "${rawMechanism}"`,
    );
  }
  return {
    mechanism: mechanism as KafkaSaslMechanism,
    username: required(env, 'KAFKA_SASL_USERNAME', why),
    password: required(env, 'KAFKA_SASL_PASSWORD', why),
  };
}

function tls(env: Env, readFiles: boolean): KafkaTlsConfig {
  const result: KafkaTlsConfig = { verify: true };

  noteSetting('KAFKA_SSL_VERIFY', { default: 'true', allowed: 'true, false' });
  const verify = read(env, 'KAFKA_SSL_VERIFY');
  if (verify !== undefined) {
    if (verify !== 'true' && verify !== 'false') {
      throw new ConfigError('KAFKA_SSL_VERIFY', `must be true or false, got "${verify}"`);
    }
    result.verify = verify === 'true';
  }

  const caFile = read(env, 'KAFKA_SSL_CA_FILE');
  if (caFile !== undefined) {
    result.caFile = caFile;
    if (readFiles) {
      result.ca = readPemFile('KAFKA_SSL_CA_FILE', caFile);
      certificates('KAFKA_SSL_CA_FILE', caFile, result.ca);
    }
  }

  const certFile = read(env, 'KAFKA_SSL_CERT_FILE');
  const keyFile = read(env, 'KAFKA_SSL_KEY_FILE');
  const keyPassword = read(env, 'KAFKA_SSL_KEY_PASSWORD');
  if (certFile !== undefined && keyFile === undefined) {
    throw new ConfigError('KAFKA_SSL_KEY_FILE', 'required when KAFKA_SSL_CERT_FILE is set');
  }
  if (keyFile !== undefined && certFile === undefined) {
    throw new ConfigError('KAFKA_SSL_CERT_FILE', 'required when KAFKA_SSL_KEY_FILE is set');
  }
  if (keyPassword !== undefined && keyFile === undefined) {
    throw new ConfigError('KAFKA_SSL_KEY_PASSWORD', 'set, but KAFKA_SSL_KEY_FILE is not');
  }
  if (keyPassword !== undefined) result.keyPassword = keyPassword;
  if (certFile !== undefined && keyFile !== undefined) {
    result.certFile = certFile;
    result.keyFile = keyFile;
  }
  if (certFile !== undefined && keyFile !== undefined && readFiles) {
    result.cert = readPemFile('KAFKA_SSL_CERT_FILE', certFile);
    result.key = readPemFile('KAFKA_SSL_KEY_FILE', keyFile);
    const [leaf] = certificates('KAFKA_SSL_CERT_FILE', certFile, result.cert);
    const key = privateKey('KAFKA_SSL_KEY_FILE', keyFile, result.key, keyPassword);
    if (!leaf!.checkPrivateKey(key)) {
      throw new ConfigError(
        'KAFKA_SSL_KEY_FILE',
        `"${keyFile}" is not the key of the certificate in "${certFile}"`,
      );
    }
  }

  const servername = read(env, 'KAFKA_SSL_SERVERNAME');
  if (servername !== undefined) {
    if (
      !/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/.test(
        servername,
      )
    ) {
      throw new ConfigError('KAFKA_SSL_SERVERNAME', `"${servername}" is not a DNS name`);
    }
    result.servername = servername;
  }
  return result;
}

/** `readFiles`: read and check the TLS files (services that connect to Kafka). */
export function kafkaSecurity(env: Env, readFiles: boolean): KafkaSecurityConfig {
  noteSetting('KAFKA_SECURITY_PROTOCOL', {
    default: 'PLAINTEXT',
    allowed: KAFKA_SECURITY_PROTOCOLS.join(', '),
  });
  const raw = read(env, 'KAFKA_SECURITY_PROTOCOL');
  const protocol = (raw ?? 'PLAINTEXT').toUpperCase();
  if (!(KAFKA_SECURITY_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new ConfigError(
      'KAFKA_SECURITY_PROTOCOL',
      `must be one of ${KAFKA_SECURITY_PROTOCOLS.join(', ')}, got "${raw}"`,
    );
  }
  const p = protocol as KafkaSecurityProtocol;
  const usesSasl = p === 'SASL_PLAINTEXT' || p === 'SASL_SSL';
  const usesTls = p === 'SSL' || p === 'SASL_SSL';

  // Settings the protocol would ignore are refused: credentials set without SASL usually mean a
  // forgotten KAFKA_SECURITY_PROTOCOL, which would otherwise surface as an opaque broker error.
  if (!usesSasl) {
    const stray = SASL_VARIABLES.find((name) => read(env, name) !== undefined);
    if (stray) {
      throw new ConfigError(
        stray,
        `set, but KAFKA_SECURITY_PROTOCOL is ${p} (SASL needs SASL_PLAINTEXT or SASL_SSL)`,
      );
    }
  }
  if (!usesTls) {
    const stray = TLS_VARIABLES.find((name) => read(env, name) !== undefined);
    if (stray) {
      throw new ConfigError(stray, `set, but KAFKA_SECURITY_PROTOCOL is ${p} (TLS needs SSL or SASL_SSL)`);
    }
  }

  return {
    protocol: p,
    ...(usesSasl ? { sasl: sasl(env, p) } : {}),
    ...(usesTls ? { tls: tls(env, readFiles) } : {}),
  };
}
