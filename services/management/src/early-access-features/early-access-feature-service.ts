// Early access features of a project. Creating one links an existing live flag of the same
// project (feature_flag_id) or creates a flag keyed after the name; either way the flag gets
// PostHog's enrollment super condition, and deleting the feature removes it again. Flag
// changes go through the flag service's locked write, so decide sees them at once. List and
// retrieve read through the pg pool (early-access-feature-read-store.ts), writes through Prisma.
import type pg from 'pg';
import { Prisma, type EarlyAccessFeature, type FeatureFlag, type PrismaClient } from '@sett/db';
import type { FlagFilters } from '@sett/flags';
import { NotFoundError, ValidationError } from '@sett/http';
import type { Page } from '../pagination/pagination';
import type { FeatureFlagService } from '../feature-flags/feature-flag-service';
import { slugifyKey, uniqueKey, withEnrollment, withoutEnrollment } from '../feature-flags/flag-filters';
import { isUuid } from '../validate';
import { createEarlyAccessFeatureReadStore } from './early-access-feature-read-store';
import type {
  EarlyAccessFeatureCreateBody,
  EarlyAccessFeatureUpdateBody,
} from './early-access-feature-schemas';

type Row = EarlyAccessFeature & { featureFlag: FeatureFlag | null };

/** The flag fields the nested feature_flag shows (docs/interface.md, "Early access features"). */
export type NestedFlagRow = Pick<
  FeatureFlag,
  | 'id'
  | 'teamId'
  | 'name'
  | 'key'
  | 'filters'
  | 'deleted'
  | 'active'
  | 'ensureExperienceContinuity'
  | 'hasEncryptedPayloads'
>;

/** What earlyAccessFeatureJson reads: a Prisma row or a row of the read store. */
export type EarlyAccessFeatureRow = Pick<
  EarlyAccessFeature,
  'id' | 'name' | 'description' | 'stage' | 'documentationUrl' | 'createdAt'
> & { featureFlag: NestedFlagRow | null };

export function earlyAccessFeatureJson(f: EarlyAccessFeatureRow) {
  return {
    id: f.id,
    feature_flag: f.featureFlag ? nestedFlagJson(f.featureFlag) : null,
    name: f.name,
    description: f.description,
    stage: f.stage,
    documentation_url: f.documentationUrl,
    created_at: f.createdAt.toISOString(),
  };
}

/** The nested flag of an early access feature: the flag fields it lists, nothing more (as featureFlagJson names them). */
function nestedFlagJson(flag: NestedFlagRow) {
  return {
    id: flag.id,
    team_id: flag.teamId,
    name: flag.name,
    key: flag.key,
    filters: flag.filters,
    deleted: flag.deleted,
    active: flag.active,
    ensure_experience_continuity: flag.ensureExperienceContinuity,
    has_encrypted_payloads: flag.hasEncryptedPayloads,
  };
}

/** Blank, or an absolute http(s) URL. */
export function checkDocumentationUrl(value: string | undefined): void {
  if (value === undefined || value === '') return;
  let ok = false;
  try {
    const url = new URL(value);
    ok = (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.length > 0;
  } catch {
    ok = false;
  }
  if (!ok) throw new ValidationError('Enter a valid URL.', 'documentation_url', 'invalid');
}

export function createEarlyAccessFeatureService({
  prisma,
  pool,
  flags,
}: {
  prisma: PrismaClient;
  pool: pg.Pool;
  flags: FeatureFlagService;
}) {
  const reads = createEarlyAccessFeatureReadStore(pool);

  async function find(teamId: number, id: string): Promise<Row> {
    const row = isUuid(id)
      ? await prisma.earlyAccessFeature.findFirst({
          where: { id: id.toLowerCase(), teamId },
          include: { featureFlag: true },
        })
      : null;
    if (!row) throw new NotFoundError();
    return row;
  }

  return {
    /** Newest first (created_at, then id), with the total count: one statement. */
    async list(teamId: number, page: Page, search?: string) {
      const { count, rows } = await reads.list(teamId, page, search);
      return { count, results: rows.map(earlyAccessFeatureJson) };
    },

    async retrieve(teamId: number, id: string) {
      const row = isUuid(id) ? await reads.one(teamId, id.toLowerCase()) : undefined;
      if (!row) throw new NotFoundError();
      return earlyAccessFeatureJson(row);
    },

    async create(teamId: number, userId: number, body: EarlyAccessFeatureCreateBody) {
      checkDocumentationUrl(body.documentation_url);
      return flags.writeFlags(teamId, async (tx) => {
        let flag: FeatureFlag;
        if (body.feature_flag_id !== undefined) {
          const linked = await tx.featureFlag.findFirst({
            where: { id: body.feature_flag_id, teamId, deleted: false },
          });
          if (!linked)
            throw new ValidationError(
              'Feature flag does not exist in this project.',
              'feature_flag_id',
              'invalid_input',
            );
          const used = await tx.earlyAccessFeature.findFirst({
            where: { featureFlagId: linked.id },
            select: { id: true },
          });
          if (used)
            throw new ValidationError(
              `Linked feature flag ${linked.key} already has a feature attached.`,
              'feature_flag_id',
              'invalid_input',
            );
          if ((linked.filters as FlagFilters).multivariate?.variants?.length) {
            throw new ValidationError(
              'Feature flags with variants are not supported for early access features.',
              'feature_flag_id',
              'invalid_input',
            );
          }
          flag = await tx.featureFlag.update({
            where: { id: linked.id },
            data: {
              filters: withEnrollment(linked.filters as FlagFilters, linked.key) as Prisma.InputJsonValue,
              version: { increment: 1 },
            },
          });
        } else {
          const base = slugifyKey(body.name);
          const taken = await tx.featureFlag.findMany({
            where: { teamId, deleted: false, key: { startsWith: base } },
            select: { key: true },
          });
          const key = uniqueKey(base, new Set(taken.map((t) => t.key)));
          const filters: FlagFilters = {
            groups: [{ properties: [], rollout_percentage: 0 }],
            payloads: {},
            multivariate: null,
          };
          flag = await tx.featureFlag.create({
            data: {
              teamId,
              key,
              name: `Feature Flag for Feature ${body.name}`,
              filters: withEnrollment(filters, key) as Prisma.InputJsonValue,
              createdById: userId,
            },
          });
        }
        const feature = await tx.earlyAccessFeature.create({
          data: {
            teamId,
            featureFlagId: flag.id,
            name: body.name,
            description: body.description ?? '',
            stage: body.stage ?? 'draft',
            documentationUrl: body.documentation_url ?? '',
          },
        });
        return { ...earlyAccessFeatureJson({ ...feature, featureFlag: flag }), feature_flag_id: flag.id };
      });
    },

    async update(teamId: number, id: string, body: EarlyAccessFeatureUpdateBody) {
      await find(teamId, id);
      checkDocumentationUrl(body.documentation_url);
      // Through the flag lock like create and remove: its publish on the flags-changed channel
      // is what makes decide drop its cached public list (/api/early_access_features/) at once.
      await flags.writeFlags(teamId, (tx) =>
        tx.earlyAccessFeature.update({
          where: { id: id.toLowerCase() },
          data: {
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.description !== undefined ? { description: body.description } : {}),
            ...(body.stage !== undefined ? { stage: body.stage } : {}),
            ...(body.documentation_url !== undefined ? { documentationUrl: body.documentation_url } : {}),
          },
        }),
      );
      return earlyAccessFeatureJson(await find(teamId, id));
    },

    /** Deletes the feature and drops the enrollment condition from its flag (as PostHog does). */
    async remove(teamId: number, id: string) {
      const feature = await find(teamId, id);
      await flags.writeFlags(teamId, async (tx) => {
        await tx.earlyAccessFeature.delete({ where: { id: feature.id } });
        const flag = feature.featureFlagId
          ? await tx.featureFlag.findFirst({ where: { id: feature.featureFlagId, teamId } })
          : null;
        if (flag) {
          await tx.featureFlag.update({
            where: { id: flag.id },
            data: {
              filters: withoutEnrollment(flag.filters as FlagFilters) as Prisma.InputJsonValue,
              version: { increment: 1 },
            },
          });
        }
      });
    },
  };
}

export type EarlyAccessFeatureService = ReturnType<typeof createEarlyAccessFeatureService>;
