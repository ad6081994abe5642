import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ConfigError, databaseTimeouts, loadConfig } from '../src';

describe('loadConfig', () => {
  it('uses the documented defaults', () => {
    const c = loadConfig({});
    expect(c.ports).toEqual({ edge: 8000, management: 8001, capture: 8002, decide: 8003, ingestion: 8004 });
    expect(c.capture.maxBodyBytes).toBe(20 * 1024 * 1024);
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.log.level).toBe('info');
    expect(c.kafkaBrokers).toEqual([]);
    expect(c.ingestion.topics).toEqual(['main', 'overflow', 'historical']);
    expect(c.decide.maxBodyBytes).toBe(1024 * 1024);
    expect(c.decide.geoipEnabled).toBe(true);
    expect(c.decide.workers).toBe(1);
  });

  it('reads the Kafka client, its compression and the ingestion stall timeout', () => {
    const d = loadConfig({});
    expect(d.kafka).toMatchObject({ client: 'auto', compression: 'lz4' });
    expect(d.ingestion.stallTimeoutMs).toBe(120_000);
    const c = loadConfig({
      KAFKA_CLIENT: 'kafkajs',
      KAFKA_PRODUCER_COMPRESSION: 'zstd',
      INGESTION_STALL_TIMEOUT_MS: '0',
    });
    expect(c.kafka).toMatchObject({ client: 'kafkajs', compression: 'zstd' });
    expect(c.ingestion.stallTimeoutMs).toBe(0);
    expect(() => loadConfig({ KAFKA_CLIENT: 'librdkafka' })).toThrow(/KAFKA_CLIENT/);
    expect(() => loadConfig({ KAFKA_PRODUCER_COMPRESSION: 'snappy' })).toThrow(/KAFKA_PRODUCER_COMPRESSION/);
  });

  it('reads DECIDE_WORKERS as a count or auto', () => {
    expect(loadConfig({ DECIDE_WORKERS: '3' }).decide.workers).toBe(3);
    expect(loadConfig({ DECIDE_WORKERS: 'auto' }).decide.workers).toBe('auto');
    expect(loadConfig({ DECIDE_WORKERS: 'AUTO' }).decide.workers).toBe('auto');
    expect(() => loadConfig({ DECIDE_WORKERS: '0' })).toThrow(/DECIDE_WORKERS/);
    expect(() => loadConfig({ DECIDE_WORKERS: 'many' })).toThrow(/DECIDE_WORKERS/);
  });

  it('reads the decide body limit and GeoIP switch', () => {
    const c = loadConfig({ DECIDE_MAX_BODY_BYTES: '4096', DECIDE_GEOIP_ENABLED: 'false' });
    expect(c.decide.maxBodyBytes).toBe(4096);
    expect(c.decide.geoipEnabled).toBe(false);
    expect(c.decide.geoipDatabasePath).toBeUndefined();
    expect(loadConfig({ DECIDE_GEOIP_DATABASE_PATH: ' /data/City.mmdb ' }).decide.geoipDatabasePath).toBe(
      '/data/City.mmdb',
    );
    expect(() => loadConfig({ DECIDE_MAX_BODY_BYTES: '10' })).toThrow(/DECIDE_MAX_BODY_BYTES/);
  });

  it('reads overrides', () => {
    const c = loadConfig({
      CAPTURE_PORT: '9002',
      KAFKA_BROKERS: 'a:9092, b:9093',
      INGESTION_TOPICS: 'historical',
    });
    expect(c.ports.capture).toBe(9002);
    expect(c.kafkaBrokers).toEqual(['a:9092', 'b:9093']);
    expect(c.ingestion.topics).toEqual(['historical']);
    expect(loadConfig({ INGESTION_TOPICS: 'all' }).ingestion.topics).toEqual([
      'main',
      'overflow',
      'historical',
    ]);
    expect(loadConfig({ INGESTION_TOPICS: 'main, overflow' }).ingestion.topics).toEqual(['main', 'overflow']);
  });

  it.each([
    ['SETT_PORT', 'abc'],
    ['CAPTURE_PORT', '70000'],
    ['DATABASE_URL', 'mysql://x@y/z'],
    ['REDIS_URL', 'not a url'],
    ['LOG_LEVEL', 'loud'],
    ['KAFKA_BROKERS', 'localhost'],
    ['CAPTURE_MAX_BODY_BYTES', '-5'],
    ['INGESTION_TOPICS', 'main,bogus'],
    ['CAPTURE_WORKERS', 'two'],
    ['CAPTURE_WORKERS', '0'],
    ['DATABASE_CONNECT_TIMEOUT_MS', '5s'],
    ['DECIDE_DATABASE_TIMEOUT_MS', '0'],
    ['SETT_ENCRYPTION_KEY', 'too-short'],
    ['SETT_ENCRYPTION_KEY', 'zz'.repeat(32)],
  ])('rejects %s=%s naming the variable', (name, value) => {
    let caught: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(name);
    expect((caught as Error).message).toContain(name);
  });

  it('gives each service its own Postgres statement timeout and shares the connect timeouts', () => {
    const c = loadConfig({ DECIDE_DATABASE_TIMEOUT_MS: '250', DATABASE_CONNECT_TIMEOUT_MS: '700' });
    expect(databaseTimeouts(c, 'decide')).toEqual({
      connectTimeoutMs: 700,
      statementTimeoutMs: 250,
      idleInTransactionTimeoutMs: 60_000,
    });
    expect(databaseTimeouts(loadConfig({}), 'capture').statementTimeoutMs).toBe(2_000);
    expect(databaseTimeouts(loadConfig({}), 'management').statementTimeoutMs).toBe(10_000);
    expect(databaseTimeouts(loadConfig({}), 'ingestion').statementTimeoutMs).toBe(60_000);
  });

  it('reads SETT_ENCRYPTION_KEY as hex or base64 and requires it in production where asked', () => {
    const key = Buffer.alloc(32, 7);
    expect(loadConfig({ SETT_ENCRYPTION_KEY: key.toString('hex') }).encryptionKey).toEqual(key);
    expect(loadConfig({ SETT_ENCRYPTION_KEY: key.toString('base64') }).encryptionKey).toEqual(key);
    expect(loadConfig({ SETT_ENCRYPTION_KEY: key.toString('base64url') }).encryptionKey).toEqual(key);
    expect(loadConfig({}).encryptionKey).toBeUndefined();
    // Services that keep no secrets start in production without it; management does not.
    expect(loadConfig({ NODE_ENV: 'production' }).encryptionKey).toBeUndefined();
    expect(() => loadConfig({ NODE_ENV: 'production' }, { requireEncryptionKey: true })).toThrow(
      /SETT_ENCRYPTION_KEY: required/,
    );
    expect(
      loadConfig({ NODE_ENV: 'development' }, { requireEncryptionKey: true }).encryptionKey,
    ).toBeUndefined();
  });

  it('loadConfigOrExit stops the process with one line naming the variable', () => {
    const script = `require(${JSON.stringify(path.join(__dirname, '../src'))}).loadConfigOrExit(); console.log('started');`;
    const res = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
      env: { ...process.env, DECIDE_PORT: 'eighty' },
      encoding: 'utf8',
    });
    expect(res.status).toBe(1);
    expect(res.stdout).not.toContain('started');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toContain('DECIDE_PORT');
  });
});
