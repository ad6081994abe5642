// The only Postgres read capture makes: a project token's team, on a token cache miss (the
// token resolver keeps it in process and in Redis, so the steady state makes no query).
import type { ProjectRef } from '@sett/cache';
import { findProjectByToken, type SqlRunner } from '@sett/db';

export function createProjectLoader(db: SqlRunner): (token: string) => Promise<ProjectRef | null> {
  return (token) => findProjectByToken(db, token);
}
