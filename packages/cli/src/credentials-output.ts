// How `pnpm start` hands over the keys it just created without leaving a secret in a log.
// On an interactive terminal the personal API key is shown in full, once. When stdout is not a
// terminal (a pipe, a file, a service manager's journal) the keys go to a file only its owner
// can read (0600, in a 0700 directory) and the output shows the personal key masked and names
// the file. The project API key (phc_) is public by design (browsers send it with every event),
// so it is printed either way. The first user's console password goes the same way as the key.
import fs from 'node:fs';
import path from 'node:path';
import { maskKey } from '@sett/keys';

export interface NewCredentials {
  project_id: number;
  project_api_key: string;
  personal_api_key: string;
  user_uuid: string;
  /** The console sign-in of the first user (`pnpm start` on an empty instance). */
  email?: string;
  console_password?: string;
}

export interface CredentialsOutputOptions {
  /** process.stdout.isTTY of the process printing. */
  interactive: boolean;
  /** Where the file goes when not interactive (e.g. <repo>/.sett/credentials.json). */
  file: string;
  now?: () => Date;
}

/**
 * Writes `value` as JSON to `file`, readable and writable by its owner only, replacing any
 * earlier content. The mode is set on the open descriptor before anything is written, so an
 * existing file that was wider open never holds the new secret with its old mode.
 */
export function writeOwnerOnlyFile(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
  } finally {
    fs.closeSync(fd);
  }
}

/** The lines to print about freshly created credentials; writes the file when not interactive. */
export function presentCredentials(creds: NewCredentials, opts: CredentialsOutputOptions): string[] {
  const lines = [
    `  project id         ${creds.project_id}`,
    `  project API key    ${creds.project_api_key}   (SDKs: api_key)`,
  ];
  const email = creds.email ? `   (sign in to the console as ${creds.email})` : '';
  if (opts.interactive) {
    lines.push(`  personal API key   ${creds.personal_api_key}   (Authorization: Bearer …; shown only now)`);
    if (creds.console_password)
      lines.push(`  console password   ${creds.console_password}${email}; shown only now`);
    return lines;
  }
  writeOwnerOnlyFile(opts.file, {
    ...creds,
    created_at: (opts.now?.() ?? new Date()).toISOString(),
  });
  lines.push(
    `  personal API key   ${maskKey(creds.personal_api_key)}   (stdout is not a terminal: the full key is in ${opts.file}, readable only by its owner)`,
  );
  if (creds.console_password) lines.push(`  console password   in ${opts.file}${email}`);
  return lines;
}

/**
 * What `pnpm start` says when the database already had a user (no key was created): the
 * project's token and the exact command that makes a personal API key for the first user.
 */
export function existingStackLines(existing: {
  project_id: number;
  project_api_key: string;
  user_uuid: string;
  email?: string;
}): string[] {
  return [
    ...(existing.email
      ? [
          `  console sign-in: ${existing.email} (a password for it: pnpm sett users set-password --email ${existing.email})`,
        ]
      : []),
    `  project id ${existing.project_id}, project API key ${existing.project_api_key}`,
    `  (a personal API key for the first user: pnpm sett keys create --user ${existing.user_uuid} --scopes "*";`,
    '   every user, key and project: pnpm sett users list, pnpm sett keys list, pnpm sett projects list)',
  ];
}
