// Runs one fetched batch (one partition) through ingestion's steps, in order:
// 1. prepare: decode and validate every message; what cannot be ingested is dropped or
//    dead-lettered (an exception while preparing one message dead-letters that message alone),
//    and the dead letters are acknowledged by Kafka before anything else happens;
// 2. attach teams: each distinct token resolved once; unknown tokens and repeated uuids dropped;
//    then the projects' settings (GeoIP, anonymize_ips; team-steps.ts) are applied;
// 3. write: the batch in one Postgres transaction (write-batch.ts). When Postgres (or the person
//    and group rules) refuse the batch's data, it is bisected until the refused events stand
//    alone; those are dead-lettered and the rest is stored;
// 4. finish: count, log the batch's one info line, and run the after-Postgres-commit step.
// Only when this resolves does the consumer runner commit the offsets. Every step that talks to
// Postgres, Redis or Kafka goes through the one retry policy (retry.ts): infrastructure failures
// are retried for as long as it takes, holding the partition, readiness false meanwhile.
import type { Pool } from 'pg';
import type { KafkaMessage } from 'kafkajs';
import type { BatchContext, ConsumerBatch } from '@sett/kafka';
import type { Logger } from '@sett/logger';
import type { IngestionMetrics } from '../metrics';
import type { TeamResolver } from '../teams/team-resolver';
import { RejectedError, describeFailure } from './failure-kind';
import { writeIsolatingRejected } from './isolate-rejected';
import { prepareMessage } from './prepare';
import { createRetryPolicy, type RetryHealth, type RetryOptions, type RetryPolicy } from './retry';
import {
  dlq,
  type DropReason,
  type IngestionWarning,
  type PreparedEvent,
  type StepResult,
  type TeamEvent,
} from './types';
import { writeBatch, type WriteBatchResult } from './write-batch';
import type { TeamSteps } from './team-steps';

export type DeadLetter = {
  topic: string;
  partition: number;
  offset: string;
  reason: string;
  value: Buffer | null;
};

export type BatchRunnerDeps = {
  pool: Pool;
  teams: TeamResolver;
  /** Resolves once the dead letters are acknowledged by Kafka. */
  sendDeadLetters: (letters: DeadLetter[]) => Promise<void>;
  logger: Logger;
  metrics: IngestionMetrics;
  health: RetryHealth;
  retry?: RetryOptions;
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

/** One batch's messages after preparing: what goes on, and what was dropped or dead-lettered. */
type Triage = {
  prepared: PreparedEvent[];
  byOffset: Map<string, KafkaMessage>;
  dead: DeadLetter[];
  drops: Map<DropReason, number>;
};

/** What the steps share: the deps, the retry policy, and the warning log's rate limit. */
type Runner = BatchRunnerDeps & { untilDone: RetryPolicy; warnedAt: Map<IngestionWarning, number> };

const countDrop = (drops: Map<DropReason, number>, reason: DropReason) =>
  drops.set(reason, (drops.get(reason) ?? 0) + 1);

export function createBatchRunner(deps: BatchRunnerDeps) {
  const runner: Runner = { ...deps, untilDone: createRetryPolicy(deps), warnedAt: new Map() };
  return async function runBatch(batch: ConsumerBatch, ctx: BatchContext): Promise<void> {
    const started = process.hrtime.bigint();
    const key = `${batch.topic}/${batch.partition}`;
    const triage = prepare(batch);
    if (triage.dead.length > 0) {
      const dead = [...triage.dead];
      await runner.untilDone('dead_letter', key, ctx, () => runner.sendDeadLetters(dead));
    }
    const events = await attachTeams(runner, triage, key, ctx);
    const steps = runner.teamSteps;
    if (steps && events.length > 0)
      await runner.untilDone('team_settings', key, ctx, () => steps.beforeWrite(events));
    const results = await write(runner, batch, triage, events, ctx);
    if (steps && results.length > 0)
      await steps
        .afterWrite(events)
        .catch((error: Error) =>
          runner.logger.warn('could not set ingested_event', { error: error.message }),
        );
    await finish(runner, batch, triage, events, results, started);
  };
}

/** Step 1: decodes and validates every message; what cannot be ingested is dropped or dead-lettered. */
function prepare(batch: ConsumerBatch): Triage {
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

/** Step 2: each distinct token resolved once; unknown tokens and repeated uuids are dropped. */
async function attachTeams(run: Runner, t: Triage, key: string, ctx: BatchContext): Promise<TeamEvent[]> {
  const tokens = [...new Set(t.prepared.map((e) => e.token))];
  const teamIds = await run.untilDone(
    'resolve_team',
    key,
    ctx,
    async () =>
      new Map(await Promise.all(tokens.map(async (tk) => [tk, await run.teams.resolve(tk)] as const))),
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
 * Step 3: one write on the happy path; refused data is isolated by bisection (each half retried
 * on infrastructure failures like the whole), and the rows refused alone are dead-lettered.
 */
async function write(
  run: Runner,
  batch: ConsumerBatch,
  t: Triage,
  events: TeamEvent[],
  ctx: BatchContext,
): Promise<WriteBatchResult[]> {
  if (events.length === 0) return [];
  const { topic, partition } = batch;
  const key = `${topic}/${partition}`;
  const writeOnce = run.writeBatch ?? writeBatch;
  const outcome = await writeIsolatingRejected(
    events,
    (part) => run.untilDone('postgres', key, ctx, () => writeOnce(run.pool, part)),
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
    run.logger.warn('events refused by Postgres or the person and group rules; dead-lettering them', {
      partition: key,
      events: events.length,
      refused: letters.length,
      writes: outcome.writes,
      firstReason: letters[0]?.reason,
    });
    run.metrics.isolationWrites.inc(outcome.writes);
    await run.untilDone('dead_letter', key, ctx, () => run.sendDeadLetters(letters));
    t.dead.push(...letters);
  }
  return outcome.results;
}

/** Step 4: count, log the batch's line, and run the after-Postgres-commit step. */
async function finish(
  run: Runner,
  batch: ConsumerBatch,
  t: Triage,
  events: TeamEvent[],
  results: WriteBatchResult[],
  started: bigint,
): Promise<void> {
  const { topic, partition } = batch;
  const { metrics, logger } = run;
  for (const e of events) if (e.warnings.length > 0) noteWarnings(run, e);
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
    if (run.afterPostgresCommit)
      await run
        .afterPostgresCommit(r)
        .catch((error: Error) => logger.warn('after-Postgres-commit step failed', { error: error.message }));
  }
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

/** Warning metrics per event; the log line at most every 10 s per type (a misconfigured client must not flood the logs). */
function noteWarnings(run: Runner, e: PreparedEvent): void {
  for (const w of e.warnings) {
    run.metrics.warnings.inc({ type: w });
    const last = run.warnedAt.get(w) ?? 0;
    if (Date.now() - last > 10_000) {
      run.warnedAt.set(w, Date.now());
      run.logger.warn('event ingested with a warning', {
        warning: w,
        uuid: e.uuid,
        event: e.event,
        timestamp: e.timestamp,
      });
    }
  }
}
