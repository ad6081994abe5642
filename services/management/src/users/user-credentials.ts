// Credentials at rest for users: checking a password (and re-hashing one made with weaker scrypt
// parameters), consuming a backup code (one UPDATE by keyed hash, no per-row slow hash), and the
// start-up pass that encrypts TOTP secrets and re-keys backup codes written before they were
// protected. Every rewrite is conditional on the old value, so a concurrent change always wins.
import { Secret, TOTP } from 'otpauth';
import type { PrismaClient } from '@sett/db';
import { ServiceUnavailableError } from '@sett/http';
import {
  PasswordHashingBusyError,
  backupCodeLookupHashes,
  checkPassword,
  encryptSecret,
  hashPassword,
  isEncryptedSecret,
  openTotpSecret,
  upgradeLegacyBackupCodeHash,
  type CredentialKeys,
} from '@sett/keys';

/** The issuer authenticator apps show next to the code. */
export const TOTP_ISSUER = 'Sett';

/** Associated data of a user's encrypted TOTP secret: a copy on another row does not decrypt. */
export function totpAssociatedData(userId: number): string {
  return `sett:user:${userId}:totp`;
}

/** Whether `token` is the TOTP code of the secret now (one 30 s step either way of slack). */
export function totpCodeValid(base32Secret: string, label: string, token: string): boolean {
  const totp = new TOTP({ issuer: TOTP_ISSUER, label, secret: Secret.fromBase32(base32Secret) });
  return totp.validate({ token, window: 1 }) !== null;
}

/** Password hashing is bounded per process (see @sett/keys password.ts): beyond it, 503. */
export async function withPasswordHashing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof PasswordHashingBusyError)
      throw new ServiceUnavailableError('Too many password checks in progress, retry shortly.', 1);
    throw err;
  }
}

export function createUserCredentials(prisma: PrismaClient, keys: CredentialKeys) {
  /** Re-keys one user's legacy unsalted backup code hashes (codes themselves are not needed). */
  async function upgradeBackupCodes(where: { userId?: number }): Promise<number> {
    const legacy = await prisma.twoFactorBackupCode.findMany({
      where: { ...where, codeHash: { startsWith: 'sha256$' } },
      select: { id: true, codeHash: true },
    });
    let upgraded = 0;
    for (const row of legacy) {
      const codeHash = upgradeLegacyBackupCodeHash(row.codeHash, keys.backupCode);
      if (!codeHash) continue;
      const res = await prisma.twoFactorBackupCode.updateMany({
        where: { id: row.id, codeHash: row.codeHash },
        data: { codeHash },
      });
      upgraded += res.count;
    }
    return upgraded;
  }

  return {
    /**
     * True when `password` matches the user's stored hash. A hash made with weaker scrypt
     * parameters is replaced by a current one (unless the password changed meanwhile).
     */
    async verifyPassword(userId: number, password: string): Promise<boolean> {
      const user = await prisma.user.findUnique({ where: { id: userId }, select: { password: true } });
      if (!user?.password) return false;
      const stored = user.password;
      const { valid, needsRehash } = await withPasswordHashing(() => checkPassword(password, stored));
      if (valid && needsRehash) {
        const upgraded = await withPasswordHashing(() => hashPassword(password));
        await prisma.user.updateMany({
          where: { id: userId, password: stored },
          data: { password: upgraded },
        });
      }
      return valid;
    },

    /**
     * Consumes one unused backup code: true at most once per code, even under concurrent
     * requests (one conditional UPDATE). Legacy unsalted hashes are still accepted; the user's
     * remaining legacy hashes are re-keyed afterwards.
     */
    async useBackupCode(userId: number, code: string): Promise<boolean> {
      const used = await prisma.twoFactorBackupCode.updateMany({
        where: { userId, usedAt: null, codeHash: { in: backupCodeLookupHashes(code, keys.backupCode) } },
        data: { usedAt: new Date() },
      });
      await upgradeBackupCodes({ userId });
      return used.count > 0;
    },

    /**
     * Start-up pass: encrypts every plaintext TOTP secret and re-keys every legacy backup code
     * hash. Idempotent; rows written meanwhile by an older replica are caught on next use or at
     * the next start.
     */
    async protectLegacyCredentials(): Promise<{
      totpSecrets: number;
      backupCodes: number;
      unreadable: number;
    }> {
      const users = await prisma.user.findMany({
        where: { totpSecret: { not: null }, NOT: { totpSecret: { startsWith: 'v1:' } } },
        select: { id: true, totpSecret: true },
      });
      let totpSecrets = 0;
      let unreadable = 0;
      for (const u of users) {
        const stored = u.totpSecret!;
        if (isEncryptedSecret(stored)) continue;
        let base32: string;
        try {
          base32 = openTotpSecret(stored, keys.totpSecret).base32;
        } catch {
          // Neither base32 nor encrypted: left alone (validate_2fa answers 500 for it), counted.
          unreadable++;
          continue;
        }
        const res = await prisma.user.updateMany({
          where: { id: u.id, totpSecret: stored },
          data: { totpSecret: encryptSecret(base32, keys.totpSecret, totpAssociatedData(u.id)) },
        });
        totpSecrets += res.count;
      }
      return { totpSecrets, backupCodes: await upgradeBackupCodes({}), unreadable };
    },
  };
}

export type UserCredentials = ReturnType<typeof createUserCredentials>;
