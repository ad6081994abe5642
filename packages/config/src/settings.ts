// What each setting means, next to the code that reads it: docs/configuration.md's table is
// generated from these rows and from what loadConfig itself declares of each setting (its default
// and the values it takes, recorded by describeSettings()), so the page cannot drift from the code.
// A row groups settings that are documented together; its default and allowed values are read from
// the code unless the row states them (settings whose default is not a value, such as "unset").
import { describeSettings, type SettingFacts } from './config';

export type SettingRow = {
  vars: string[];
  meaning: string;
  /** Only where the code's default is not a plain value (unset, computed, required). */
  default?: string;
  /** Only where the code reads the value as text (paths, URLs, secrets). */
  allowed?: string;
};

export const SETTINGS: SettingRow[] = [
  {
    vars: ['SETT_PORT'],
    meaning: 'Edge port.',
  },
  {
    vars: ['MANAGEMENT_PORT', 'CAPTURE_PORT', 'DECIDE_PORT', 'INGESTION_PORT'],
    meaning: 'Service ports.',
  },
  {
    vars: ['HOST'],
    default: '`127.0.0.1`',
    allowed: 'an address',
    meaning: 'Bind address (containers use 0.0.0.0).',
  },
  {
    vars: ['DATABASE_URL'],
    meaning: 'Postgres; the database is created when missing.',
  },
  {
    vars: ['DATABASE_POOL_SIZE'],
    meaning: 'Connections per service process.',
  },
  {
    vars: ['DATABASE_CONNECT_TIMEOUT_MS'],
    meaning: 'Opening a Postgres connection, or waiting for a free pooled one, fails after this.',
  },
  {
    vars: [
      'CAPTURE_DATABASE_TIMEOUT_MS',
      'DECIDE_DATABASE_TIMEOUT_MS',
      'MANAGEMENT_DATABASE_TIMEOUT_MS',
      'INGESTION_DATABASE_TIMEOUT_MS',
    ],
    meaning:
      'Postgres `statement_timeout` of each service; the client also gives up 1 s later, for a Postgres that stops answering. Capture then answers 503, decide answers with `errorsWhileComputingFlags`, management 504 (503 when the connection is lost), ingestion retries the batch without committing.',
  },
  {
    vars: ['QUERY_TIMEOUT_MS'],
    meaning:
      'The deadline of one `/query/` request: every statement it started is cancelled past it, and it answers 504 (`docs/query.md`, "Limits").',
  },
  {
    vars: ['QUERY_POOL_SIZE', 'QUERY_MAX_CONCURRENT'],
    meaning:
      "Management's connections for `/query/` alone, and the queries running at once over every replica (held in Redis; not above the pool size).",
  },
  {
    vars: ['QUERY_MAX_PER_USER', 'QUERY_MAX_PER_PROJECT'],
    meaning: 'Queries running at once of one user and of one project; past any cap, 429 with `Retry-After`.',
  },
  {
    vars: ['QUERY_PARALLEL_WORKERS'],
    meaning:
      "Postgres' `max_parallel_workers_per_gather` for the query pool: 0 keeps each query on one core.",
  },
  {
    vars: ['DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS'],
    meaning: 'Postgres ends a transaction left idle this long (0 = off).',
  },
  {
    vars: ['SETT_ENCRYPTION_KEY'],
    default: '(required when `NODE_ENV=production`)',
    allowed: '64 hex characters or base64 of 32 bytes',
    meaning:
      'The key that encrypts secrets Sett must read back (TOTP secrets). Outside production, management generates one and keeps it in `.sett/encryption-key`.',
  },
  {
    vars: ['REDIS_URL'],
    meaning: 'Redis.',
  },
  {
    vars: ['KAFKA_BROKERS'],
    default: '(unset: start the development broker)',
    meaning: 'The Kafka brokers, comma-separated.',
  },
  {
    vars: ['KAFKA_SECURITY_PROTOCOL'],
    meaning:
      'How every producer, consumer and admin client connects to the brokers; see `docs/kafka.md` (MSK, Confluent Cloud, Aiven, Redpanda).',
  },
  {
    vars: ['KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'],
    default: '(required with `SASL_*`)',
    meaning: 'The SASL mechanism, and the credentials.',
  },
  {
    vars: ['KAFKA_SSL_CA_FILE'],
    default: "(Node's public CAs)",
    allowed: 'a PEM file',
    meaning: "PEM bundle of CAs trusted for the brokers' certificates.",
  },
  {
    vars: ['KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SSL_KEY_PASSWORD'],
    default: '(none)',
    allowed: 'PEM files, text',
    meaning:
      "Client certificate and key (PEM) for mutual TLS, and the key's passphrase; the files are read once at start by capture and ingestion.",
  },
  {
    vars: ['KAFKA_SSL_SERVERNAME'],
    default: "(each broker's host)",
    allowed: 'a host name',
    meaning: 'Name sent as SNI and checked against the broker certificates.',
  },
  {
    vars: ['KAFKA_SSL_VERIFY'],
    meaning: '`false` accepts any broker certificate (testing only).',
  },
  {
    vars: ['KAFKA_CLIENT'],
    meaning:
      'Which client produces: `auto` is node-rdkafka (librdkafka, built at install) when it loads, else kafkajs with an error line at start; `node-rdkafka` refuses to start without it; `kafkajs`. `sett_kafka_client_info{client}` on `/_metrics` says which runs (`docs/kafka.md`).',
  },
  {
    vars: ['KAFKA_PRODUCER_COMPRESSION'],
    meaning:
      'Record batch compression on produce (kafkajs does gzip only, the others go uncompressed); measurements in `docs/kafka.md`.',
  },
  {
    vars: ['KAFKA_PRODUCER_LINGER_MS'],
    meaning:
      'How long the producer waits for more messages before a produce request; under load messages also gather while the requests in flight are answered.',
  },
  {
    vars: ['KAFKA_PRODUCER_IDEMPOTENCE'],
    meaning:
      'The idempotent producer (node-rdkafka): 5 produce requests in flight per broker connection with per-key order kept by sequence numbers, instead of 1. `auto` turns it on when the broker assigns a producer id to a probe at start (logged); `on` requires it; kafkajs never uses it. `docs/kafka.md` has both settings side by side.',
  },
  {
    vars: ['CAPTURE_WORKERS', 'DECIDE_WORKERS'],
    meaning: 'Processes serving capture / decide on one port (node:cluster); `auto` = one per core.',
  },
  {
    vars: ['KAFKA_PRODUCER_BATCH_MAX_MESSAGES'],
    meaning: 'Messages per produce request.',
  },
  {
    vars: ['KAFKA_PRODUCER_SEND_TIMEOUT_MS'],
    meaning: 'A produce not acknowledged in this time fails (capture answers 503).',
  },
  {
    vars: ['KAFKA_MESSAGE_MAX_BYTES'],
    meaning: 'Largest single event accepted.',
  },
  {
    vars: ['CAPTURE_MAX_BODY_BYTES'],
    meaning: 'Request body limit on the wire (413 above it).',
  },
  {
    vars: ['CAPTURE_MAX_INFLATE_RATIO'],
    meaning:
      "Decompressed bodies (gzip, lz64, base64) may be at most this many times `CAPTURE_MAX_BODY_BYTES`: 1 means no larger than an uncompressed body may be (PostHog's capture applies one limit to both); 413 past it.",
  },
  {
    vars: ['DECOMPRESSION_BUDGET_BYTES'],
    meaning:
      'Decompressed request bodies one capture or decide process holds at once (a quarter for bodies up to 1 MiB, the rest for larger ones); a body that does not fit is 503 with `Retry-After: 1` before it is inflated. Parsing costs several times these bytes in memory.',
  },
  {
    vars: ['CAPTURE_OVERFLOW_RATE', 'CAPTURE_OVERFLOW_BURST'],
    meaning: 'Per-key token bucket (events/s, burst) before a key goes to the overflow topic.',
  },
  {
    vars: ['CAPTURE_OVERFLOW_ENABLED'],
    meaning: 'Turn overflow routing off.',
  },
  {
    vars: ['TOKEN_CACHE_TTL_MS'],
    meaning: 'In-process cache of project tokens (capture, decide, ingestion; `config.tokenCache.ttlMs`).',
  },
  {
    vars: ['TRUSTED_PROXY_HOPS'],
    meaning:
      "Proxies in front of capture, decide and management that append to `X-Forwarded-For`. 0: the header is ignored and the socket's peer is the client; N: the entry the outermost of N proxies wrote, so clients cannot choose their `$ip`, GeoIP or unknown-key throttle address. Set it for your topology: `pnpm start`, docker-compose (Caddy or nginx, one either way) and the Kubernetes manifests (ingress-nginx) all set 1; see docs/hardening.md.",
  },
  {
    vars: ['INGESTION_TOPICS'],
    meaning:
      'Which consumers this ingestion process runs: `main,overflow` for live, `historical` for backfills.',
  },
  {
    vars: ['INGESTION_MAX_BATCH_BYTES'],
    meaning:
      'Bytes fetched per partition per batch (a size, not a message count; `config.ingestion.maxBatchBytes`).',
  },
  {
    vars: ['INGESTION_SESSION_TIMEOUT_MS', 'INGESTION_HEARTBEAT_INTERVAL_MS', 'INGESTION_MAX_WAIT_MS'],
    meaning: 'Consumer group settings.',
  },
  {
    vars: ['INGESTION_BATCH_MAX_EVENTS', 'INGESTION_BATCH_MAX_BYTES', 'INGESTION_BATCH_WAIT_MS'],
    meaning:
      'A written batch gathers what every partition fetched, up to these events or bytes, or after this wait when ingestion is idle (`docs/operations.md`, "Ingestion batches").',
  },
  {
    vars: ['INGESTION_BATCH_CONCURRENCY'],
    meaning: 'Batches written at once per consumer group, each over its own lane of partitions.',
  },
  {
    vars: ['INGESTION_DEFINITIONS_ENABLED'],
    meaning:
      'Keep event and property definitions current from stored batches (one upsert per batch for names not seen in the last hour); `false` leaves the definitions endpoints with what was recorded before.',
  },
  {
    vars: ['INGESTION_GEOIP_ENABLED'],
    meaning:
      '`$geoip_*` on stored events and persons (each project can turn it off: `geoip_enabled`); `false` never loads the database (about 60 MB of memory).',
  },
  {
    vars: ['INGESTION_STALL_TIMEOUT_MS'],
    meaning:
      'The consumer watchdog: partitions with lag and no batch started or finished for this long (not counting a batch held for a retry) make `/_ready` 503 naming the group, count `sett_ingestion_consumer_stalls_total`, and replace the consumer (0 = off).',
  },
  {
    vars: ['DECIDE_FLAG_CACHE_TTL_MS'],
    meaning: "In-process cache of a project's flag list (also invalidated through Redis pub/sub).",
  },
  {
    vars: ['DECIDE_PERSON_CACHE_TTL_MS'],
    meaning: 'Cache of stored person properties.',
  },
  {
    vars: ['DECIDE_MAX_BODY_BYTES'],
    meaning: 'Decide request body limit (413 over it, also after decompression).',
  },
  {
    vars: ['DECIDE_GEOIP_ENABLED'],
    meaning: 'GeoIP lookup of the client IP for `$geoip_*` properties.',
  },
  {
    vars: ['DECIDE_GEOIP_DATABASE_PATH'],
    default: '(bundled GeoLite2 City)',
    allowed: 'a `.mmdb` file',
    meaning:
      'A City `.mmdb` to use instead, in decide and ingestion, reloaded when the file is replaced (docs/operations.md).',
  },
  {
    vars: ['MANAGEMENT_RATE_LIMIT_PER_MINUTE'],
    meaning:
      'Management requests per minute per personal API key (or project secret key), shared by every replica through Redis; see "Rate limits".',
  },
  {
    vars: ['MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE'],
    meaning:
      'Management requests per minute per user over all of their keys, so minting keys does not raise the limit.',
  },
  {
    vars: ['SETT_CREDENTIALS_FILE'],
    default: '`.sett/credentials.json`',
    allowed: 'a file path',
    meaning:
      'Where `pnpm start` writes a new personal API key (mode 0600) when its stdout is not a terminal.',
  },
  {
    vars: ['SETT_PUBLIC_URL'],
    default: '(unset: relative links)',
    allowed: 'a URL',
    meaning:
      "The URL clients reach Sett on: base of the absolute `next`/`previous` links of list pages and of the OpenAPI document's server. Unset, links are relative (`/api/...`); they are never built from the request's `Host` or `X-Forwarded-*` headers. `pnpm start` sets it to its edge's URL.",
  },
  {
    vars: ['LOG_LEVEL'],
    meaning: 'The least severe log lines written.',
  },
  {
    vars: ['LOG_FORMAT'],
    default: '`json` when `NODE_ENV=production`, else `pretty`',
    meaning: 'Log line format.',
  },
  {
    vars: ['NODE_ENV'],
    meaning:
      '`production` makes `SETT_ENCRYPTION_KEY` required and logs JSON; `test` is what the test suites run with.',
  },
  {
    vars: ['SHUTDOWN_TIMEOUT_MS'],
    meaning: 'How long a service waits for in-flight work on SIGTERM.',
  },
  {
    vars: ['HTTP_HEADERS_TIMEOUT_MS'],
    meaning:
      "A client must send a request's head within this, else it is answered 408 and its connection is closed (every HTTP service, and the local edge; nginx and Caddy carry the same value).",
  },
  {
    vars: ['HTTP_REQUEST_TIMEOUT_MS'],
    meaning:
      "A client must send a whole request, head and body, within this (answered 408 and closed); the local edge also waits this long for a service's answer (then 504).",
  },
  {
    vars: ['HTTP_KEEP_ALIVE_TIMEOUT_MS'],
    meaning:
      "An idle keep-alive connection is closed after this (longer than load balancers' idle timeouts, so they close first).",
  },
  {
    vars: ['ACCESS_LOG_SAMPLE_RATE'],
    meaning:
      'Share of requests written to the access log (one `request` line each: method, route template, status, ms, bytes, request id, key prefix); 0 turns it off; 5xx are always logged as errors.',
  },
  {
    vars: ['CONSOLE_DIR'],
    default: '`apps/console/dist`',
    allowed: 'a directory',
    meaning: 'Where management finds the built web console it serves at `/` (docs/console.md).',
  },
  {
    vars: ['SESSION_TTL_MS'],
    meaning: 'How long a browser session (`POST /api/login/`) lives; see docs/accounts.md, "Signing in".',
  },
  {
    vars: ['LOGIN_MAX_FAILURES_PER_ACCOUNT', 'LOGIN_MAX_FAILURES_PER_IP', 'LOGIN_LOCKOUT_MS'],
    meaning:
      'Failed sign-ins before an account or a client address is locked out, and for how long after the last failure (docs/accounts.md, "Lockout").',
  },
  {
    vars: ['JOBS_ENABLED'],
    meaning:
      'Management runs background jobs (person deletions, retention, purges of deleted projects); replicas share them. See `docs/data-lifecycle.md`.',
  },
  {
    vars: ['JOBS_POLL_INTERVAL_MS', 'JOBS_LEASE_MS'],
    meaning:
      'How often an idle runner looks for due jobs; how long a claimed job stays with its runner without a step (then another runner takes it over).',
  },
  {
    vars: ['RETENTION_INTERVAL_MS'],
    meaning:
      "How often retention runs (creates monthly events partitions ahead, drops or deletes events past each project's `data_retention_days`).",
  },
  {
    vars: ['DEFINITION_VOLUMES_INTERVAL_MS'],
    meaning: "How often event definitions' `volume_30_day` is recounted from the last 30 days of events.",
  },
  {
    vars: ['PERSON_DELETION_SETTLE_MS'],
    meaning:
      'After a person deletion, when the job sweeps what events still in Kafka at the time brought back.',
  },
];

const UNITS_MS: Array<[number, string]> = [
  [86_400_000, 'days'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1_000, 's'],
];

/** A default as the table shows it: numbers as the code has them, with a readable size or time
 * beside large byte and millisecond values; words as code. */
function shown(name: string, value: string): string {
  if (!/^\d+$/.test(value)) return `\`${value}\``;
  const n = Number(value);
  if (name.endsWith('_BYTES') && n >= 1024) {
    const [unit, size] = n % (1024 * 1024) === 0 ? ['MiB', n / 1024 / 1024] : ['KiB', n / 1024];
    return Number.isInteger(size) ? `${value} (${size} ${unit})` : value;
  }
  if (name.endsWith('_MS') && n >= 10_000) {
    const [size, unit] = UNITS_MS.find(([ms]) => n % ms === 0)!;
    return `${value} (${n / size} ${unit})`;
  }
  return value;
}

/** Settings the code reads that no row explains, and rows naming settings the code does not read. */
export function settingsProblems(facts = describeSettings()): string[] {
  const documented = new Set(SETTINGS.flatMap((r) => r.vars));
  const problems = [...facts.keys()]
    .filter((name) => !documented.has(name))
    .map(
      (name) => `${name} is read by loadConfig but has no row in SETTINGS (packages/config/src/settings.ts)`,
    );
  for (const name of documented) {
    if (!facts.has(name)) problems.push(`${name} has a row in SETTINGS but loadConfig does not read it`);
  }
  for (const row of SETTINGS) {
    const missing = row.vars.filter((name) => facts.get(name)?.default === undefined);
    if (row.default === undefined && missing.length > 0) {
      problems.push(`${missing.join(', ')}: the code declares no default, so the row must state one`);
    }
  }
  return problems;
}

/** docs/configuration.md's table, one line per row of SETTINGS; throws on settingsProblems(). */
export function renderSettingsTable(): string {
  const facts = describeSettings();
  const problems = settingsProblems(facts);
  if (problems.length > 0) throw new Error(`settings table: ${problems.join('; ')}`);
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const lines = ['| variable | default | allowed | meaning |', '|---|---|---|---|'];
  for (const row of SETTINGS) {
    const of = (name: string): SettingFacts => facts.get(name) ?? {};
    const defaults = row.default ?? row.vars.map((name) => shown(name, of(name).default!)).join(' / ');
    const allowed =
      row.allowed ?? [...new Set(row.vars.map((name) => of(name).allowed ?? 'text'))].join(' / ');
    const names = row.vars.map((name) => `\`${name}\``).join(' / ');
    lines.push(`| ${names} | ${cell(defaults)} | ${cell(allowed)} | ${cell(row.meaning)} |`);
  }
  return `${lines.join('\n')}\n`;
}
