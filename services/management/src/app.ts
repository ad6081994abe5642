// Wires the management API: the feature services, and the route mechanism over management's
// table (routes.ts) with what management adds to it: personal API key authentication (and the
// project secret key on remote_config, auth/authenticators.ts), the per-key and per-user rate
// limit held in Redis (rate-limit/), the input rules (input-rules.ts) and the database error
// mapping (database-errors.ts). Operational endpoints, 404s, 405s, CORS and the one error
// mapping come from the mechanism.
import path from 'node:path';
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import type { Redis } from '@sett/cache';
import { createRegexChecker, type RegexChecker } from '@sett/flags';
import { ALL_KINDS, createQueryEngine, createStatementRunner } from '@sett/query';
import { POSTHOG_ENDPOINTS, createUnservedMatcher, unservedDetail } from '@sett/edge-config';
import { createRouteApp, type Authenticator, type RouteApp, type prom } from '@sett/http';
import { deriveCredentialKeys, deriveFlagPayloadKey } from '@sett/keys';
import type { Logger } from '@sett/logger';
import { createKeyAuthenticator } from './auth/auth-middleware';
import {
  personalKeyAuthenticator,
  personalOrSecretKeyAuthenticator,
  rateLimitAfterAuth,
} from './auth/authenticators';
import { createCohortService } from './cohorts/cohort-service';
import { createDatabaseErrorMapper } from './database-errors';
import { createEarlyAccessFeatureService } from './early-access-features/early-access-feature-service';
import { createFeatureFlagService } from './feature-flags/feature-flag-service';
import { checkInput } from './input-rules';
import { createMemberService } from './members/member-service';
import { buildApiDocument } from './openapi/api-document';
import { createOrganizationService } from './organizations/organization-service';
import { linkOrigin } from './pagination/pagination';
import { createDefinitionStore } from './definitions/definition-store';
import { createGroupStore } from './groups/group-store';
import { createInsightService } from './insights/insight-service';
import { createDashboardService } from './dashboards/dashboard-service';
import { createAnnotationService } from './annotations/annotation-service';
import { createPersonalApiKeyService } from './personal-api-keys/personal-api-key-service';
import { createProjectService } from './projects/project-service';
import { createRedisRateLimiter } from './rate-limit/rate-limiter';
import type { ManagementRouteDeps } from './route-deps';
import { createQuerySlots } from './query/query-slots';
import { createResultCache } from './query/result-cache';
import { createQueryRunner } from './query/run-query';
import { managementRoutes } from './routes';
import { findConsoleDir, loadConsoleFiles } from './console/console-files';
import { createInviteService } from './invites/invite-service';
import { createSessionAuthenticator } from './sessions/session-auth';
import { createSessionStore } from './sessions/session-store';
import { createSignIn } from './sessions/sign-in';
import { DEFAULT_LOGIN_LIMITS, createLoginGuard, type LoginLimits } from './sessions/login-guard';
import { createMemberCountCache } from './users/member-count-cache';
import { createUserService } from './users/user-service';

/** PostHog's endpoints Sett has no route for, named in their 404s. */
const unserved = createUnservedMatcher(POSTHOG_ENDPOINTS);

export interface ManagementConfig {
  /** Requests per minute per personal API key (or project secret key), shared by every replica. */
  rateLimitPerMinute: number;
  /** Requests per minute per user over all of their keys (default twice the per-key limit). */
  userRateLimitPerMinute?: number;
  /** SETT_PUBLIC_URL: base of absolute pagination URLs and the OpenAPI server; unset, page links are relative. */
  publicUrl?: string;
  /** Proxies that append to X-Forwarded-For (TRUSTED_PROXY_HOPS); default 0: the socket's peer. */
  trustedProxyHops?: number;
  /** How long a key lookup is cached in process (default 5 s). */
  authCacheTtlMs?: number;
  /** How long an organization's member count is cached in process (default 5 s; 0 = off). */
  memberCountTtlMs?: number;
  /** Request body limit of JSON bodies (default 1 MB). */
  maxBodyBytes?: number;
  /** ACCESS_LOG_SAMPLE_RATE: share of requests written to the access log (absent: none). */
  accessLogSampleRate?: number;
  /** Check every answer against its route's response schema (tests); a mismatch is a 500. */
  checkResponses?: boolean;
  /** POST /query/'s limits (QUERY_*; docs/query.md): deadline and caps; defaults as @sett/config's. */
  query?: Partial<QueryLimits>;
  /** SESSION_TTL_MS: how long a browser session lives (default 14 days). */
  sessionTtlMs?: number;
  /** LOGIN_*: the lockouts of failed sign-ins (sessions/login-guard.ts). */
  login?: Partial<LoginLimits>;
  /** CONSOLE_DIR: the console's built files; default the workspace's apps/console/dist (where
   * the image has them too). */
  consoleDir?: string;
}

export interface QueryLimits {
  timeoutMs: number;
  maxConcurrent: number;
  maxPerUser: number;
  maxPerProject: number;
}

const DEFAULT_QUERY_LIMITS: QueryLimits = {
  timeoutMs: 30_000,
  maxConcurrent: 6,
  maxPerUser: 2,
  maxPerProject: 3,
};

export interface ManagementDeps {
  prisma: PrismaClient;
  pool: pg.Pool;
  /** Management's query pool (QUERY_POOL_SIZE), for /query/ alone; defaults to `pool` (tests). */
  queryPool?: pg.Pool;
  /** Settles the regexes requests bring; one per process (it owns a worker thread). */
  regexes?: RegexChecker;
  redis: Redis;
  logger: Logger;
  registry: prom.Registry;
  /** SETT_ENCRYPTION_KEY (32 bytes), or the development key main.ts keeps in a file. */
  encryptionKey: Buffer;
  config: ManagementConfig;
  /** Wakes the background job runner after a request queued a job (main.ts wires it). */
  onJobQueued?: () => void;
}

export function createManagementApp(deps: ManagementDeps): RouteApp {
  const { prisma, pool, redis, logger, registry, config } = deps;
  const keys = createKeyAuthenticator({
    pool,
    prisma,
    logger,
    ttlMs: config.authCacheTtlMs,
    clientIp: { trustedProxyHops: config.trustedProxyHops ?? 0 },
  });
  const limiter = createRedisRateLimiter({
    redis,
    perKeyPerMinute: config.rateLimitPerMinute,
    perUserPerMinute: config.userRateLimitPerMinute ?? config.rateLimitPerMinute * 2,
    logger,
    registry,
  });
  const payloadKey = deriveFlagPayloadKey(deps.encryptionKey);
  const regexes = deps.regexes ?? createRegexChecker();
  const flags = createFeatureFlagService({ prisma, redis, logger, payloadKey, regexes });
  const queryLimits = { ...DEFAULT_QUERY_LIMITS, ...config.query };
  const memberCounts = createMemberCountCache({ ttlMs: config.memberCountTtlMs });
  const credentialKeys = deriveCredentialKeys(deps.encryptionKey);
  const sessions = createSessionStore({ pool, ttlMs: config.sessionTtlMs ?? 14 * 86_400_000 });
  let openApi: object | undefined;

  const routeDeps: ManagementRouteDeps = {
    prisma,
    pool,
    publicUrl: config.publicUrl,
    payloadKey,
    users: createUserService(prisma, pool, credentialKeys, memberCounts),
    sessions,
    invites: createInviteService(prisma),
    // The workspace's apps/console/dist, which the image keeps at the same place.
    console: loadConsoleFiles(
      findConsoleDir([config.consoleDir ?? path.resolve(__dirname, '../../../apps/console/dist')]),
    ),
    signIn: createSignIn({
      prisma,
      redis,
      keys: credentialKeys,
      sessions,
      guard: createLoginGuard(redis, { ...DEFAULT_LOGIN_LIMITS, ...config.login }),
    }),
    cookiePolicy: {
      publicHttps: (config.publicUrl ?? '').startsWith('https://'),
      trustProxy: (config.trustedProxyHops ?? 0) > 0,
    },
    trustedProxyHops: config.trustedProxyHops ?? 0,
    projects: createProjectService({ prisma, redis, logger }),
    organizations: createOrganizationService(prisma),
    members: createMemberService(prisma),
    features: createEarlyAccessFeatureService({ prisma, pool, flags }),
    flags,
    cohorts: createCohortService({ prisma, redis, logger, regexes }),
    personalApiKeys: createPersonalApiKeyService(prisma),
    definitions: createDefinitionStore(pool),
    groups: createGroupStore(pool),
    insights: createInsightService(prisma),
    dashboards: createDashboardService(prisma),
    annotations: createAnnotationService(prisma),
    queryConcurrencyPerUser: queryLimits.maxPerUser,
    queryTimeoutMs: queryLimits.timeoutMs,
    regexes,
    queries: createQueryRunner({
      engine: createQueryEngine({
        statements: createStatementRunner(deps.queryPool ?? pool, pool),
        regexes,
        kinds: ALL_KINDS,
      }),
      cache: createResultCache(redis, logger),
      slots: createQuerySlots({
        redis,
        limits: {
          global: queryLimits.maxConcurrent,
          perUser: queryLimits.maxPerUser,
          perProject: queryLimits.maxPerProject,
        },
        // Longer than any query may run: a lease left by a replica that died expires after it.
        leaseMs: queryLimits.timeoutMs + 10_000,
        logger,
        registry,
      }),
      timeoutMs: queryLimits.timeoutMs,
      registry,
    }),
    onCallersChanged: () => keys.clear(),
    // Memberships feed the cached key contexts (levels, reachable projects) and member counts.
    onMembershipsChanged: (organizationId) => {
      keys.clear();
      memberCounts.invalidate([organizationId]);
    },
    onJobQueued: deps.onJobQueued,
    // Built once, on first request: the tables do not change while the process runs.
    // Its server is SETT_PUBLIC_URL (none when unset: clients resolve paths against where they
    // fetched it).
    openApiDocument: () => (openApi ??= buildApiDocument(linkOrigin(config.publicUrl) || undefined)),
  };

  return createRouteApp({
    name: 'management',
    logger,
    registry,
    table: managementRoutes,
    deps: routeDeps,
    authenticators: {
      personal_key: personalKeyAuthenticator(keys, createSessionAuthenticator(sessions)) as Authenticator,
      personal_or_secret_key: personalOrSecretKeyAuthenticator(keys) as Authenticator,
    },
    afterAuth: rateLimitAfterAuth(limiter),
    checkInput,
    mapError: createDatabaseErrorMapper(registry),
    notFoundDetail: (method, url) => {
      const endpoint = unserved(method, url);
      return endpoint && unservedDetail(method, endpoint);
    },
    // Management answers browsers only where its table says so; the console is same-origin.
    defaultCors: 'none',
    // The regex checker's worker thread, when the app made the checker.
    // Writes off the request path finish before the connections close.
    onClose: async () => {
      await keys.settle();
      if (!deps.regexes) await regexes.close();
    },
    jsonBodyLimit: config.maxBodyBytes,
    checkResponses: config.checkResponses,
    accessLogSampleRate: config.accessLogSampleRate,
    readiness: {
      postgres: async () => void (await pool.query('SELECT 1')),
      redis: async () => void (await redis.ping()),
    },
  });
}
