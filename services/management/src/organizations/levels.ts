// Membership levels, PostHog's numbers, and the rules that protect an organization's owners:
// owners are changed (level, removal) only by owners, nobody changes their own level, and an
// organization never loses its last owner. Every write that could remove an owner locks the
// organization rows first (lockOrganizations), so two such writes cannot both pass the check.
import type { Prisma } from '@sett/db';

export const MEMBER_LEVEL = 1;
export const ADMIN_LEVEL = 8;
export const OWNER_LEVEL = 15;
export const LEVELS = [MEMBER_LEVEL, ADMIN_LEVEL, OWNER_LEVEL] as const;

/** Row locks on these organizations until the transaction ends, in a fixed order (no deadlock). */
export async function lockOrganizations(tx: Prisma.TransactionClient, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.$queryRawUnsafe('SELECT id FROM organizations WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', [
    ...ids,
  ]);
}

/** Organizations among `ids` where `userId` is the only owner (checked under lockOrganizations). */
export async function soleOwnerOf(
  tx: Prisma.TransactionClient,
  userId: number,
  ids: readonly string[],
): Promise<{ id: string; name: string }[]> {
  if (ids.length === 0) return [];
  return tx.$queryRawUnsafe<{ id: string; name: string }[]>(
    `SELECT o.id, o.name FROM organizations o
     JOIN organization_memberships m ON m.organization_id = o.id AND m.user_id = $1 AND m.level >= ${OWNER_LEVEL}
     WHERE o.id = ANY($2::uuid[])
       AND NOT EXISTS (SELECT 1 FROM organization_memberships x
                       WHERE x.organization_id = o.id AND x.level >= ${OWNER_LEVEL} AND x.user_id <> $1)
     ORDER BY o.name`,
    userId,
    [...ids],
  );
}
