// The real capture and ingestion processes (their main.ts, as deployed) against a Kafka that
// demands SASL_SSL with SCRAM-SHA-512 and a client certificate, the settings passed only through
// the environment: an event sent to capture reaches Postgres through ingestion, so every producer,
// consumer and admin connection of both services went through TLS and SASL. And a TLS file that is
// not there stops capture at boot with one line naming the variable.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import {
  createTestCa,
  createTestDatabase,
  endPool,
  startKafkaProxy,
  uniqueName,
  waitFor,
  type KafkaProxy,
  type TestCa,
  type TestDatabase,
} from '../src';

jest.setTimeout(90_000);

const SERVERNAME = 'kafka.sett.test';
const USER = 'sett-services';
const PASSWORD = 'scram secret';
const services = path.resolve(__dirname, '../../../services');

let broker: DevBroker;
let db: TestDatabase;
let pool: pg.Pool;
let pki: TestCa;
let proxy: KafkaProxy;
let token: string;
let teamId: number;
const children: ChildProcess[] = [];

beforeAll(async () => {
  [broker, db] = await Promise.all([startDevBroker({ partitions: 2 }), createTestDatabase()]);
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const { rows: orgs } = await pool.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'Kafka TLS org', $1) RETURNING id`,
    [uniqueName('org')],
  );
  token = `phc_${uniqueName('tls')}`;
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES (gen_random_uuid(), $1, $2, 'Kafka TLS') RETURNING id`,
    [orgs[0]!.id, token],
  );
  teamId = rows[0]!.id;
  pki = createTestCa({ serverDnsNames: [SERVERNAME] });
  proxy = await startKafkaProxy({
    brokers: broker.brokers,
    tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert, requireClientCert: true },
    sasl: { mechanisms: ['SCRAM-SHA-512'], users: { [USER]: PASSWORD } },
  });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await proxy?.close();
  if (pool) await endPool(pool);
  await Promise.all([broker?.stop(), db?.drop()]);
  pki?.remove();
});

function secureEnv(): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    KAFKA_BROKERS: proxy.brokers.join(','),
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
    KAFKA_SASL_USERNAME: USER,
    KAFKA_SASL_PASSWORD: PASSWORD,
    KAFKA_SSL_CA_FILE: pki.ca.certFile,
    KAFKA_SSL_CERT_FILE: pki.client.certFile,
    KAFKA_SSL_KEY_FILE: pki.client.keyFile,
    KAFKA_SSL_SERVERNAME: SERVERNAME,
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'info',
  };
}

/** Starts services/<name>/src/main.ts and resolves with its port once it logs "<name> ready". */
function startService(name: 'capture' | 'ingestion', env: Record<string, string>): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(services, name, 'src/main.ts')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited ${code} before it was ready: ${stderr}`)));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes(`"${name} ready"`)) resolve((JSON.parse(line) as { port: number }).port);
    });
  });
}

async function stopAll(): Promise<void> {
  await Promise.all(
    children
      .filter((c) => c.exitCode === null)
      .map((c) => {
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        return exited;
      }),
  );
}

it('capture and ingestion carry an event through SASL_SSL with a client certificate', async () => {
  const [capturePort] = await Promise.all([
    startService('capture', { ...secureEnv(), CAPTURE_PORT: '0' }),
    startService('ingestion', {
      ...secureEnv(),
      INGESTION_PORT: '0',
      INGESTION_SESSION_TIMEOUT_MS: '3000',
      INGESTION_HEARTBEAT_INTERVAL_MS: '300',
      INGESTION_MAX_WAIT_MS: '200',
    }),
  ]);

  const distinctId = uniqueName('secure');
  const res = await fetch(`http://127.0.0.1:${capturePort}/e/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: token, event: 'over tls and scram', distinct_id: distinctId }),
  });
  // Capture answers 200 only after Kafka acknowledged the event.
  expect(res.status).toBe(200);

  // The signal: ingestion wrote the row (it consumes only through the proxy).
  const rows = await waitFor(
    'the event to reach Postgres',
    async () => {
      const { rows } = await pool.query<{ event: string }>(
        'SELECT event FROM events WHERE team_id = $1 AND distinct_id = $2',
        [teamId, distinctId],
      );
      return rows.length > 0 && rows;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  expect(rows).toEqual([{ event: 'over tls and scram' }]);

  const { ok, failed } = proxy.logins();
  expect(failed).toEqual([]);
  expect(ok.length).toBeGreaterThanOrEqual(2);
  expect(new Set(ok)).toEqual(new Set([`SCRAM-SHA-512 ${USER}`]));
  expect(new Set(proxy.servernames())).toEqual(new Set([SERVERNAME]));
  await stopAll();
});

it('capture refuses to start when a Kafka TLS file is missing, naming the variable', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(services, 'capture/src/main.ts')], {
    env: {
      ...process.env,
      ...secureEnv(),
      CAPTURE_PORT: '0',
      KAFKA_SSL_CA_FILE: '/nonexistent/kafka-ca.pem',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  expect(code).toBe(1);
  expect(stderr.trim()).toMatch(
    /^sett: invalid configuration: KAFKA_SSL_CA_FILE: cannot read "\/nonexistent\/kafka-ca\.pem": ENOENT/,
  );
});
