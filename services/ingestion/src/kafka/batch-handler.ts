// Handles one fetched batch (one partition): prepare every message, send what cannot be
// ingested to the dead letter topic and wait for the acknowledgement, resolve tokens, then
// write the batch in one Postgres transaction. Only when this resolves does the consumer
// runner commit the offsets. One message never stops a partition: an exception while
// preparing it dead-letters that message alone, and when Postgres (or the person and group
// rules) refuse the batch's data, the batch is bisected until the refused events stand alone,
// which are dead-lettered while the rest is stored. Infrastructure failures (Postgres, Kafka,
// Redis down or timing out; lost races) are retried here with backoff for as long as it takes,
// holding the partition, and readiness reports false meanwhile (see pipeline/failure-kind.ts).
// Each batch ends with one info log line: partition, offsets, counts, persons, duration.
import type { Pool } from 'pg';
import type { KafkaMessage } from 'kafkajs';
import type { BatchContext, ConsumerBatch } from '@sett/kafka';
import type { Logger } from '@sett/logger';
import type { IngestionMetrics } from '../metrics';
import { RejectedError, describeFailure, failureKind } from '../pipeline/failure-kind';
import { writeIsolatingRejected } from '../pipeline/isolate-rejected';
import { prepareMessage } from '../pipeline/prepare';
import {
  dlq,
  type DropReason,
  type IngestionWarning,
  type PreparedEvent,
  type StepResult,
  type TeamEvent,
} from '../pipeline/types';
import { writeBatch, type WriteBatchResult } from '../pipeline/write-batch';
import type { TeamSteps } from '../pipeline/team-steps';
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
  /** The batch write (tests inject failures); default writeBatch. */
  writeBatch?: (pool: Pool, events: TeamEvent[]) => Promise<WriteBatchResult>;
  /**
   * Runs once the batch is committed in Postgres, before the consumer commits its Kafka offsets
   * (e.g. publish new group type mappings to Redis). Failures are logged only: a crash here
   * redelivers a batch whose rows are already stored, which is harmless.
   */
  afterPostgresCommit?: (result: WriteBatchResult) => Promise<void>;
  /** Per-project settings (GeoIP, anonymize_ips) before the write, ingested_event after it. */
  teamSteps?: TeamSteps;
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

/** A lost race that keeps coming back is treated as refused data after this many attempts. */
export const MAX_CONFLICT_ATTEMPTS = 5;

/** Data errors only (SQLSTATE 22, 23 except races, 54; our code throwing on an event). */
export function isDataError(error: unknown): boolean {
  return failureKind(error) === 'data';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One batch's messages after decoding: what goes on, and what was dropped or dead-lettered. */
type Triage = {
  prepared: PreparedEvent[];
  byOffset: Map<string, KafkaMessage>;
  dead: DeadLetter[];
  drops: Map<DropReason, number>;
};

const countDrop = (drops: Map<DropReason, number>, reason: DropReason) =>
  drops.set(reason, (drops.get(reason) ?? 0) + 1);

export function createBatchHandler(deps: BatchHandlerDeps) {
  const { logger, metrics, health } = deps;
  const initialMs = deps.retry?.initialMs ?? 200;
  const maxMs = deps.retry?.maxMs ?? 10_000;
  const warnedAt = new Map<IngestionWarning, number>();

  const write = deps.writeBatch ?? writeBatch;

  /**
   * Runs fn until it succeeds. Refused data (and a conflict that keeps coming back) ends it with
   * a RejectedError, a stop request with a StoppedError; everything else is retried.
   */
  async function untilDone<T>(
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

  /** Decodes and validates every message; what cannot be ingested is dropped or dead-lettered. */
  function prepareBatch(batch: ConsumerBatch): Triage {
    const { topic, partition } = batch;
    const t: Triage = { prepared: [], byOffset: new Map(), dead: [], drops: new Map() };
    for (const m of batch.messages) {
      let r: StepResult<PreparedEvent>;
      try {
        r = prepareMessage(m.value, m.offset);
      } catch (error) {
        // A shape nobody foresaw must cost this message only, never the partition.
        r = dlq(`failed to prepare: ${describeFailure(error as Error)}`);
      }
      if (r.kind === 'ok') {
        t.prepared.push(r.value);
        t.byOffset.set(m.offset, m);
      } else if (r.kind === 'drop') countDrop(t.drops, r.reason);
      else t.dead.push({ topic, partition, offset: m.offset, reason: r.reason, value: m.value });
    }
    return t;
  }

  /** Each distinct token resolved once; unknown tokens and repeated uuids are dropped. */
  async function attachTeams(t: Triage, key: string, ctx: BatchContext): Promise<TeamEvent[]> {
    const tokens = [...new Set(t.prepared.map((e) => e.token))];
    const teamIds = await untilDone(
      'resolve_team',
      key,
      ctx,
      async () =>
        new Map(await Promise.all(tokens.map(async (tk) => [tk, await deps.teams.resolve(tk)] as const))),
    );
    const events: TeamEvent[] = [];
    const seen = new Set<string>();
    for (const e of t.prepared) {
      const teamId = teamIds.get(e.token);
      if (teamId === null || teamId === undefined) {
        countDrop(t.drops, 'unknown_token');
        continue;
      }
      // Capture may retry a send: one uuid is one event, the first delivery wins.
      const id = `${teamId}:${e.uuid}`;
      if (seen.has(id)) {
        countDrop(t.drops, 'duplicate_in_batch');
        continue;
      }
      seen.add(id);
      // The prepared event becomes the team event in place: nothing else holds it, and a batch
      // of a few thousand copies is garbage the write does not need.
      const teamEvent = e as TeamEvent;
      teamEvent.teamId = teamId;
      events.push(teamEvent);
    }
    return events;
  }

  /**
   * One write on the happy path; refused data is isolated by bisection (each half retried on
   * infrastructure failures like the whole), and the rows refused alone are dead-lettered.
   */
  async function writeEvents(
    batch: ConsumerBatch,
    t: Triage,
    events: TeamEvent[],
    ctx: BatchContext,
  ): Promise<WriteBatchResult[]> {
    if (events.length === 0) return [];
    const { topic, partition } = batch;
    const key = `${topic}/${partition}`;
    const outcome = await writeIsolatingRejected(
      events,
      (part) => untilDone('postgres', key, ctx, () => write(deps.pool, part)),
      (error) => error instanceof RejectedError,
    );
    if (outcome.rejected.length > 0) {
      const letters = outcome.rejected.map(({ item, error }) => ({
        topic,
        partition,
        offset: item.offset,
        reason: `rejected while writing: ${describeFailure((error as RejectedError).original)}`,
        value: t.byOffset.get(item.offset)?.value ?? null,
      }));
      logger.warn('events refused by Postgres or the person and group rules; dead-lettering them', {
        partition: key,
        events: events.length,
        refused: letters.length,
        writes: outcome.writes,
        firstReason: letters[0]?.reason,
      });
      metrics.isolationWrites.inc(outcome.writes);
      await untilDone('dead_letter', key, ctx, () => deps.sendDeadLetters(letters));
      t.dead.push(...letters);
    }
    return outcome.results;
  }

  /** Counts the writes' outcomes and runs the after-Postgres-commit step for each. */
  async function afterWrites(results: WriteBatchResult[]) {
    const sum = { inserted: 0, alreadyStored: 0, personsCreated: 0, personsUpdated: 0, merges: 0 };
    for (const r of results) {
      sum.inserted += r.inserted;
      sum.alreadyStored += r.alreadyStored;
      sum.personsCreated += r.personsCreated;
      sum.personsUpdated += r.personsUpdated;
      sum.merges += r.merges;
      metrics.alreadyStored.inc(r.alreadyStored);
      metrics.merges.inc(r.merges);
      metrics.refusedMerges.inc(r.refusedMerges);
      metrics.groupTypeLimit.inc(r.groupTypeLimited);
      if (deps.afterPostgresCommit)
        await deps
          .afterPostgresCommit(r)
          .catch((error: Error) =>
            logger.warn('after-Postgres-commit step failed', { error: error.message }),
          );
    }
    return sum;
  }

  /** Stored: count, log the batch's line, and run the after-Postgres-commit step. */
  async function finishBatch(
    batch: ConsumerBatch,
    t: Triage,
    events: TeamEvent[],
    results: WriteBatchResult[],
    started: bigint,
  ): Promise<void> {
    const { topic, partition } = batch;
    for (const e of events) if (e.warnings.length > 0) noteWarnings(e);
    let dropped = 0;
    for (const [reason, n] of t.drops) {
      metrics.drops.inc({ reason }, n);
      dropped += n;
    }
    if (t.dead.length > 0) {
      metrics.deadLetters.inc({ topic }, t.dead.length);
      logger.warn('messages sent to the dead letter topic', {
        partition: `${topic}/${partition}`,
        count: t.dead.length,
        firstReason: t.dead[0]?.reason,
      });
    }
    const sum = await afterWrites(results);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    metrics.events.inc({ topic }, sum.inserted);
    metrics.batchSize.observe({ topic }, batch.messages.length);
    metrics.batchDuration.observe({ topic }, seconds);
    logger.info('batch ingested', {
      topic,
      partition,
      firstOffset: batch.messages[0]?.offset,
      lastOffset: batch.messages.at(-1)?.offset,
      messages: batch.messages.length,
      stored: sum.inserted,
      alreadyStored: sum.alreadyStored,
      dropped,
      deadLettered: t.dead.length,
      personsCreated: sum.personsCreated,
      personsUpdated: sum.personsUpdated,
      merges: sum.merges,
      durationMs: Math.round(seconds * 1000),
    });
  }

  return async function handleBatch(batch: ConsumerBatch, ctx: BatchContext): Promise<void> {
    const started = process.hrtime.bigint();
    const key = `${batch.topic}/${batch.partition}`;
    const triage = prepareBatch(batch);
    if (triage.dead.length > 0) {
      const dead = [...triage.dead];
      await untilDone('dead_letter', key, ctx, () => deps.sendDeadLetters(dead));
    }
    const events = await attachTeams(triage, key, ctx);
    const steps = deps.teamSteps;
    if (steps && events.length > 0)
      await untilDone('team_settings', key, ctx, () => steps.beforeWrite(events));
    const results = await writeEvents(batch, triage, events, ctx);
    if (steps && results.length > 0)
      await steps
        .afterWrite(events)
        .catch((error: Error) => logger.warn('could not set ingested_event', { error: error.message }));
    await finishBatch(batch, triage, events, results, started);
  };
}
