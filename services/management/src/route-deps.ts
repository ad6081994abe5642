// What the handlers of management's route table (routes.ts) are given: the clients, the feature
// services, and the hooks that drop cached key contexts when a write changes what they hold.
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import type { RegexChecker } from '@sett/flags';
import type { CohortService } from './cohorts/cohort-service';
import type { DefinitionStore } from './definitions/definition-store';
import type { GroupStore } from './groups/group-store';
import type { InsightService } from './insights/insight-service';
import type { DashboardService } from './dashboards/dashboard-service';
import type { AnnotationService } from './annotations/annotation-service';
import type { EarlyAccessFeatureService } from './early-access-features/early-access-feature-service';
import type { FeatureFlagService } from './feature-flags/feature-flag-service';
import type { MemberService } from './members/member-service';
import type { OrganizationService } from './organizations/organization-service';
import type { PersonalApiKeyService } from './personal-api-keys/personal-api-key-service';
import type { ProjectService } from './projects/project-service';
import type { QueryRunner } from './query/run-query';
import type { UserService } from './users/user-service';
import type { CookiePolicy } from './sessions/cookies';
import type { ConsoleFiles } from './console/console-files';
import type { InviteService } from './invites/invite-service';
import type { SessionStore } from './sessions/session-store';
import type { SignIn } from './sessions/sign-in';

export interface ManagementRouteDeps {
  prisma: PrismaClient;
  /** The plain pool of the hand-written reads (events, persons, jobs). */
  pool: pg.Pool;
  /** SETT_PUBLIC_URL: base of absolute pagination URLs. */
  publicUrl?: string;
  /** deriveFlagPayloadKey(SETT_ENCRYPTION_KEY), for remote config payloads. */
  payloadKey: Buffer;
  users: UserService;
  /** The web console's built files (console/), served at `/`. */
  console: ConsoleFiles;
  invites: InviteService;
  /** Browser sessions (sessions/): the store, signing in, and how their cookies are set. */
  sessions: SessionStore;
  signIn: SignIn;
  cookiePolicy: CookiePolicy;
  /** TRUSTED_PROXY_HOPS, for the client address of sign-in's per-address limit. */
  trustedProxyHops: number;
  projects: ProjectService;
  organizations: OrganizationService;
  members: MemberService;
  features: EarlyAccessFeatureService;
  flags: FeatureFlagService;
  cohorts: CohortService;
  personalApiKeys: PersonalApiKeyService;
  definitions: DefinitionStore;
  groups: GroupStore;
  insights: InsightService;
  dashboards: DashboardService;
  annotations: AnnotationService;
  /** QUERY_MAX_PER_USER: how many saved queries a list or dashboard computes at once. */
  queryConcurrencyPerUser: number;
  /** QUERY_TIMEOUT_MS: the deadline of a request computing many saved queries. */
  queryTimeoutMs: number;
  /** Settles the regexes a request brings (filters), budgeted and off the event loop when large. */
  regexes: RegexChecker;
  /** POST /query/ (query/run-query.ts). */
  queries: QueryRunner;
  /** After a user, key or project changed: cached key contexts go. */
  onCallersChanged(): void;
  /** After a membership changed: cached key contexts and that organization's member count go. */
  onMembershipsChanged(organizationId: string): void;
  /** After a deletion job was queued (the in-process job runner polls at once). */
  onJobQueued?(): void;
  /** The OpenAPI document of every service's routes (GET /api/schema/). */
  openApiDocument(): object;
}
