// Wiring of the decide service, shared by main.ts and the tests (which pass real clients and
// start it in-process on port 0): stores, the evaluation service, the route table (routes.ts),
// the pub/sub subscription that drops a project's cached flags when management rewrites them.
import type { Pool } from 'pg';
import { redisKeys, type Redis } from '@sett/cache';
import { createDecompressionBudget, createRouteApp, type RouteApp } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { Registry } from 'prom-client';
import { createDecideMetrics, type DecideMetrics } from './decide/decide-metrics';
import { createDecideAnswerer, type DecideAnswerer } from './decide/decide-answer';
import { createDecideService, createRedisHealth, type DecideService } from './decide/decide-service';
import { createProjectResolver } from './decide/project-resolver';
import { createFlagStore, type FlagStore } from './flags/flag-store';
import { createLocalEvaluationHandler } from './local-evaluation/local-evaluation-handler';
import { noGeoIp, type GeoIp } from '@sett/geoip';
import { createPersonStore, type PersonStore } from './persons/person-store';
import { createQuotaStore, createUsageCounter, type UsageCounter } from './quota/quota';
import { createEarlyAccessFeatureStore } from './public-lists/early-access-feature-store';
import { createPublicLists } from './public-lists/public-list-routes';
import { loadSdkFiles, type SdkFiles } from './static/sdk-files';
import { createStaticFiles } from './static/static-routes';
import { decideRoutes } from './routes';
import {
  createRemoteConfigHandler,
  createRemoteConfigRequestCounter,
} from './remote-config/remote-config-handler';
import { createRemoteConfigStore, type RemoteConfigStore } from './remote-config/remote-config-store';

export interface DecideConfig {
  flagCacheTtlMs: number;
  personCacheTtlMs: number;
  tokenCacheTtlMs: number;
  quotaCacheTtlMs?: number;
  maxBodyBytes: number;
  /** How often quota usage counted in process is added to the shared Redis counter. */
  usageFlushIntervalMs?: number;
  /** How long to skip Redis after a failed round trip. */
  redisBackoffMs?: number;
  /** How long one request waits for Postgres in total; default DEFAULT_POSTGRES_BUDGET_MS. */
  postgresBudgetMs?: number;
  /** Proxies that append to X-Forwarded-For (TRUSTED_PROXY_HOPS); default 0: the socket's peer. */
  trustedProxyHops?: number;
  /** DECOMPRESSION_BUDGET_BYTES; absent: decompressed bodies are not budgeted. */
  decompressionBudgetBytes?: number;
  /** ACCESS_LOG_SAMPLE_RATE; absent: no access log. */
  accessLogSampleRate?: number;
}

export interface DecideDeps {
  redis: Redis;
  /** A second connection in subscriber mode, for the flags-changed channel; optional in tests. */
  subscriber?: Redis;
  pool: Pool;
  logger: Logger;
  registry: Registry;
  config: DecideConfig;
  geoip?: GeoIp;
  /** The posthog-js files served under /static/; default: loaded from the pinned package. */
  sdkFiles?: SdkFiles;
}

export interface DecideApp {
  /** The route table served (startService). */
  app: RouteApp;
  service: DecideService;
  /** What `/decide/` and `/flags/` run once routed: request in, serialised answer out. */
  answer: DecideAnswerer;
  flagStore: FlagStore;
  personStore: PersonStore;
  remoteConfig: RemoteConfigStore;
  usage: UsageCounter;
  metrics: DecideMetrics;
  /** Resolves once the flags-changed subscription is active. */
  subscribed: Promise<void>;
  close(): Promise<void>;
}

export function createDecideApp(deps: DecideDeps): DecideApp {
  const { redis, pool, logger, registry, config } = deps;
  const metrics = createDecideMetrics(registry);
  const redisHealth = createRedisHealth({
    backoffMs: config.redisBackoffMs ?? 1000,
    onFailure: (err) => {
      metrics.redisFailures.inc();
      logger.warn('redis round trip failed; using postgres', { err: (err as Error)?.message });
    },
  });
  const flagStore = createFlagStore({ redis, redisHealth, pool, logger, ttlMs: config.flagCacheTtlMs });
  const personStore = createPersonStore({ pool, ttlMs: config.personCacheTtlMs });
  const quotaStore = createQuotaStore({ pool, ttlMs: config.quotaCacheTtlMs ?? 30_000 });
  const usage = createUsageCounter({
    redis,
    redisUsable: redisHealth.usable,
    redisFailed: redisHealth.failed,
    flushIntervalMs: config.usageFlushIntervalMs ?? 1000,
  });
  const geoip = deps.geoip ?? noGeoIp;
  const clientIp = { trustedProxyHops: config.trustedProxyHops ?? 0 };
  const service = createDecideService({
    redis,
    redisHealth,
    flagStore,
    personStore,
    quotaStore,
    usage,
    geoip,
    logger,
    metrics,
  });
  const projects = createProjectResolver({
    redis,
    subscriber: deps.subscriber,
    pool,
    redisHealth,
    ttlMs: config.tokenCacheTtlMs,
  });
  // Same freshness as the flag list: both are dropped at once by pub/sub, the TTL is the fallback.
  const remoteConfig = createRemoteConfigStore({
    redis,
    pool,
    logger,
    redisHealth,
    ttlMs: config.flagCacheTtlMs,
  });

  const subscriber = deps.subscriber;
  const onMessage = (channel: string, message: string) => {
    const teamId = Number(message);
    if (!Number.isInteger(teamId)) return;
    if (channel === redisKeys.flagsChangedChannel()) flagStore.invalidate(teamId);
    else if (channel === redisKeys.remoteConfigChangedChannel()) remoteConfig.invalidate(teamId);
  };
  let subscribed: Promise<void> = Promise.resolve();
  if (subscriber) {
    subscriber.on('message', onMessage);
    // After a reconnect ioredis resubscribes, but messages sent meanwhile are lost: drop
    // everything cached so the TTL is not the only bound on staleness.
    subscriber.on('ready', () => {
      flagStore.clear();
      remoteConfig.clear();
    });
    subscribed = subscriber
      .subscribe(redisKeys.flagsChangedChannel(), redisKeys.remoteConfigChangedChannel())
      .then(
        () => undefined,
        (err: Error) =>
          logger.warn('could not subscribe to flag changes; relying on the cache TTL', { err: err.message }),
      );
  }

  // Public token lists: management writes early access features under its flag lock, which
  // publishes the project on the flags-changed channel; that drops this cache too.
  const earlyAccessFeatures = createEarlyAccessFeatureStore({ pool, ttlMs: config.flagCacheTtlMs });
  const onListsMessage = (channel: string, message: string) => {
    if (channel === redisKeys.flagsChangedChannel() && Number.isInteger(Number(message)))
      earlyAccessFeatures.invalidate(Number(message));
  };
  const onListsReady = () => earlyAccessFeatures.clear();
  subscriber?.on('message', onListsMessage);
  subscriber?.on('ready', onListsReady);

  const routeDeps = {
    service,
    projects,
    metrics,
    geoipEnabled: geoip !== noGeoIp,
    clientIp,
    maxBodyBytes: config.maxBodyBytes,
    decompressionBudget:
      config.decompressionBudgetBytes === undefined
        ? undefined
        : createDecompressionBudget(config.decompressionBudgetBytes),
    postgresBudgetMs: config.postgresBudgetMs,
    remoteConfig,
  };
  const answer = createDecideAnswerer(routeDeps);
  const app = createRouteApp({
    name: 'decide',
    logger,
    registry,
    table: decideRoutes,
    deps: {
      answer,
      maxBodyBytes: config.maxBodyBytes,
      localEvaluation: createLocalEvaluationHandler({
        flagStore,
        projects,
        pool,
        logger,
        registry,
        postgresBudgetMs: config.postgresBudgetMs ?? 1_000,
        clientIp,
      }),
      remoteConfig: createRemoteConfigHandler({
        projects,
        store: remoteConfig,
        logger,
        requests: createRemoteConfigRequestCounter(registry),
      }),
      publicLists: createPublicLists({ projects, earlyAccessFeatures }),
      staticFiles: createStaticFiles(deps.sdkFiles ?? loadSdkFiles()),
    },
    accessLogSampleRate: config.accessLogSampleRate,
    // Redis is not a readiness condition: without it decide answers from Postgres.
    readiness: {
      postgres: async () => void (await pool.query('SELECT 1')),
    },
  });

  return {
    app,
    service,
    answer,
    flagStore,
    personStore,
    remoteConfig,
    usage,
    metrics,
    subscribed: Promise.all([subscribed, projects.subscribed]).then(() => undefined),
    async close() {
      projects.close();
      subscriber?.off('message', onMessage);
      subscriber?.off('message', onListsMessage);
      subscriber?.off('ready', onListsReady);
      await usage.stop();
    },
  };
}
