// Handles one fetched batch (one partition): prepare every message, send what cannot be
// ingested to the dead letter topic and wait for the acknowledgement, resolve tokens, then
// write the batch in one Postgres transaction. Only when this resolves does the consumer
// runner commit the offsets. Infrastructure failures (Postgres, Kafka, Redis down; lost
// races) are retried here with backoff for as long as it takes, holding the partition, and
// readiness reports false meanwhile. Postgres rejecting the data itself (a data exception) is
// not retried forever: the batch is written event by event and the rejected events are
// dead-lettered, so one bad event never blocks a partition.
import type { Pool } from 'pg';
import type { KafkaMessage } from 'kafkajs';
import type { BatchContext, ConsumerBatch } from '@sett/kafka';
import type { Logger } from '@sett/logger';
import type { IngestionMetrics } from '../metrics';
import { prepareMessage } from '../pipeline/prepare';
import type { IngestionWarning, PreparedEvent, TeamEvent } from '../pipeline/types';
import { writeBatch, type WriteBatchResult } from '../pipeline/write-batch';
import type { TeamResolver } from '../teams/team-resolver';

export type DeadLetter = {
  topic: string;
  partition: number;
  offset: string;
  reason: string;
  value: Buffer | null;
};

export type BatchHandlerDeps = {
  pool: Pool;
  teams: TeamResolver;
  /** Resolves once the dead letters are acknowledged by Kafka. */
  sendDeadLetters: (letters: DeadLetter[]) => Promise<void>;
  logger: Logger;
  metrics: IngestionMetrics;
  health: RetryHealth;
  retry?: { initialMs?: number; maxMs?: number };
  /** Runs after the commit (e.g. publish new group type mappings); failures are logged only. */
  afterCommit?: (result: WriteBatchResult) => Promise<void>;
};

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

class StoppedError extends Error {
  override readonly name = 'StoppedError';
}

// SQLSTATE classes where retrying the same data cannot help: 22 data exception, 54 program
// limit exceeded (e.g. an index row too large), and NOT NULL / CHECK violations.
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || code.length !== 5) return false;
  return code.startsWith('22') || code.startsWith('54') || code === '23502' || code === '23514';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createBatchHandler(deps: BatchHandlerDeps) {
  const { logger, metrics, health } = deps;
  const initialMs = deps.retry?.initialMs ?? 200;
  const maxMs = deps.retry?.maxMs ?? 10_000;
  const warnedAt = new Map<IngestionWarning, number>();

  /** Runs fn until it succeeds; data errors and stop requests end it with a throw. */
  async function untilDone<T>(
    stage: string,
    key: string,
    ctx: BatchContext,
    fn: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await fn();
        if (attempt > 1) {
          health.recover(key);
          logger.info('batch stage recovered', { stage, partition: key, attempts: attempt });
        }
        return result;
      } catch (error) {
        if (isDataError(error)) throw error;
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
  }

  function noteWarnings(e: PreparedEvent) {
    for (const w of e.warnings) {
      metrics.warnings.inc({ type: w });
      // Logged at most every 10 s per type: a misconfigured client must not flood the logs.
      const last = warnedAt.get(w) ?? 0;
      if (Date.now() - last > 10_000) {
        warnedAt.set(w, Date.now());
        logger.warn('event ingested with a warning', {
          warning: w,
          uuid: e.uuid,
          event: e.event,
          timestamp: e.timestamp,
        });
      }
    }
  }

  return async function handleBatch(batch: ConsumerBatch, ctx: BatchContext): Promise<void> {
    const started = process.hrtime.bigint();
    const { topic, partition } = batch;
    const key = `${topic}/${partition}`;
    const byOffset = new Map<string, KafkaMessage>();
    const prepared: PreparedEvent[] = [];
    const dead: DeadLetter[] = [];
    const drops = new Map<string, number>();
    const dropped = (reason: string) => drops.set(reason, (drops.get(reason) ?? 0) + 1);

    for (const m of batch.messages) {
      const r = prepareMessage(m.value, m.offset);
      if (r.kind === 'ok') {
        prepared.push(r.value);
        byOffset.set(m.offset, m);
      } else if (r.kind === 'drop') dropped(r.reason);
      else dead.push({ topic, partition, offset: m.offset, reason: r.reason, value: m.value });
    }

    if (dead.length > 0) await untilDone('dead_letter', key, ctx, () => deps.sendDeadLetters(dead));

    // Tokens: each distinct token once per batch.
    const tokens = [...new Set(prepared.map((e) => e.token))];
    const teamIds = await untilDone(
      'resolve_team',
      key,
      ctx,
      async () =>
        new Map(await Promise.all(tokens.map(async (t) => [t, await deps.teams.resolve(t)] as const))),
    );
    const events: TeamEvent[] = [];
    const seen = new Set<string>();
    for (const e of prepared) {
      const teamId = teamIds.get(e.token);
      if (teamId === null || teamId === undefined) {
        dropped('unknown_token');
        continue;
      }
      // Capture may retry a send: one uuid is one event, the first delivery wins.
      const id = `${teamId}:${e.uuid}`;
      if (seen.has(id)) {
        dropped('duplicate_in_batch');
        continue;
      }
      seen.add(id);
      events.push({ ...e, teamId });
    }

    const results: WriteBatchResult[] = [];
    if (events.length > 0) {
      try {
        results.push(await untilDone('postgres', key, ctx, () => writeBatch(deps.pool, events)));
      } catch (error) {
        if (!isDataError(error)) throw error;
        logger.warn('Postgres rejected data in a batch; writing it event by event', {
          partition: key,
          error: (error as Error).message,
        });
        for (const e of events) {
          try {
            results.push(await untilDone('postgres', key, ctx, () => writeBatch(deps.pool, [e])));
          } catch (single) {
            if (!isDataError(single)) throw single;
            const letter = {
              topic,
              partition,
              offset: e.offset,
              reason: `rejected by Postgres: ${(single as Error).message}`,
              value: byOffset.get(e.offset)?.value ?? null,
            };
            await untilDone('dead_letter', key, ctx, () => deps.sendDeadLetters([letter]));
            dead.push(letter);
          }
        }
      }
    }

    // Committed: count, and tell Redis about new group types.
    for (const e of events) noteWarnings(e);
    for (const [reason, n] of drops) metrics.drops.inc({ reason }, n);
    if (dead.length > 0) {
      metrics.deadLetters.inc({ topic }, dead.length);
      logger.warn('messages sent to the dead letter topic', {
        partition: key,
        count: dead.length,
        firstReason: dead[0]?.reason,
      });
    }
    let inserted = 0;
    for (const r of results) {
      inserted += r.inserted;
      metrics.alreadyStored.inc(r.alreadyStored);
      metrics.merges.inc(r.merges);
      metrics.refusedMerges.inc(r.refusedMerges);
      metrics.groupTypeLimit.inc(r.groupTypeLimited);
      if (deps.afterCommit)
        await deps
          .afterCommit(r)
          .catch((error: Error) => logger.warn('after-commit step failed', { error: error.message }));
    }
    metrics.events.inc({ topic }, inserted);
    metrics.batchSize.observe({ topic }, batch.messages.length);
    metrics.batchDuration.observe({ topic }, Number(process.hrtime.bigint() - started) / 1e9);
  };
}
