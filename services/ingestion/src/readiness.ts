// What /_ready checks in ingestion: Postgres answers, and one check per consumer group, named
// after it (`consumer:<groupId>`), failing while the group is not consuming (crashed,
// restarting, not joined yet, broker unreachable) or has a partition stuck retrying. Each
// check turns green again by itself once the group consumes.
import type { Pool } from 'pg';
import type { IngestionWorker } from './worker';

export function ingestionReadiness(
  worker: Pick<IngestionWorker, 'plans' | 'groupProblems'>,
  pool: Pick<Pool, 'query'>,
): Record<string, () => Promise<void>> {
  const checks: Record<string, () => Promise<void>> = {
    postgres: async () => void (await pool.query('SELECT 1')),
  };
  for (const { groupId } of worker.plans)
    checks[`consumer:${groupId}`] = async () => {
      const problems = worker.groupProblems(groupId);
      if (problems.length > 0) throw new Error(problems.join('; '));
    };
  return checks;
}
