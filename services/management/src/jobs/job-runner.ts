// Runs background jobs inside the management service: one job at a time per process, claimed
// from background_jobs (job-store.ts) so any number of replicas share the queue. Each handler
// works in bounded steps and calls `step()` between them, which renews the lease, records
// progress and stops the handler when the process is shutting down (the job is then released
// for another runner at once, not left to its lease). Before claiming, the runner schedules the
// periodic work (retention, purges of deleted projects) through `schedule`, at most once per
// scheduleIntervalMs; the dedupe keys keep that idempotent across replicas.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Logger } from '@sett/logger';
import {
  claimJob,
  failJob,
  finishJob,
  LeaseLostError,
  renewLease,
  requeueJob,
  type JobRow,
} from './job-store';
import type { JobOutcomeLabel } from './job-metrics';

export interface JobContext {
  pool: pg.Pool;
  logger: Logger;
  /** Renews the lease and saves progress; throws when the runner is stopping or lost the lease. */
  step(progress: Record<string, unknown>): Promise<void>;
}

/** done: the job succeeded; later: run the job again at runAfter (a next phase). */
export type JobOutcome =
  | { kind: 'done'; progress: Record<string, unknown> }
  | { kind: 'later'; runAfter: Date; progress: Record<string, unknown> };

export type JobHandler = (job: JobRow, ctx: JobContext) => Promise<JobOutcome>;

export interface JobRunnerOptions {
  pool: pg.Pool;
  logger: Logger;
  handlers: Record<string, JobHandler>;
  /** Enqueues periodic jobs; errors are logged and retried at the next interval. */
  schedule?: (pool: pg.Pool) => Promise<void>;
  pollIntervalMs?: number;
  scheduleIntervalMs?: number;
  leaseMs?: number;
  workerId?: string;
  /** Retry delay after a failed attempt: base * 2^(attempts-1), capped at 10 minutes. */
  retryBaseMs?: number;
  /** Told what each claimed attempt came to and how long it took (job-metrics.ts). */
  onAttempt?: (kind: string, outcome: JobOutcomeLabel, seconds: number) => void;
}

export interface JobRunner {
  start(): void;
  /** Stops claiming; the running job stops at its next step and is released. */
  stop(): Promise<void>;
  /** Polls now (after an enqueue in this process), instead of at the next interval. */
  wake(): void;
  readonly workerId: string;
}

class StoppingError extends Error {
  override readonly name = 'StoppingError';
}

export function createJobRunner(opts: JobRunnerOptions): JobRunner {
  const { pool, logger } = opts;
  const pollIntervalMs = opts.pollIntervalMs ?? 1000;
  const scheduleIntervalMs = opts.scheduleIntervalMs ?? 60_000;
  const leaseMs = opts.leaseMs ?? 60_000;
  const retryBaseMs = opts.retryBaseMs ?? 5_000;
  const workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let running = false;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let lastSchedule = 0;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      wakeUp = resolve;
      timer = setTimeout(resolve, ms);
    }).finally(() => {
      clearTimeout(timer);
      wakeUp = undefined;
    });

  async function runOne(): Promise<boolean> {
    if (opts.schedule && Date.now() - lastSchedule >= scheduleIntervalMs) {
      lastSchedule = Date.now();
      await opts
        .schedule(pool)
        .catch((err) => logger.warn('scheduling background jobs failed', { err: (err as Error).message }));
    }
    const job = await claimJob(pool, workerId, leaseMs);
    if (!job) return false;
    const handler = opts.handlers[job.kind];
    if (!handler) {
      await failJob(pool, job, workerId, `no handler for job kind "${job.kind}"`);
      opts.onAttempt?.(job.kind, 'failed', 0);
      return true;
    }
    if (job.attempts > job.max_attempts) {
      await failJob(pool, job, workerId, job.last_error ?? 'too many attempts');
      opts.onAttempt?.(job.kind, 'failed', 0);
      return true;
    }
    let progress: Record<string, unknown> = job.progress ?? {};
    const ctx: JobContext = {
      pool,
      logger,
      async step(p) {
        progress = p;
        if (stopping) throw new StoppingError('runner is stopping');
        await renewLease(pool, job, workerId, leaseMs, p);
      },
    };
    const started = Date.now();
    const attempt = (outcome: JobOutcomeLabel) =>
      opts.onAttempt?.(job.kind, outcome, (Date.now() - started) / 1000);
    try {
      const outcome = await handler(job, ctx);
      if (outcome.kind === 'done') await finishJob(pool, job, workerId, outcome.progress);
      else await requeueJob(pool, job, workerId, outcome.runAfter, outcome.progress, { resetAttempts: true });
      attempt(outcome.kind === 'done' ? 'succeeded' : 'later');
      logger.info('background job step done', {
        job: job.id,
        kind: job.kind,
        outcome: outcome.kind,
        ms: Date.now() - started,
      });
    } catch (err) {
      if (err instanceof LeaseLostError) {
        attempt('lease_lost');
        logger.warn('background job lease lost', { job: job.id, kind: job.kind });
      } else if (err instanceof StoppingError) {
        attempt('released');
        // Back in the queue with its progress: the next runner continues where this one stopped.
        await requeueJob(pool, job, workerId, new Date(), progress);
      } else {
        attempt(job.attempts >= job.max_attempts ? 'failed' : 'retry');
        const message = (err as Error).message ?? String(err);
        logger.warn('background job failed', {
          job: job.id,
          kind: job.kind,
          attempt: job.attempts,
          err: message,
        });
        if (job.attempts >= job.max_attempts) await failJob(pool, job, workerId, message);
        else {
          const delay = Math.min(retryBaseMs * 2 ** (job.attempts - 1), 600_000);
          await requeueJob(pool, job, workerId, new Date(Date.now() + delay), progress, { error: message });
        }
      }
    }
    return true;
  }

  async function run(): Promise<void> {
    while (!stopping) {
      let worked = false;
      try {
        worked = await runOne();
      } catch (err) {
        // Postgres unreachable or too slow: try again after the poll interval.
        logger.warn('background job runner error', { err: (err as Error).message });
      }
      if (!worked && !stopping) await sleep(pollIntervalMs);
    }
  }

  return {
    workerId,
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    async stop() {
      stopping = true;
      wakeUp?.();
      await loop;
    },
    wake() {
      wakeUp?.();
    },
  };
}
