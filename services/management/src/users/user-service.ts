// Users: visibility-filtered listing and lookup, the PATCH rules of the User (docs/interface.md "Users") (unique e-mail,
// password change needs the current password, current organization/team only among the
// user's own, is_staff only by staff), deletion and the sub-resources (hedgehog config, scene
// personalisation, TOTP setup and backup codes). Reads (list, retrieve, the User shape returned
// after a write) go through the one-statement read store; writes load rows through Prisma.
import { Secret, TOTP } from 'otpauth';
import type pg from 'pg';
import { Prisma, type PrismaClient } from '@sett/db';
import { ForbiddenError, NotFoundError, ValidationError } from '@sett/http';
import {
  checkPassword,
  encryptSecret,
  generateBackupCode,
  hashBackupCode,
  hashPassword,
  openTotpSecret,
  type CredentialKeys,
} from '@sett/keys';
import type { Page } from '../pagination/pagination';
import { isUuid } from '../validate';
import {
  MAX_HEDGEHOG_CONFIG_BYTES,
  MAX_SCENE_PERSONALISATIONS,
  MAX_USER_JSON_BYTES,
  type ScenePersonalisationBody,
  type UserUpdateBody,
} from './user-schemas';
import type { MemberCountCache } from './member-count-cache';
import { createUserReadStore } from './user-read-store';
import { TOTP_ISSUER, totpAssociatedData, totpCodeValid, withPasswordHashing } from './user-credentials';
import { userInclude, type UserRow } from './user-views';
import { lockOrganizations, soleOwnerOf } from '../organizations/levels';
import { canChangeAccount, canSeeUser, type Viewer } from './viewer';

export const BACKUP_CODE_COUNT = 10;

/** `keys`: derived from SETT_ENCRYPTION_KEY (TOTP secrets are encrypted, backup codes keyed-hashed). */
export function createUserService(
  prisma: PrismaClient,
  pool: pg.Pool,
  keys: CredentialKeys,
  memberCounts?: MemberCountCache,
) {
  const reads = createUserReadStore(pool, memberCounts);

  /** The user behind a path segment (uuid or @me), or 404 when unknown or not visible. */
  async function find(viewer: Viewer, idOrMe: string): Promise<UserRow> {
    const where =
      idOrMe === '@me' ? { id: viewer.userId } : isUuid(idOrMe) ? { uuid: idOrMe.toLowerCase() } : undefined;
    const user = where ? await prisma.user.findUnique({ where, include: userInclude }) : null;
    if (
      !user ||
      !canSeeUser(
        viewer,
        user.id,
        user.memberships.map((m) => m.organizationId),
      )
    )
      throw new NotFoundError();
    return user;
  }

  /** A user whose account the viewer may change (themself or staff): 404 unseen, 403 seen. */
  async function findWritable(viewer: Viewer, idOrMe: string): Promise<UserRow> {
    const user = await find(viewer, idOrMe);
    if (!canChangeAccount(viewer, user.id))
      throw new ForbiddenError(
        'Only the user themself or staff can change this account. Organization admins manage memberships.',
      );
    return user;
  }

  /** The User shape of a user the viewer is known to reach (after a write to it). */
  async function reload(viewer: Viewer, id: number) {
    const found = await reads.one(viewer, { id });
    if (!found) throw new NotFoundError();
    return found.json;
  }

  /** E-mail: lower-cased, unique case-insensitively (400 when taken). */
  async function emailChange(user: UserRow, body: UserUpdateBody): Promise<Prisma.UserUncheckedUpdateInput> {
    if (body.email === undefined) return {};
    const email = body.email.trim().toLowerCase();
    const other = await prisma.user.findFirst({
      where: { email: { equals: email, mode: 'insensitive' }, id: { not: user.id } },
      select: { id: true },
    });
    if (other)
      throw new ValidationError('There is already an account with this email address.', 'email', 'unique');
    return { email };
  }

  /** A new password: only the user themself, with the current one when one is set. */
  async function passwordChange(
    viewer: Viewer,
    user: UserRow,
    body: UserUpdateBody,
  ): Promise<Prisma.UserUncheckedUpdateInput> {
    if (body.password === undefined) return {};
    // Someone else's password is never changed through this API, not even by staff.
    if (user.id !== viewer.userId) throw new ForbiddenError('Only the user itself can change its password.');
    // No re-hash of the old hash here: a verified change replaces it with a current one below.
    const current = user.password;
    const given = body.current_password ?? '';
    if (current && !(await withPasswordHashing(() => checkPassword(given, current))).valid) {
      throw new ValidationError(
        body.current_password
          ? 'Your current password is incorrect.'
          : 'current_password is required to change the password.',
        'current_password',
        body.current_password ? 'incorrect_password' : 'required',
      );
    }
    const password = body.password;
    return { password: await withPasswordHashing(() => hashPassword(password)) };
  }

  /** set_current_team / set_current_organization: only among the user's own, live projects. */
  async function currentContextChange(
    user: UserRow,
    body: UserUpdateBody,
  ): Promise<Prisma.UserUncheckedUpdateInput> {
    const memberOf = new Set(user.memberships.map((m) => m.organizationId));
    const data: Prisma.UserUncheckedUpdateInput = {};
    if (body.set_current_team !== undefined) {
      const team = await prisma.team.findFirst({
        where: { id: Number(body.set_current_team), deletedAt: null },
      });
      if (!team || !memberOf.has(team.organizationId))
        throw new ValidationError(
          'The user is not a member of the organization of this project.',
          'set_current_team',
          'invalid_input',
        );
      data.currentTeamId = team.id;
      data.currentOrganizationId = team.organizationId;
    }
    if (body.set_current_organization === undefined) return data;
    const orgId = body.set_current_organization.toLowerCase();
    if (!memberOf.has(orgId))
      throw new ValidationError(
        'The user is not a member of this organization.',
        'set_current_organization',
        'invalid_input',
      );
    if (body.set_current_team !== undefined && data.currentOrganizationId !== orgId)
      throw new ValidationError(
        'set_current_team must belong to set_current_organization.',
        'set_current_team',
        'invalid_input',
      );
    data.currentOrganizationId = orgId;
    if (body.set_current_team === undefined) {
      // As PostHog does: switching organization moves the user to that organization's first project.
      const first = await prisma.team.findFirst({
        where: { organizationId: orgId, deletedAt: null },
        orderBy: { id: 'asc' },
        select: { id: true },
      });
      data.currentTeamId = first?.id ?? null;
    }
    return data;
  }

  return {
    find,

    async list(viewer: Viewer, page: Page, isStaff: boolean | undefined) {
      return reads.list(viewer, page, isStaff);
    },

    /** By uuid or @me; 404 when unknown or not visible (same rule as find). */
    async retrieve(viewer: Viewer, idOrMe: string) {
      const by =
        idOrMe === '@me'
          ? { id: viewer.userId }
          : isUuid(idOrMe)
            ? { uuid: idOrMe.toLowerCase() }
            : undefined;
      const found = by ? await reads.one(viewer, by) : undefined;
      if (
        !found ||
        !canSeeUser(
          viewer,
          found.row.id,
          found.row.memberships.map((m) => m.organizationId),
        )
      )
        throw new NotFoundError();
      return found.json;
    },

    async update(viewer: Viewer, idOrMe: string, body: UserUpdateBody) {
      const user = await findWritable(viewer, idOrMe);
      checkUserJsonSizes(body);
      const data: Prisma.UserUncheckedUpdateInput = {
        ...profileChanges(body),
        ...(await emailChange(user, body)),
        ...staffChange(viewer, user, body),
        ...(await passwordChange(viewer, user, body)),
        ...(await currentContextChange(user, body)),
      };
      await prisma.user.update({ where: { id: user.id }, data });
      return reload(viewer, user.id);
    },

    /** Deletes the account; refused while it is the last owner of an organization. */
    async remove(viewer: Viewer, idOrMe: string) {
      const user = await findWritable(viewer, idOrMe);
      const orgIds = user.memberships.map((m) => m.organizationId);
      await prisma.$transaction(async (tx) => {
        await lockOrganizations(tx, orgIds);
        const sole = await soleOwnerOf(tx, user.id, orgIds);
        if (sole.length > 0)
          throw new ValidationError(
            `This user is the only owner of ${sole.map((o) => `"${o.name}"`).join(', ')}: make another member owner or delete the organization first.`,
            null,
            'last_owner',
          );
        await tx.user.delete({ where: { id: user.id } });
      });
      // Its memberships went with it (cascade): those organizations' member counts changed.
      memberCounts?.invalidate(orgIds);
    },

    async hedgehogConfig(viewer: Viewer, idOrMe: string) {
      const user = await find(viewer, idOrMe);
      return (user.hedgehogConfig ?? {}) as Record<string, unknown>;
    },

    /** Merges into the stored config (PostHog's behaviour) and returns the result. */
    async updateHedgehogConfig(viewer: Viewer, idOrMe: string, patch: Record<string, unknown>) {
      const user = await findWritable(viewer, idOrMe);
      const merged = { ...((user.hedgehogConfig ?? {}) as Record<string, unknown>), ...patch };
      checkJsonSize(merged, 'hedgehog_config', MAX_HEDGEHOG_CONFIG_BYTES);
      await prisma.user.update({
        where: { id: user.id },
        data: { hedgehogConfig: merged as Prisma.InputJsonValue },
      });
      return merged;
    },

    /** One dashboard per scene: a second entry for the same scene replaces the first. */
    async addScenePersonalisation(viewer: Viewer, idOrMe: string, body: ScenePersonalisationBody) {
      const user = await findWritable(viewer, idOrMe);
      const current = (Array.isArray(user.scenePersonalisation) ? user.scenePersonalisation : []) as {
        scene?: string;
      }[];
      const next = [
        ...current.filter((s) => s?.scene !== body.scene),
        { scene: body.scene, dashboard: body.dashboard },
      ];
      if (next.length > MAX_SCENE_PERSONALISATIONS)
        throw new ValidationError(
          `At most ${MAX_SCENE_PERSONALISATIONS} scenes can be personalised; this user has ${current.length}.`,
          'scene',
          'max_entries',
        );
      await prisma.user.update({ where: { id: user.id }, data: { scenePersonalisation: next } });
      return reload(viewer, user.id);
    },

    /** Stores a fresh pending TOTP secret and returns it with its otpauth:// URL (for the QR code). */
    async start2faSetup(viewer: Viewer, idOrMe: string) {
      const user = await findWritable(viewer, idOrMe);
      if (user.totpEnabled)
        throw new ValidationError('Two-factor authentication is already enabled.', null, 'already_enabled');
      const totp = new TOTP({ issuer: TOTP_ISSUER, label: user.email, secret: new Secret({ size: 20 }) });
      // Stored encrypted (AES-256-GCM), bound to this user's row; shown to the user once here.
      const totpSecret = encryptSecret(totp.secret.base32, keys.totpSecret, totpAssociatedData(user.id));
      await prisma.user.update({ where: { id: user.id }, data: { totpSecret } });
      return { success: true, secret: totp.secret.base32, otpauth_url: totp.toString() };
    },

    /** Confirms setup with a current TOTP code: 2FA is enabled from then on. */
    async validate2fa(viewer: Viewer, idOrMe: string, token: string) {
      const user = await findWritable(viewer, idOrMe);
      if (!user.totpSecret)
        throw new ValidationError('Start two-factor setup first.', null, 'setup_not_started');
      const stored = user.totpSecret;
      const secret = openTotpSecret(stored, keys.totpSecret, totpAssociatedData(user.id));
      if (secret.legacy) {
        // Written in clear before encryption: encrypt it now, unless a new setup replaced it.
        await prisma.user.updateMany({
          where: { id: user.id, totpSecret: stored },
          data: { totpSecret: encryptSecret(secret.base32, keys.totpSecret, totpAssociatedData(user.id)) },
        });
      }
      if (!totpCodeValid(secret.base32, user.email, token))
        throw new ValidationError('Token is not valid.', 'token', 'token_invalid');
      await prisma.user.update({ where: { id: user.id }, data: { totpEnabled: true } });
      return { success: true };
    },

    /** New codes replace ALL previous ones in one transaction; only hashes are stored. */
    async regenerateBackupCodes(viewer: Viewer, idOrMe: string) {
      const user = await findWritable(viewer, idOrMe);
      if (!user.totpEnabled)
        throw new ValidationError('Two-factor authentication is not enabled.', null, '2fa_not_enabled');
      const codes = Array.from({ length: BACKUP_CODE_COUNT }, () => generateBackupCode());
      await prisma.$transaction([
        prisma.twoFactorBackupCode.deleteMany({ where: { userId: user.id } }),
        prisma.twoFactorBackupCode.createMany({
          data: codes.map((c) => ({ userId: user.id, codeHash: hashBackupCode(c, keys.backupCode) })),
        }),
      ]);
      return { backup_codes: codes };
    },
  };
}

/** The plain profile fields of a PATCH, mapped to their columns. */
function profileChanges(body: UserUpdateBody): Prisma.UserUncheckedUpdateInput {
  const data: Prisma.UserUncheckedUpdateInput = {};
  if (body.first_name !== undefined) data.firstName = body.first_name;
  if (body.last_name !== undefined) data.lastName = body.last_name;
  if (body.notification_settings !== undefined)
    data.notificationSettings = body.notification_settings as Prisma.InputJsonValue;
  if (body.anonymize_data !== undefined) data.anonymizeData = body.anonymize_data;
  if (body.toolbar_mode !== undefined) data.toolbarMode = body.toolbar_mode;
  if (body.theme_mode !== undefined) data.themeMode = body.theme_mode;
  if (body.role_at_organization !== undefined) data.roleAtOrganization = body.role_at_organization;
  if (body.events_column_config !== undefined)
    data.eventsColumnConfig = body.events_column_config as Prisma.InputJsonValue;
  if (body.has_seen_product_intro_for !== undefined)
    data.hasSeenProductIntroFor = jsonOrNull(body.has_seen_product_intro_for);
  if (body.hedgehog_config !== undefined) data.hedgehogConfig = jsonOrNull(body.hedgehog_config);
  return data;
}

function checkUserJsonSizes(body: UserUpdateBody): void {
  checkJsonSize(body.hedgehog_config, 'hedgehog_config', MAX_HEDGEHOG_CONFIG_BYTES);
  for (const field of [
    'notification_settings',
    'events_column_config',
    'has_seen_product_intro_for',
  ] as const)
    checkJsonSize(body[field], field, MAX_USER_JSON_BYTES);
}

/** is_staff: only staff change it (a no-op value is accepted from anyone). */
function staffChange(viewer: Viewer, user: UserRow, body: UserUpdateBody): Prisma.UserUncheckedUpdateInput {
  if (body.is_staff === undefined || body.is_staff === user.isStaff) return {};
  if (!viewer.isStaff) throw new ForbiddenError('Only staff users can change is_staff.');
  return { isStaff: body.is_staff };
}

/** 400 when `value` serialises to more than `max` bytes of UTF-8 (undefined/null pass). */
function checkJsonSize(value: unknown, attr: string, max: number): void {
  if (value === undefined || value === null) return;
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > max)
    throw new ValidationError(
      `${attr} may hold at most ${max} bytes of JSON (this would be ${bytes}).`,
      attr,
      'max_length',
    );
}

function jsonOrNull(value: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull {
  return value === null ? Prisma.DbNull : (value as Prisma.InputJsonValue);
}

export type UserService = ReturnType<typeof createUserService>;
