// Wires the management API: JSON body parsing, the public OpenAPI document, then for every
// other /api/ path authentication (personal API key), the per-key and per-user rate limit
// (held in Redis, rate-limit/), the input rules (input-rules.ts) and the feature routers,
// whose database errors are mapped by database-errors.ts. Operational endpoints, 404 and the
// one error middleware come from createServiceApp.
import type { RequestListener } from 'node:http';
import express from 'express';
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import type { Redis } from '@sett/cache';
import { createFastPath, createServiceApp, type prom } from '@sett/http';
import { deriveCredentialKeys, deriveFlagPayloadKey } from '@sett/keys';
import type { Logger } from '@sett/logger';
import { authMiddleware, createKeyAuthenticator } from './auth/auth-middleware';
import { cohortRoutes } from './cohorts/cohort-routes';
import { createCohortService } from './cohorts/cohort-service';
import { earlyAccessFeatureRoutes } from './early-access-features/early-access-feature-routes';
import { createEarlyAccessFeatureService } from './early-access-features/early-access-feature-service';
import { eventRoutes } from './events/event-routes';
import { featureFlagRoutes } from './feature-flags/feature-flag-routes';
import { createFeatureFlagService } from './feature-flags/feature-flag-service';
import { remoteConfigRoutes } from './feature-flags/remote-config-routes';
import { databaseErrorMiddleware } from './database-errors';
import { inputRulesMiddleware } from './input-rules';
import { buildOpenApiDocument } from './openapi/openapi-document';
import { linkOrigin } from './pagination/pagination';
import { createMemberService } from './members/member-service';
import { memberRoutes } from './members/member-routes';
import { createOrganizationService } from './organizations/organization-service';
import { organizationRoutes } from './organizations/organization-routes';
import { personRoutes } from './persons/person-routes';
import { personalApiKeyRoutes } from './personal-api-keys/personal-api-key-routes';
import { projectRoutes } from './projects/project-routes';
import { createProjectService } from './projects/project-service';
import { rateLimitMiddleware } from './rate-limit/rate-limit-middleware';
import { createRedisRateLimiter } from './rate-limit/rate-limiter';
import { userRoutes } from './users/user-routes';
import { createMemberCountCache } from './users/member-count-cache';
import { createUserReadHandler, matchUserRead } from './users/user-fast-path';
import { createUserService } from './users/user-service';

export interface ManagementConfig {
  /** Requests per minute per personal API key (or project secret key), shared by every replica. */
  rateLimitPerMinute: number;
  /** Requests per minute per user over all of their keys (default twice the per-key limit). */
  userRateLimitPerMinute?: number;
  /** SETT_PUBLIC_URL: base of absolute pagination URLs; unset, page links are relative. */
  publicUrl?: string;
  /** How long a key lookup is cached in process (default 5 s). */
  authCacheTtlMs?: number;
  /** How long an organization's member count is cached in process (default 5 s; 0 = off). */
  memberCountTtlMs?: number;
  /** Request body limit of the JSON parser (default 1 MB). */
  maxBodyBytes?: number;
  /** Proxies that append to X-Forwarded-For (TRUSTED_PROXY_HOPS); default 0: the socket's peer. */
  trustedProxyHops?: number;
}

export interface ManagementDeps {
  prisma: PrismaClient;
  pool: pg.Pool;
  redis: Redis;
  logger: Logger;
  registry: prom.Registry;
  /** SETT_ENCRYPTION_KEY (32 bytes), or the development key main.ts keeps in a file. */
  encryptionKey: Buffer;
  config: ManagementConfig;
  /** Wakes the background job runner after a request queued a job (main.ts wires it). */
  onJobQueued?: () => void;
}

/**
 * The request listener: the users read fast path (users/user-fast-path.ts) in front of the
 * Express app, which serves everything else.
 */
export function createManagementApp(deps: ManagementDeps): RequestListener {
  const { prisma, pool, redis, logger, registry, config } = deps;
  const publicUrl = config.publicUrl;
  const authenticator = createKeyAuthenticator({
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
  const flags = createFeatureFlagService({ prisma, redis, logger, payloadKey });
  const memberCounts = createMemberCountCache({ ttlMs: config.memberCountTtlMs });
  const organizations = createOrganizationService(prisma);
  const users = createUserService(prisma, pool, deriveCredentialKeys(deps.encryptionKey), memberCounts);
  // Memberships feed the cached key contexts (levels, reachable projects) and member counts.
  const onMembershipsChanged = (organizationId: string) => {
    authenticator.clear();
    memberCounts.invalidate([organizationId]);
  };

  const api = express.Router();
  api.use('/api', express.json({ limit: config.maxBodyBytes ?? 1024 * 1024 }));
  // Public on purpose: client generators fetch it without a key. Its server is SETT_PUBLIC_URL
  // (none when unset: clients then resolve paths against where they fetched it).
  api.get('/api/schema/', (_req, res) => {
    res.json(buildOpenApiDocument(linkOrigin(publicUrl)));
  });
  api.use('/api', authMiddleware(authenticator), rateLimitMiddleware(limiter), inputRulesMiddleware());
  const routers = [
    userRoutes({
      prisma,
      users,
      publicUrl,
      onUserChanged: () => authenticator.clear(),
    }),
    projectRoutes({
      prisma,
      projects: createProjectService({ prisma, redis, logger }),
      publicUrl,
      onProjectsChanged: () => authenticator.clear(),
    }),
    organizationRoutes({ organizations, publicUrl, onMembershipsChanged }),
    memberRoutes({
      organizations,
      members: createMemberService(prisma),
      publicUrl,
      onMembershipsChanged,
    }),
    earlyAccessFeatureRoutes({
      prisma,
      features: createEarlyAccessFeatureService({ prisma, pool, flags }),
      publicUrl,
    }),
    featureFlagRoutes({ prisma, flags, publicUrl }),
    cohortRoutes({ prisma, cohorts: createCohortService({ prisma, redis, logger }), publicUrl }),
    eventRoutes({ prisma, pool, publicUrl }),
    personRoutes({ prisma, pool, publicUrl, onJobQueued: deps.onJobQueued }),
    personalApiKeyRoutes({ prisma, publicUrl, onKeyDeleted: () => authenticator.clear() }),
  ];

  // One router around all of them so that the database error mapping sees their errors (an
  // error handler only runs for errors of the layers before it in the same router).
  const routes = express.Router();
  // remote_config authenticates by itself (it also takes project secret keys): ahead of `api`.
  const remoteConfig = remoteConfigRoutes({ prisma, authenticator, limiter, payloadKey });
  routes.use(remoteConfig, api, ...routers, databaseErrorMiddleware);

  const app = createServiceApp({
    name: 'management',
    logger,
    registry,
    readiness: {
      postgres: async () => void (await pool.query('SELECT 1')),
      redis: async () => void (await redis.ping()),
    },
    routes,
  });
  const userRead = createUserReadHandler({ authenticator, limiter, users, publicUrl });
  return createFastPath({
    match: matchUserRead,
    handle: (req, res, route) => userRead(req, res, route),
    routeLabel: (route) => (route.kind === 'list' ? '/api/users/' : '/api/users/:id/'),
    fallback: app,
    logger,
    registry,
    // Management's Express app sends no CORS headers; its fast path must not either.
    cors: false,
  });
}
