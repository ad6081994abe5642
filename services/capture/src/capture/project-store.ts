// The only Postgres read capture makes: a project token's team, on a token cache miss (the
// token resolver keeps it in process and in Redis, so the steady state makes no query). A lookup
// has a deadline of its own: whatever Postgres does (accepts connections and never answers,
// stalls mid-query), the request waiting on it gets an error the handler turns into a 503.
import type { ProjectRef } from '@sett/cache';
import { findProjectByToken, type SqlRunner } from '@sett/db';

export class ProjectLookupTimeoutError extends Error {
  override readonly name = 'ProjectLookupTimeoutError';
}

export function createProjectLoader(
  db: SqlRunner,
  opts: { timeoutMs?: number } = {},
): (token: string) => Promise<ProjectRef | null> {
  const { timeoutMs } = opts;
  if (timeoutMs === undefined) return (token) => findProjectByToken(db, token);
  return (token) => {
    const lookup = findProjectByToken(db, token);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ProjectLookupTimeoutError(`project lookup took longer than ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    // The pool's own timeouts end the abandoned query; its late failure is not unhandled.
    lookup.catch(() => undefined);
    return Promise.race([lookup, deadline]).finally(() => clearTimeout(timer));
  };
}
