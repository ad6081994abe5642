// Prometheus metrics of the background jobs (retention, person deletions, project purges).
// Per process: attempts by outcome and their duration. From Postgres at scrape time (one query,
// the same answer on every replica, so alerts take max by kind): the last success of each kind
// as a Unix timestamp, the jobs due now and not yet claimed, and how long the oldest due job has
// waited to finish its current phase (queued or running), which is what "stuck" means here. The
// period of each periodic kind is exported too, so the alert "no success in two periods" follows
// the configured interval.
import type pg from 'pg';
import { prom } from '@sett/http';
import type { Logger } from '@sett/logger';

/** What one claimed attempt of a job came to (job-runner.ts). */
export const JOB_OUTCOMES = ['succeeded', 'later', 'retry', 'failed', 'released', 'lease_lost'] as const;
export type JobOutcomeLabel = (typeof JOB_OUTCOMES)[number];

export type JobMetrics = {
  observe(kind: string, outcome: JobOutcomeLabel, seconds: number): void;
};

/** A scrape waits at most this long for Postgres; the database-derived gauges are left out then. */
const COLLECT_TIMEOUT_MS = 2_000;

export function createJobMetrics(opts: {
  registry: prom.Registry;
  pool: Pick<pg.Pool, 'query'>;
  logger: Logger;
  kinds: string[];
  /** Seconds between scheduled runs, for the periodic kinds (retention). */
  periods: Record<string, number>;
}): JobMetrics {
  const registers = [opts.registry];
  const runs = new prom.Counter({
    name: 'sett_background_job_runs_total',
    help: 'Background job attempts by kind and outcome (succeeded, later: a phase done, retry, failed, released at shutdown, lease_lost)',
    labelNames: ['kind', 'outcome'],
    registers,
  });
  const duration = new prom.Histogram({
    name: 'sett_background_job_duration_seconds',
    help: 'Time one attempt of a background job took, by kind',
    labelNames: ['kind'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers,
  });
  // Exported at 0 from the start, so increase() sees the first failure.
  for (const kind of opts.kinds) for (const outcome of JOB_OUTCOMES) runs.inc({ kind, outcome }, 0);

  const period = new prom.Gauge({
    name: 'sett_background_job_period_seconds',
    help: 'Seconds between scheduled runs of a periodic background job kind',
    labelNames: ['kind'],
    registers,
  });
  for (const [kind, seconds] of Object.entries(opts.periods)) period.set({ kind }, seconds);

  type Row = { kind: string; last_success: number | null; queued: number; oldest_due: number };
  let latest: Promise<Row[] | null> | null = null;
  // One query serves the three gauges of one scrape.
  const read = (): Promise<Row[] | null> => {
    latest ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const query = opts.pool.query<Row>(
          `SELECT kind,
                  extract(epoch FROM max(finished_at) FILTER (WHERE state = 'succeeded'))::float8 AS last_success,
                  (count(*) FILTER (WHERE state = 'queued' AND run_after <= now()))::int AS queued,
                  coalesce(extract(epoch FROM now() - min(run_after)
                    FILTER (WHERE state IN ('queued', 'running') AND run_after <= now())), 0)::float8 AS oldest_due
             FROM background_jobs GROUP BY kind`,
        );
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('timed out')), COLLECT_TIMEOUT_MS);
        });
        return (await Promise.race([query, timeout])).rows;
      } catch (error) {
        opts.logger.debug('background job metrics unavailable', { error: (error as Error).message });
        return null;
      } finally {
        clearTimeout(timer);
        setImmediate(() => (latest = null));
      }
    })();
    return latest;
  };
  const fromDatabase = (
    { name, help }: { name: string; help: string },
    value: (r: Row | undefined) => number,
  ) =>
    new prom.Gauge({
      name,
      help,
      labelNames: ['kind'],
      registers,
      async collect() {
        const rows = await read();
        this.reset();
        if (!rows) return;
        const byKind = new Map(rows.map((r) => [r.kind, r]));
        for (const kind of new Set([...opts.kinds, ...byKind.keys()]))
          this.set({ kind }, value(byKind.get(kind)));
      },
    });
  fromDatabase(
    {
      name: 'sett_background_job_last_success_timestamp_seconds',
      help: 'Unix time the last job of this kind succeeded (0: never)',
    },
    (r) => r?.last_success ?? 0,
  );
  fromDatabase(
    { name: 'sett_background_jobs_queued', help: 'Jobs due now and not yet claimed, by kind' },
    (r) => r?.queued ?? 0,
  );
  fromDatabase(
    {
      name: 'sett_background_job_oldest_due_seconds',
      help: 'How long the oldest due job of this kind has waited to finish its current phase (queued or running); 0 when none is due',
    },
    (r) => r?.oldest_due ?? 0,
  );

  return {
    observe(kind, outcome, seconds) {
      runs.inc({ kind, outcome });
      duration.observe({ kind }, seconds);
    },
  };
}
