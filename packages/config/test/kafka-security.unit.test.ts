// KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_* and KAFKA_SSL_* as loadConfig reads them: what each
// setting becomes, and the boot errors (each naming its variable) for the mistakes operators make.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src';

let dir: string;
const file = (name: string) => path.join(dir, name);

beforeAll(() => {
  // Throwaway PEM files: a self-signed certificate with its key, an unrelated key, and the same key
  // encrypted with a passphrase.
  dir = mkdtempSync(path.join(os.tmpdir(), 'sett-kafka-config-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '1', '-subj', '/CN=test');
  openssl('genpkey', '-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'other-key.pem');
  openssl('pkey', '-in', 'key.pem', '-aes256', '-passout', 'pass:s3cret', '-out', 'encrypted-key.pem');
  writeFileSync(
    file('bundle.pem'),
    readFileSync(file('cert.pem'), 'utf8') + readFileSync(file('cert.pem'), 'utf8'),
  );
  writeFileSync(
    file('garbage.pem'),
    '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n',
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SASL = {
  KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
  KAFKA_SASL_USERNAME: 'sett',
  KAFKA_SASL_PASSWORD: 'pw',
};

/** The ConfigError loadConfig throws for env (fails the test when it throws none). */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, { kafkaClient: true });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('Kafka security settings', () => {
  it('defaults to plaintext with no SASL and no TLS', () => {
    expect(loadConfig({}).kafka.security).toEqual({ protocol: 'PLAINTEXT' });
  });

  it.each(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const)('reads SASL mechanism %s', (mechanism) => {
    const security = loadConfig({
      KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
      KAFKA_SASL_MECHANISM: mechanism.toLowerCase(),
      KAFKA_SASL_USERNAME: 'sett',
      KAFKA_SASL_PASSWORD: 'pw',
    }).kafka.security;
    expect(security).toEqual({
      protocol: 'SASL_PLAINTEXT',
      sasl: { mechanism, username: 'sett', password: 'pw' },
    });
  });

  it('reads SASL_SSL with TLS verification on and no files (the system CAs)', () => {
    expect(loadConfig({ KAFKA_SECURITY_PROTOCOL: 'sasl_ssl', ...SASL }).kafka.security).toEqual({
      protocol: 'SASL_SSL',
      sasl: { mechanism: 'SCRAM-SHA-512', username: 'sett', password: 'pw' },
      tls: { verify: true },
    });
  });

  it('reads every TLS file once, at boot, and the TLS switches', () => {
    const env = {
      KAFKA_SECURITY_PROTOCOL: 'SSL',
      KAFKA_SSL_CA_FILE: file('bundle.pem'),
      KAFKA_SSL_CERT_FILE: file('cert.pem'),
      KAFKA_SSL_KEY_FILE: file('encrypted-key.pem'),
      KAFKA_SSL_KEY_PASSWORD: 's3cret',
      KAFKA_SSL_SERVERNAME: 'b-1.example.kafka.eu-west-1.amazonaws.com',
      KAFKA_SSL_VERIFY: 'false',
    };
    const security = loadConfig(env, { kafkaClient: true }).kafka.security;
    expect(security).toEqual({
      protocol: 'SSL',
      tls: {
        caFile: file('bundle.pem'),
        certFile: file('cert.pem'),
        keyFile: file('encrypted-key.pem'),
        ca: readFileSync(file('bundle.pem'), 'utf8'),
        cert: readFileSync(file('cert.pem'), 'utf8'),
        key: readFileSync(file('encrypted-key.pem'), 'utf8'),
        keyPassword: 's3cret',
        servername: 'b-1.example.kafka.eu-west-1.amazonaws.com',
        verify: false,
      },
    });

    // The contents are held, not the paths: a file removed after boot changes nothing.
    const copy = file('ca-copy.pem');
    writeFileSync(copy, readFileSync(file('cert.pem')));
    const held = loadConfig(
      { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: copy },
      { kafkaClient: true },
    ).kafka.security;
    rmSync(copy);
    expect(held.tls?.ca).toContain('BEGIN CERTIFICATE');
  });

  it.each<[string, Record<string, string>, RegExp]>([
    [
      'KAFKA_SECURITY_PROTOCOL',
      { KAFKA_SECURITY_PROTOCOL: 'TLS' },
      /one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL/,
    ],
    [
      'KAFKA_SASL_MECHANISM',
      { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', ...SASL, KAFKA_SASL_MECHANISM: 'GSSAPI' },
      /got "GSSAPI"/,
    ],
    [
      'KAFKA_SASL_MECHANISM',
      { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', ...SASL, KAFKA_SASL_MECHANISM: 'AWS_MSK_IAM' },
      /PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/,
    ],
    [
      'KAFKA_SASL_MECHANISM',
      { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', ...SASL, KAFKA_SASL_MECHANISM: '' },
      /required when KAFKA_SECURITY_PROTOCOL is SASL_SSL/,
    ],
    [
      'KAFKA_SASL_USERNAME',
      { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', ...SASL, KAFKA_SASL_USERNAME: ' ' },
      /required/,
    ],
    [
      'KAFKA_SASL_PASSWORD',
      { KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', ...SASL, KAFKA_SASL_PASSWORD: '' },
      /required/,
    ],
    // Credentials without a SASL protocol: almost always a forgotten KAFKA_SECURITY_PROTOCOL.
    ['KAFKA_SASL_MECHANISM', { ...SASL }, /KAFKA_SECURITY_PROTOCOL is PLAINTEXT/],
    ['KAFKA_SASL_USERNAME', { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SASL_USERNAME: 'sett' }, /is SSL/],
    [
      'KAFKA_SSL_CA_FILE',
      { KAFKA_SSL_CA_FILE: '/etc/ssl/certs/ca-certificates.crt' },
      /TLS needs SSL or SASL_SSL/,
    ],
    [
      'KAFKA_SSL_VERIFY',
      { KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', ...SASL, KAFKA_SSL_VERIFY: 'true' },
      /is SASL_PLAINTEXT/,
    ],
    ['KAFKA_SSL_VERIFY', { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_VERIFY: 'no' }, /true or false/],
    [
      'KAFKA_SSL_SERVERNAME',
      { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_SERVERNAME: 'https://kafka:9093' },
      /not a DNS name/,
    ],
  ])('refuses a bad %s (case %#)', (variable, env, message) => {
    const error = configError(env);
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(new RegExp(`^${variable}: `));
    expect(error.message).toMatch(message);
  });

  it('names the TLS file that is missing, unreadable or not what it should be', () => {
    const ssl = { KAFKA_SECURITY_PROTOCOL: 'SSL' };
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{ KAFKA_SSL_CA_FILE: file('nope.pem') }, 'KAFKA_SSL_CA_FILE', /cannot read ".*nope\.pem": ENOENT/],
      [{ KAFKA_SSL_CA_FILE: dir }, 'KAFKA_SSL_CA_FILE', /cannot read .*EISDIR/],
      [{ KAFKA_SSL_CA_FILE: file('key.pem') }, 'KAFKA_SSL_CA_FILE', /holds no PEM certificate/],
      [{ KAFKA_SSL_CA_FILE: file('garbage.pem') }, 'KAFKA_SSL_CA_FILE', /certificate 1 .* does not parse/],
      [
        { KAFKA_SSL_CERT_FILE: file('cert.pem') },
        'KAFKA_SSL_KEY_FILE',
        /required when KAFKA_SSL_CERT_FILE is set/,
      ],
      [
        { KAFKA_SSL_KEY_FILE: file('key.pem') },
        'KAFKA_SSL_CERT_FILE',
        /required when KAFKA_SSL_KEY_FILE is set/,
      ],
      [{ KAFKA_SSL_KEY_PASSWORD: 'x' }, 'KAFKA_SSL_KEY_PASSWORD', /KAFKA_SSL_KEY_FILE is not/],
      [
        { KAFKA_SSL_CERT_FILE: file('cert.pem'), KAFKA_SSL_KEY_FILE: file('other-key.pem') },
        'KAFKA_SSL_KEY_FILE',
        /is not the key of the certificate/,
      ],
      [
        { KAFKA_SSL_CERT_FILE: file('cert.pem'), KAFKA_SSL_KEY_FILE: file('cert.pem') },
        'KAFKA_SSL_KEY_FILE',
        /not a usable private key/,
      ],
      [
        { KAFKA_SSL_CERT_FILE: file('cert.pem'), KAFKA_SSL_KEY_FILE: file('encrypted-key.pem') },
        'KAFKA_SSL_KEY_FILE',
        /an encrypted key needs KAFKA_SSL_KEY_PASSWORD/,
      ],
      [
        {
          KAFKA_SSL_CERT_FILE: file('cert.pem'),
          KAFKA_SSL_KEY_FILE: file('encrypted-key.pem'),
          KAFKA_SSL_KEY_PASSWORD: 'wrong',
        },
        'KAFKA_SSL_KEY_FILE',
        /not a usable private key/,
      ],
      [
        { KAFKA_SSL_CERT_FILE: file('nope.pem'), KAFKA_SSL_KEY_FILE: file('key.pem') },
        'KAFKA_SSL_CERT_FILE',
        /ENOENT/,
      ],
    ];
    for (const [env, variable, message] of cases) {
      const error = configError({ ...ssl, ...env });
      expect({ variable: error.variable, message: error.message }).toEqual({
        variable,
        message: expect.stringMatching(message),
      });
    }
  });

  it('reads the files only for services that connect to Kafka, but checks every setting everywhere', () => {
    // Decide and management share the ConfigMap but not the mounted TLS files.
    const env = {
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      ...SASL,
      KAFKA_SSL_CA_FILE: file('not-mounted-here.pem'),
      KAFKA_SSL_CERT_FILE: file('not-mounted-here.crt'),
      KAFKA_SSL_KEY_FILE: file('not-mounted-here.key'),
    };
    expect(loadConfig(env).kafka.security.tls).toEqual({
      caFile: file('not-mounted-here.pem'),
      certFile: file('not-mounted-here.crt'),
      keyFile: file('not-mounted-here.key'),
      verify: true,
    });
    expect(() => loadConfig(env, { kafkaClient: true })).toThrow(/^KAFKA_SSL_CA_FILE: cannot read/);
    expect(() => loadConfig({ ...env, KAFKA_SASL_MECHANISM: 'GSSAPI' })).toThrow(/^KAFKA_SASL_MECHANISM/);
    expect(() => loadConfig({ ...env, KAFKA_SSL_KEY_FILE: '' })).toThrow(/^KAFKA_SSL_KEY_FILE: required/);
  });

  it('never puts the SASL password in an error', () => {
    const error = configError({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      ...SASL,
      KAFKA_SASL_PASSWORD: 'hunter2',
      KAFKA_SASL_USERNAME: '',
    });
    expect(error.message).not.toContain('hunter2');
  });

  it('stops the process at boot with one line naming the variable', () => {
    const script = `require(${JSON.stringify(path.join(__dirname, '../src'))}).loadConfigOrExit(); console.log('started');`;
    const res = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
      env: {
        ...process.env,
        KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        KAFKA_SASL_MECHANISM: 'PLAIN',
        KAFKA_SASL_USERNAME: '',
      },
      encoding: 'utf8',
    });
    expect(res.status).toBe(1);
    expect(res.stdout).not.toContain('started');
    expect(res.stderr.trim()).toBe(
      'sett: invalid configuration: KAFKA_SASL_USERNAME: required when KAFKA_SECURITY_PROTOCOL is SASL_SSL',
    );
  });
});
