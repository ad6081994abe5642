// The one retry policy of a batch's steps (resolving tokens, the Postgres write, dead letters):
// refused data (and a lost race that keeps coming back) ends the step with a RejectedError for
// the caller to isolate; a stop request or a re-assigned partition ends it with a StoppedError
// (the batch is redelivered); everything else (Postgres, Kafka or Redis down or slow) is retried
// with exponential backoff for as long as it takes, holding the partition without committing.
// While a step retries, its partition is listed in RetryHealth and the worker is not ready.
import type { BatchContext } from '@sett/kafka';
import type { Logger } from '@sett/logger';
import type { IngestionMetrics } from '../metrics';
import { RejectedError, failureKind } from './failure-kind';

/** Which partitions are currently stuck retrying; the worker is not ready while any is. */
export class RetryHealth {
  private readonly failing = new Map<string, string>();
  fail(key: string, why: string): void {
    this.failing.set(key, why);
  }
  recover(key: string): void {
    this.failing.delete(key);
  }
  problems(): string[] {
    return [...this.failing].map(([k, why]) => `${k}: ${why}`);
  }
}

export class StoppedError extends Error {
  override readonly name = 'StoppedError';
}

/** A lost race that keeps coming back is treated as refused data after this many attempts. */
export const MAX_CONFLICT_ATTEMPTS = 5;

/** Data errors only (SQLSTATE 22, 23 except races, 54; our code throwing on an event). */
export function isDataError(error: unknown): boolean {
  return failureKind(error) === 'data';
}

export type RetryOptions = { initialMs?: number; maxMs?: number };

export type RetryPolicy = <T>(
  stage: string,
  key: string,
  ctx: BatchContext,
  fn: () => Promise<T>,
) => Promise<T>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createRetryPolicy(deps: {
  logger: Logger;
  metrics: IngestionMetrics;
  health: RetryHealth;
  retry?: RetryOptions;
}): RetryPolicy {
  const { logger, metrics, health } = deps;
  const initialMs = deps.retry?.initialMs ?? 200;
  const maxMs = deps.retry?.maxMs ?? 10_000;

  /** Runs fn until it succeeds, is refused (RejectedError) or is stopped (StoppedError). */
  return async function untilDone<T>(
    stage: string,
    key: string,
    ctx: BatchContext,
    fn: () => Promise<T>,
  ): Promise<T> {
    let conflicts = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await fn();
        if (attempt > 1) {
          health.recover(key);
          logger.info('batch stage recovered', { stage, partition: key, attempts: attempt });
        }
        return result;
      } catch (error) {
        const kind = failureKind(error);
        if (kind === 'data' || (kind === 'conflict' && ++conflicts >= MAX_CONFLICT_ATTEMPTS)) {
          if (attempt > 1) health.recover(key);
          throw new RejectedError(error as Error);
        }
        const delay = Math.min(maxMs, initialMs * 2 ** Math.min(attempt - 1, 16));
        metrics.retries.inc({ stage });
        health.fail(key, `${stage}: ${(error as Error).message}`);
        logger.warn('batch stage failed; retrying (offsets not committed)', {
          stage,
          partition: key,
          attempt,
          retryInMs: delay,
          error: (error as Error).message,
        });
        // Sleep in slices so a stop request does not wait out a long backoff.
        const until = Date.now() + delay;
        while (Date.now() < until) {
          if (!ctx.isRunning() || ctx.isStale()) {
            health.recover(key);
            throw new StoppedError(`stopped while retrying ${stage}; the batch will be redelivered`);
          }
          await sleep(Math.min(100, until - Date.now()));
        }
      }
    }
  };
}
