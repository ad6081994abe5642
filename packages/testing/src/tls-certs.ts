// Throwaway certificate authorities for TLS tests, made with the `openssl` command line at test
// time (nothing secret is committed). A CA signs a server certificate for the names asked for and a
// client certificate; everything is written as PEM files into a fresh temporary directory.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type PemPair = { certFile: string; keyFile: string; cert: string; key: string };

export type TestCa = {
  dir: string;
  ca: PemPair;
  server: PemPair;
  client: PemPair;
  /** Removes the directory and every file in it. */
  remove(): void;
};

export type TestCaOptions = {
  /** DNS names in the server certificate (default: none). */
  serverDnsNames?: string[];
  /** IP addresses in the server certificate (default: none). */
  serverIps?: string[];
  /** Common name of the CA, to tell two CAs apart in error messages (default "Sett test CA"). */
  caName?: string;
};

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const KEY_ARGS = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Signs `<name>.csr` with the CA into `<name>.pem`, with the given X.509v3 extensions. */
function sign(dir: string, name: string, extensions: string): void {
  writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca-key.pem',
      '-CAcreateserial',
      '-days',
      '2',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    ],
    dir,
  );
}

function pair(dir: string, name: string): PemPair {
  const certFile = path.join(dir, `${name}.pem`);
  const keyFile = path.join(dir, `${name}-key.pem`);
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

export function createTestCa(options: TestCaOptions = {}): TestCa {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sett-tls-'));
  const caName = options.caName ?? 'Sett test CA';
  openssl(
    [
      'req',
      '-x509',
      ...KEY_ARGS,
      '-keyout',
      'ca-key.pem',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      `/CN=${caName}`,
    ],
    dir,
  );

  const san = [
    ...(options.serverDnsNames ?? []).map((n) => `DNS:${n}`),
    ...(options.serverIps ?? []).map((ip) => `IP:${ip}`),
  ];
  openssl(
    [
      'req',
      '-new',
      ...KEY_ARGS,
      '-keyout',
      'server-key.pem',
      '-out',
      'server.csr',
      '-subj',
      '/CN=sett-test-broker',
    ],
    dir,
  );
  sign(
    dir,
    'server',
    ['basicConstraints=CA:FALSE', 'keyUsage=digitalSignature', 'extendedKeyUsage=serverAuth']
      .concat(san.length > 0 ? [`subjectAltName=${san.join(',')}`] : [])
      .join('\n'),
  );

  openssl(
    [
      'req',
      '-new',
      ...KEY_ARGS,
      '-keyout',
      'client-key.pem',
      '-out',
      'client.csr',
      '-subj',
      '/CN=sett-test-client',
    ],
    dir,
  );
  sign(dir, 'client', 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth');

  return {
    dir,
    ca: pair(dir, 'ca'),
    server: pair(dir, 'server'),
    client: pair(dir, 'client'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
