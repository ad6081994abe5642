// The management service's background jobs in one place: which kinds exist, their handlers and
// the periodic schedule (retention every retentionIntervalMs, definition volumes every
// definitionVolumesIntervalMs, a purge per soft-deleted project; expired browser sessions are
// deleted on each scheduling pass).
// main.ts starts the runner; tests build one with short intervals.
import type pg from 'pg';
import type { Logger } from '@sett/logger';
import type { prom } from '@sett/http';
import { createJobMetrics } from './job-metrics';
import { createJobRunner, type JobRunner } from './job-runner';
import { personDeletionJob } from './person-deletion-job';
import { projectPurgeJob, PROJECT_PURGE_JOB, schedulePurges } from './project-purge-job';
import { PERSON_DELETION_JOB } from '../persons/person-deletion';
import { RETENTION_JOB, retentionJob } from '../retention/retention-job';
import {
  DEFINITION_VOLUMES_JOB,
  definitionVolumesJob,
  scheduleDefinitionVolumes,
} from '../definitions/definition-volumes-job';
import { purgeExpiredSessions } from '../sessions/session-store';

export interface BackgroundJobsConfig {
  pollIntervalMs: number;
  leaseMs: number;
  retentionIntervalMs: number;
  /** How often event definitions' volume_30_day is recounted (default an hour). */
  definitionVolumesIntervalMs?: number;
  /** How long after a person deletion the sweep for events still in Kafka runs. */
  personDeletionSettleMs: number;
  /** Monthly events partitions kept ahead of the current month. */
  partitionMonthsAhead?: number;
  workerId?: string;
  retryBaseMs?: number;
}

/** Queues a retention run unless one is queued, running, or finished within the interval. */
export async function scheduleRetention(pool: pg.Pool, intervalMs: number): Promise<void> {
  await pool.query(
    `INSERT INTO background_jobs (kind, dedupe_key)
     SELECT '${RETENTION_JOB}', '${RETENTION_JOB}'
      WHERE NOT EXISTS (SELECT 1 FROM background_jobs
                         WHERE kind = '${RETENTION_JOB}' AND state = 'succeeded'
                           AND finished_at > now() - $1 * interval '1 millisecond')
     ON CONFLICT (dedupe_key) DO NOTHING`,
    [intervalMs],
  );
}

export const JOB_KINDS = [RETENTION_JOB, PERSON_DELETION_JOB, PROJECT_PURGE_JOB, DEFINITION_VOLUMES_JOB];

export function createBackgroundJobs(opts: {
  pool: pg.Pool;
  logger: Logger;
  config: BackgroundJobsConfig;
  /** Where the jobs' metrics go (job-metrics.ts); none without it. */
  registry?: prom.Registry;
}): JobRunner {
  const { config } = opts;
  const volumesIntervalMs = config.definitionVolumesIntervalMs ?? 3_600_000;
  const metrics = opts.registry
    ? createJobMetrics({
        registry: opts.registry,
        pool: opts.pool,
        logger: opts.logger,
        kinds: JOB_KINDS,
        periods: {
          [RETENTION_JOB]: config.retentionIntervalMs / 1000,
          [DEFINITION_VOLUMES_JOB]: volumesIntervalMs / 1000,
        },
      })
    : undefined;
  return createJobRunner({
    onAttempt: metrics ? (kind, outcome, seconds) => metrics.observe(kind, outcome, seconds) : undefined,
    pool: opts.pool,
    logger: opts.logger,
    pollIntervalMs: config.pollIntervalMs,
    leaseMs: config.leaseMs,
    workerId: config.workerId,
    retryBaseMs: config.retryBaseMs,
    scheduleIntervalMs: Math.min(config.retentionIntervalMs, volumesIntervalMs, 60_000),
    handlers: {
      [PERSON_DELETION_JOB]: personDeletionJob({ settleMs: config.personDeletionSettleMs }),
      [RETENTION_JOB]: retentionJob({ monthsAhead: config.partitionMonthsAhead }),
      [PROJECT_PURGE_JOB]: projectPurgeJob(),
      [DEFINITION_VOLUMES_JOB]: definitionVolumesJob(),
    },
    schedule: async (pool) => {
      await scheduleRetention(pool, config.retentionIntervalMs);
      await schedulePurges(pool);
      await scheduleDefinitionVolumes(pool, volumesIntervalMs);
      await purgeExpiredSessions(pool);
    },
  });
}
