// Every setting Sett reads from the environment, parsed and validated once at boot.
// Services call loadConfig() in their main.ts; nothing else reads process.env.
import { kafkaSecurity } from './kafka-security';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** What the code says of one setting: its default and the values it takes (docs/configuration.md
 * is generated from these and the meanings in settings.ts). */
export type SettingFacts = { default?: string; allowed?: string };

let recording: Map<string, SettingFacts> | undefined;

/** Record a setting's facts while describeSettings() runs loadConfig: the first record that
 * states any facts wins (a bare read records only the name). */
export function noteSetting(name: string, facts: SettingFacts = {}): void {
  if (recording === undefined) return;
  const prior = recording.get(name);
  if (prior === undefined || (prior.default === undefined && prior.allowed === undefined)) {
    recording.set(name, facts);
  }
}

/** Every setting loadConfig reads, in reading order, with the default and range it declares. The
 * second pass turns on what only SASL over TLS reads, with placeholder credentials. */
export function describeSettings(): Map<string, SettingFacts> {
  recording = new Map();
  try {
    loadConfig({});
    loadConfig({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'PLAIN',
      KAFKA_SASL_USERNAME: 'user',
      KAFKA_SASL_PASSWORD: 'password',
    });
    return recording;
  } finally {
    recording = undefined;
  }
}

function read(env: Env, name: string): string | undefined {
  noteSetting(name);
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  noteSetting(name, { default: String(def), allowed: `${min}–${max}` });
  const raw = read(env, name);
  if (raw === undefined) return def;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function num(env: Env, name: string, def: number, min: number): number {
  noteSetting(name, { default: String(def), allowed: `≥ ${min}` });
  const raw = read(env, name);
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min)
    throw new ConfigError(name, `expected a number >= ${min}, got "${raw}"`);
  return n;
}

function fraction(env: Env, name: string, def: number): number {
  noteSetting(name, { default: String(def), allowed: '0–1' });
  const n = num(env, name, def, 0);
  if (n > 1) throw new ConfigError(name, `expected a number from 0 to 1, got "${read(env, name)}"`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, def: T, allowed: readonly T[]): T {
  noteSetting(name, { default: def, allowed: allowed.join(', ') });
  const raw = read(env, name);
  if (raw === undefined) return def;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** A process count: a positive integer, or "auto" (one per core; resolved by the caller). */
function workers(env: Env, name: string, def: number): number | 'auto' {
  noteSetting(name, { default: String(def), allowed: '1–256, auto' });
  const raw = read(env, name);
  if (raw !== undefined && raw.toLowerCase() === 'auto') return 'auto';
  return int(env, name, def, 1, 256);
}

function url(env: Env, name: string, def: string, protocols: string[]): string {
  noteSetting(name, { default: def, allowed: `URL (${protocols.join(' ')})` });
  const raw = read(env, name) ?? def;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `protocol must be ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

function brokers(env: Env, name: string): string[] {
  noteSetting(name, { allowed: 'host:port, …' });
  const raw = read(env, name);
  if (raw === undefined) return [];
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const b of list) {
    if (!/^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/.test(b)) throw new ConfigError(name, `"${b}" is not host:port`);
  }
  return list;
}

export const INGESTION_TOPIC_CHOICES = ['main', 'overflow', 'historical'] as const;
export type IngestionTopicChoice = (typeof INGESTION_TOPIC_CHOICES)[number];

function ingestionTopics(env: Env): IngestionTopicChoice[] {
  noteSetting('INGESTION_TOPICS', {
    default: 'main,overflow,historical',
    allowed: `list of ${INGESTION_TOPIC_CHOICES.join(', ')}; all`,
  });
  const raw = read(env, 'INGESTION_TOPICS') ?? 'main,overflow,historical';
  // "all" is shorthand for every topic (one worker deployment running both consumer groups).
  const list = raw
    .split(',')
    .flatMap((s) => (s.trim() === 'all' ? [...INGESTION_TOPIC_CHOICES] : [s.trim()]));
  for (const t of list) {
    if (!(INGESTION_TOPIC_CHOICES as readonly string[]).includes(t)) {
      throw new ConfigError(
        'INGESTION_TOPICS',
        `unknown topic "${t}" (choose from ${INGESTION_TOPIC_CHOICES.join(', ')})`,
      );
    }
  }
  return [...new Set(list)] as IngestionTopicChoice[];
}

/**
 * A 32-byte key for secrets Sett must read back (TOTP secrets), as 64 hex characters or base64.
 * Only management needs it: it loads its config with `requireEncryptionKey`, which makes the key
 * mandatory in production. Elsewhere an unset key is undefined and management generates one.
 */
function encryptionKey(env: Env, required: boolean): Buffer | undefined {
  const name = 'SETT_ENCRYPTION_KEY';
  const raw = read(env, name);
  if (raw === undefined) {
    if (required) throw new ConfigError(name, 'required when NODE_ENV=production');
    return undefined;
  }
  if (/^[0-9a-f]{64}$/i.test(raw)) return Buffer.from(raw, 'hex');
  // 32 bytes are 43 base64 characters and one '=' of padding (base64url without it).
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(raw)) return Buffer.from(raw, /[-_]/.test(raw) ? 'base64url' : 'base64');
  throw new ConfigError(name, 'must be 32 bytes as 64 hex characters or base64');
}

export type LoadConfigOptions = {
  /** The service keeps secrets it must decrypt (management): SETT_ENCRYPTION_KEY is required in production. */
  requireEncryptionKey?: boolean;
  /** The service connects to Kafka (capture, ingestion): the Kafka TLS files are read and checked. */
  kafkaClient?: boolean;
};

export const DEFAULT_DATABASE_URL = 'postgresql://root@127.0.0.1:5432/sett';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}) {
  const port = (name: string, def: number) => int(env, name, def, 0, 65535);
  const nodeEnv = oneOf(env, 'NODE_ENV', 'development', ['development', 'production', 'test']);
  const tokenCacheTtlMs = int(env, 'TOKEN_CACHE_TTL_MS', 30_000, 0, 3_600_000);
  return {
    nodeEnv,
    /** The in-process project token cache of capture, decide and ingestion (@sett/cache's resolver). */
    tokenCache: { ttlMs: tokenCacheTtlMs },
    /** Decompressed request bodies (gzip, lz64, base64) one capture or decide process holds at
     * once; past it 503 with Retry-After before inflating (@sett/http decompression-budget). */
    decompressionBudgetBytes: int(
      env,
      'DECOMPRESSION_BUDGET_BYTES',
      128 * 1024 * 1024,
      1024 * 1024,
      64 * 1024 * 1024 * 1024,
    ),
    /** Proxies in front of capture, decide and management that append to X-Forwarded-For; 0 =
     * none: the header is ignored and the socket's peer is the client (@sett/http clientIp). */
    trustedProxyHops: int(env, 'TRUSTED_PROXY_HOPS', 0, 0, 20),
    host: read(env, 'HOST') ?? '127.0.0.1',
    ports: {
      edge: port('SETT_PORT', 8000),
      management: port('MANAGEMENT_PORT', 8001),
      capture: port('CAPTURE_PORT', 8002),
      decide: port('DECIDE_PORT', 8003),
      ingestion: port('INGESTION_PORT', 8004),
    },
    databaseUrl: url(env, 'DATABASE_URL', DEFAULT_DATABASE_URL, ['postgres:', 'postgresql:']),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1, 500),
    database: {
      /** Opening a connection (TCP, TLS, startup) and waiting for a free pooled one. */
      connectTimeoutMs: int(env, 'DATABASE_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
      /** A transaction left open and idle this long is ended by Postgres (0 = off). */
      idleInTransactionTimeoutMs: int(env, 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, 0, 3_600_000),
      /** statement_timeout per service: decide answers from what it has, capture answers 503,
       * management 503, ingestion retries the batch. The client gives up 1 s after this too, for
       * a Postgres that stops answering altogether. */
      statementTimeoutMs: {
        capture: int(env, 'CAPTURE_DATABASE_TIMEOUT_MS', 2_000, 100, 3_600_000),
        decide: int(env, 'DECIDE_DATABASE_TIMEOUT_MS', 1_000, 100, 3_600_000),
        management: int(env, 'MANAGEMENT_DATABASE_TIMEOUT_MS', 10_000, 100, 3_600_000),
        ingestion: int(env, 'INGESTION_DATABASE_TIMEOUT_MS', 60_000, 100, 3_600_000),
      },
    },
    redisUrl: url(env, 'REDIS_URL', DEFAULT_REDIS_URL, ['redis:', 'rediss:']),
    /** Empty means "not configured": the local start script launches the development broker. */
    kafkaBrokers: brokers(env, 'KAFKA_BROKERS'),
    kafka: {
      // Short: under load, messages also gather while the previous produce request is in flight, so
      // batches grow with load; the linger only delays the first message after a quiet spell.
      lingerMs: int(env, 'KAFKA_PRODUCER_LINGER_MS', 1, 0, 1000),
      /** The idempotent producer: on when the broker supports it (auto), or forced on or off. */
      idempotence: oneOf(env, 'KAFKA_PRODUCER_IDEMPOTENCE', 'auto', ['auto', 'on', 'off']),
      batchMaxMessages: int(env, 'KAFKA_PRODUCER_BATCH_MAX_MESSAGES', 2000, 1, 100000),
      sendTimeoutMs: int(env, 'KAFKA_PRODUCER_SEND_TIMEOUT_MS', 10000, 100, 600000),
      messageMaxBytes: int(env, 'KAFKA_MESSAGE_MAX_BYTES', 1_000_000, 1024, 100 * 1024 * 1024),
      /** Which client produces: node-rdkafka when it is built (auto), or one forced. */
      client: oneOf(env, 'KAFKA_CLIENT', 'auto', ['auto', 'node-rdkafka', 'kafkajs']),
      /** Record batch compression on produce (docs/kafka.md has the measurements behind the default). */
      compression: oneOf(env, 'KAFKA_PRODUCER_COMPRESSION', 'lz4', ['none', 'gzip', 'lz4', 'zstd']),
      /** SASL and TLS for every producer, consumer and admin client (files read here, once). */
      security: kafkaSecurity(env, options.kafkaClient === true),
    },
    log: {
      level: oneOf(env, 'LOG_LEVEL', 'info', ['error', 'warn', 'info', 'debug']),
      format: oneOf(env, 'LOG_FORMAT', nodeEnv === 'production' ? 'json' : 'pretty', ['json', 'pretty']),
    },
    capture: {
      maxBodyBytes: int(env, 'CAPTURE_MAX_BODY_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      /** Decompressed bodies may be at most this many times the wire limit (zip bombs). 1: no
       * larger than an uncompressed body may be, as PostHog's capture limits them. */
      maxInflateRatio: int(env, 'CAPTURE_MAX_INFLATE_RATIO', 1, 1, 100),
      overflowRatePerSecond: num(env, 'CAPTURE_OVERFLOW_RATE', 100, 0),
      overflowBurst: num(env, 'CAPTURE_OVERFLOW_BURST', 1000, 1),
      /** Processes serving capture (node:cluster, sharing the port); "auto" = one per core. */
      workers: workers(env, 'CAPTURE_WORKERS', 1),
      overflowEnabled: oneOf(env, 'CAPTURE_OVERFLOW_ENABLED', 'true', ['true', 'false']) === 'true',
      /** @deprecated Not capture's alone: read `tokenCache.ttlMs` (same value, same env var). */
      tokenCacheTtlMs,
    },
    ingestion: {
      topics: ingestionTopics(env),
      /** Bytes fetched per partition per batch (INGESTION_MAX_BATCH_BYTES), not a message count. */
      maxBatchBytes: int(env, 'INGESTION_MAX_BATCH_BYTES', 10 * 1024 * 1024, 1024, 512 * 1024 * 1024),
      sessionTimeoutMs: int(env, 'INGESTION_SESSION_TIMEOUT_MS', 30_000, 1000, 600_000),
      heartbeatIntervalMs: int(env, 'INGESTION_HEARTBEAT_INTERVAL_MS', 3_000, 100, 60_000),
      /** How long a fetch waits on the broker for messages (the development broker always waits
       * it out when a partition is empty, so it bounds the idle latency of an event). */
      maxWaitTimeMs: int(env, 'INGESTION_MAX_WAIT_MS', 100, 10, 60_000),
      /** A batch gathers what every assigned partition fetched, up to these events or bytes, or
       * for this long when ingestion is idle (docs/operations.md, "Ingestion batches"). */
      batchMaxEvents: int(env, 'INGESTION_BATCH_MAX_EVENTS', 5_000, 1, 1_000_000),
      batchMaxBytes: int(env, 'INGESTION_BATCH_MAX_BYTES', 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      batchWaitMs: int(env, 'INGESTION_BATCH_WAIT_MS', 10, 0, 60_000),
      /** Batches written at once per consumer group, over disjoint partitions. */
      batchConcurrency: int(env, 'INGESTION_BATCH_CONCURRENCY', 2, 1, 64),
      /** $geoip_* on stored events and persons (projects may turn it off); false: never loaded. */
      geoipEnabled: oneOf(env, 'INGESTION_GEOIP_ENABLED', 'true', ['true', 'false']) === 'true',
      /** The same City database decide reads (DECIDE_GEOIP_DATABASE_PATH), or the bundled one. */
      geoipDatabasePath: read(env, 'DECIDE_GEOIP_DATABASE_PATH'),
      /** Event and property definitions kept current from stored batches (definition-tracker.ts);
       * false: the definitions endpoints list only what was recorded before. */
      definitionsEnabled: oneOf(env, 'INGESTION_DEFINITIONS_ENABLED', 'true', ['true', 'false']) === 'true',
      /** The consumer watchdog: lag and no batch progress for this long replaces the consumer (0 = off). */
      stallTimeoutMs: int(env, 'INGESTION_STALL_TIMEOUT_MS', 120_000, 0, 3_600_000),
    },
    decide: {
      flagCacheTtlMs: int(env, 'DECIDE_FLAG_CACHE_TTL_MS', 2_000, 0, 600_000),
      personCacheTtlMs: int(env, 'DECIDE_PERSON_CACHE_TTL_MS', 5_000, 0, 600_000),
      /** Flag evaluation bodies are small; larger ones are refused with 413. */
      maxBodyBytes: int(env, 'DECIDE_MAX_BODY_BYTES', 1024 * 1024, 1024, 100 * 1024 * 1024),
      /** GeoIP person properties from the client address (docs/interface.md, "Flag evaluation"). */
      geoipEnabled: oneOf(env, 'DECIDE_GEOIP_ENABLED', 'true', ['true', 'false']) === 'true',
      /** A GeoLite2/GeoIP2 City .mmdb to use instead of the bundled one; reloaded when it changes. */
      geoipDatabasePath: read(env, 'DECIDE_GEOIP_DATABASE_PATH'),
      /** Processes serving decide (node:cluster, sharing the port); "auto" = one per core. */
      workers: workers(env, 'DECIDE_WORKERS', 1),
    },
    management: {
      rateLimitPerMinute: int(env, 'MANAGEMENT_RATE_LIMIT_PER_MINUTE', 1200, 1, 1_000_000),
      /** Over all of one user's keys, so minting keys does not raise the limit. */
      userRateLimitPerMinute: int(env, 'MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE', 2400, 1, 1_000_000),
      publicUrl: read(env, 'SETT_PUBLIC_URL'),
      /** Browser sign-in (docs/accounts.md, "Signing in"): how long a session lives. */
      sessionTtlMs: int(env, 'SESSION_TTL_MS', 14 * 86_400_000, 60_000, 365 * 86_400_000),
      /** Failed sign-ins of one account within LOGIN_LOCKOUT_MS before it is locked for that long. */
      loginMaxFailuresPerAccount: int(env, 'LOGIN_MAX_FAILURES_PER_ACCOUNT', 5, 1, 1_000),
      /** Failed sign-ins from one client address within LOGIN_LOCKOUT_MS before it is refused. */
      loginMaxFailuresPerIp: int(env, 'LOGIN_MAX_FAILURES_PER_IP', 20, 1, 100_000),
      loginLockoutMs: int(env, 'LOGIN_LOCKOUT_MS', 15 * 60_000, 1_000, 86_400_000),
      /** The web console's built files (apps/console/dist; the image's console/ by default). */
      consoleDir: read(env, 'CONSOLE_DIR'),
    },
    /** POST /query/ (docs/query.md, "Limits"): its own pool, caps held in Redis, one deadline. */
    query: queryConfig(env),
    /** Background jobs of the management service (person deletion, retention, project purge). */
    jobs: {
      enabled: oneOf(env, 'JOBS_ENABLED', 'true', ['true', 'false']) === 'true',
      pollIntervalMs: int(env, 'JOBS_POLL_INTERVAL_MS', 1_000, 10, 600_000),
      leaseMs: int(env, 'JOBS_LEASE_MS', 60_000, 1_000, 3_600_000),
      retentionIntervalMs: int(env, 'RETENTION_INTERVAL_MS', 3_600_000, 1_000, 7 * 86_400_000),
      /** How often event definitions' volume_30_day is recounted from the last 30 days of events. */
      definitionVolumesIntervalMs: int(
        env,
        'DEFINITION_VOLUMES_INTERVAL_MS',
        3_600_000,
        1_000,
        7 * 86_400_000,
      ),
      personDeletionSettleMs: int(env, 'PERSON_DELETION_SETTLE_MS', 900_000, 0, 7 * 86_400_000),
    },
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 0, 600_000),
    /** Socket deadlines of every HTTP service (docs/hardening.md): a client that is slow to send
     * its head or its body, or idles on a keep-alive connection, is disconnected. */
    http: {
      headersTimeoutMs: int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
      requestTimeoutMs: int(env, 'HTTP_REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),
      keepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 100, 3_600_000),
      /** Share of requests written to the access log (0 = none, 1 = all); 5xx are always logged. */
      accessLogSampleRate: fraction(env, 'ACCESS_LOG_SAMPLE_RATE', 1),
    },
    /** `pnpm start` without a terminal writes new keys here (0600); default .sett/credentials.json. */
    credentialsFile: read(env, 'SETT_CREDENTIALS_FILE'),
    /** undefined when unset (only allowed outside production for management, see LoadConfigOptions). */
    encryptionKey: encryptionKey(env, options.requireEncryptionKey === true && nodeEnv === 'production'),
  };
}

function queryConfig(env: Env) {
  const poolSize = int(env, 'QUERY_POOL_SIZE', 8, 1, 500);
  const maxConcurrent = int(env, 'QUERY_MAX_CONCURRENT', 6, 1, 10_000);
  if (maxConcurrent > poolSize)
    throw new ConfigError(
      'QUERY_MAX_CONCURRENT',
      `must not exceed QUERY_POOL_SIZE (${poolSize}), or queries would wait for connections; got ${maxConcurrent}`,
    );
  return {
    /** The whole request's deadline: every statement it started is cancelled past it (504). */
    timeoutMs: int(env, 'QUERY_TIMEOUT_MS', 30_000, 100, 3_600_000),
    /** Connections of management's query pool, apart from the one serving key checks and /_ready. */
    poolSize,
    /** Queries at once over every replica (held in Redis). */
    maxConcurrent,
    /** Queries at once of one user, over all their keys and projects. */
    maxPerUser: int(env, 'QUERY_MAX_PER_USER', 2, 1, 10_000),
    /** Queries at once of one project. */
    maxPerProject: int(env, 'QUERY_MAX_PER_PROJECT', 3, 1, 10_000),
    /** Postgres' max_parallel_workers_per_gather for the query pool: 0 keeps each query on one
     * core, so concurrent queries (and everything else) share the CPU evenly. */
    parallelWorkers: int(env, 'QUERY_PARALLEL_WORKERS', 0, 0, 64),
  };
}

export type Config = ReturnType<typeof loadConfig>;

export type DatabaseService = keyof Config['database']['statementTimeoutMs'];

/** The Postgres timeouts one service runs with (for createPgPool / createPrisma `timeouts`). */
export function databaseTimeouts(config: Config, service: DatabaseService) {
  return {
    connectTimeoutMs: config.database.connectTimeoutMs,
    statementTimeoutMs: config.database.statementTimeoutMs[service],
    idleInTransactionTimeoutMs: config.database.idleInTransactionTimeoutMs,
  };
}

/** For main.ts: a bad value stops the process with one clear line naming the variable. */
export function loadConfigOrExit(env: Env = process.env, options: LoadConfigOptions = {}): Config {
  try {
    return loadConfig(env, options);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`sett: invalid configuration: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
