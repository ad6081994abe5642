// The public lists posthog-js reads with the project token in the query, outside personal-key
// authentication and with CORS for any origin (declared in routes.ts):
//   GET /api/early_access_features/?token=<phc>[&stage=beta&stage=alpha]  (default stage: beta)
//   GET /api/surveys/?token=, /api/web_experiments/?token=, /api/product_tours/?token=
// Sett has no surveys, web experiments or product tours, so those three answer the empty list in
// the shape posthog-js reads ({"surveys": []}, {"experiments": []}, {"product_tours": []}) once
// the token is known. Cost of a request: one token lookup (in process, else Redis, else
// Postgres) and, for early access features, at most one Postgres query per project per TTL.
import { AuthenticationError, ServiceUnavailableError } from '@sett/http';
import { isWellFormedProjectToken } from '@sett/schemas';
import type { ProjectRef } from '@sett/cache';
import type { ProjectResolver } from '../decide/project-resolver';
import type { EarlyAccessFeatureStore } from './early-access-feature-store';

export interface PublicListDeps {
  projects: ProjectResolver;
  earlyAccessFeatures: EarlyAccessFeatureStore;
}

const DEFAULT_STAGE = 'beta';
/** More stage parameters than there are stages can only be noise. */
const MAX_STAGES = 10;
const NO_TOKEN_DETAIL = 'API key not provided. You can find your project API key in your project settings.';
const INVALID_TOKEN_DETAIL =
  'Project API key invalid. You can find your project API key in your project settings.';
const UNAVAILABLE_DETAIL = 'Could not check the project API key. Retry later.';

/** The query of a public list: `token` (or `api_key`) and, for early access features, `stage`. */
export interface PublicListQuery {
  token?: unknown;
  api_key?: unknown;
  stage?: unknown;
}

export interface PublicLists {
  earlyAccessFeatures(query: PublicListQuery): Promise<{ earlyAccessFeatures: unknown[] }>;
  /** The three lists Sett has nothing in: answered empty once the token is known. */
  empty<K extends string>(query: PublicListQuery, key: K): Promise<Record<K, never[]>>;
}

export function createPublicLists(deps: PublicListDeps): PublicLists {
  async function project(query: PublicListQuery): Promise<ProjectRef> {
    const token = firstString(query.token) ?? firstString(query.api_key);
    if (token === undefined) throw new AuthenticationError(NO_TOKEN_DETAIL, 'missing_api_key');
    // Shape first: a value that cannot be a key never reaches Redis or Postgres.
    if (!isWellFormedProjectToken(token))
      throw new AuthenticationError(INVALID_TOKEN_DETAIL, 'invalid_api_key');
    let ref: ProjectRef | null;
    try {
      ref = await deps.projects.resolve(token);
    } catch {
      throw new ServiceUnavailableError(UNAVAILABLE_DETAIL);
    }
    if (!ref) throw new AuthenticationError(INVALID_TOKEN_DETAIL, 'invalid_api_key');
    return ref;
  }

  return {
    async earlyAccessFeatures(query) {
      const ref = await project(query);
      let features;
      try {
        features = await deps.earlyAccessFeatures.list(ref.teamId, stagesOf(query.stage));
      } catch {
        throw new ServiceUnavailableError('Early access features are unavailable. Retry later.');
      }
      return { earlyAccessFeatures: features };
    },
    async empty(query, key) {
      await project(query);
      return { [key]: [] } as unknown as Record<typeof key, never[]>;
    },
  };
}

/** The `stage` parameters (repeatable, as posthog-js sends them); none means beta, as PostHog. */
export function stagesOf(value: unknown): Set<string> {
  const values = (Array.isArray(value) ? value : [value]).filter(
    (v): v is string => typeof v === 'string' && v !== '',
  );
  return new Set(values.length === 0 ? [DEFAULT_STAGE] : values.slice(0, MAX_STAGES));
}

function firstString(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}
