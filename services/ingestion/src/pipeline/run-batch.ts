// Runs one batch (the messages of one or more partitions, gathered by the consumer runner)
// through ingestion's steps, in order:
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
import { batchMessageCount, type BatchContext, type ConsumerBatch } from '@sett/kafka';
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
import type { GroupTypeMapping } from '../groups/group-rules';

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
  /**
   * After the write, once per batch: the projects it stored events of (the query result cache's
   * data versions). Failures are logged only.
   */
  onStored?: (teamIds: ReadonlySet<number>) => Promise<void>;
  /**
   * After the write, once per batch: the stored events and the group types of their projects
   * (event and property definitions, definition-tracker.ts). Failures are logged only.
   */
  trackDefinitions?: (
    events: readonly TeamEvent[],
    groupTypes: ReadonlyMap<number, GroupTypeMapping>,
  ) => Promise<void>;
};

/** Where a message came from. Prepared events carry its index in the batch as their `offset`
 * (offsets repeat across partitions), which this resolves. */
type Origin = { topic: string; partition: number; message: KafkaMessage };

/** One batch's messages after preparing: what goes on, and what was dropped or dead-lettered. */
type Triage = {
  prepared: PreparedEvent[];
  origins: Origin[];
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
    const key = batchKey(batch);
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

/**
 * The batch's name in retry health and logs: its first partition, and how many more. Readiness
 * maps a problem to its consumer group by the topic it starts with.
 */
function batchKey(batch: ConsumerBatch): string {
  const first = batch.parts[0];
  if (!first) return 'empty';
  return `${first.topic}/${first.partition}${batch.parts.length > 1 ? ` and ${batch.parts.length - 1} more partitions` : ''}`;
}

/** Step 1: decodes and validates every message; what cannot be ingested is dropped or dead-lettered. */
function prepare(batch: ConsumerBatch): Triage {
  const t: Triage = { prepared: [], origins: [], dead: [], drops: new Map() };
  // Partition by partition, each in offset order: one key's events stay in order.
  for (const { topic, partition, messages } of batch.parts)
    for (const m of messages) {
      const ref = String(t.origins.length);
      t.origins.push({ topic, partition, message: m });
      let r: StepResult<PreparedEvent>;
      try {
        r = prepareMessage(m.value, ref);
      } catch (error) {
        // A shape nobody foresaw must cost this message only, never the batch.
        r = dlq(`failed to prepare: ${describeFailure(error as Error)}`);
      }
      if (r.kind === 'ok') t.prepared.push(r.value);
      else if (r.kind === 'drop') countDrop(t.drops, r.reason);
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
  const key = batchKey(batch);
  const writeOnce = run.writeBatch ?? writeBatch;
  const outcome = await writeIsolatingRejected(
    events,
    (part) => run.untilDone('postgres', key, ctx, () => writeOnce(run.pool, part)),
    (error) => error instanceof RejectedError,
  );
  if (outcome.rejected.length > 0) {
    const letters = outcome.rejected.map(({ item, error }) => {
      const origin = t.origins[Number(item.offset)]!;
      return {
        topic: origin.topic,
        partition: origin.partition,
        offset: origin.message.offset,
        reason: `rejected while writing: ${describeFailure((error as RejectedError).original)}`,
        value: origin.message.value,
      };
    });
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
  const { metrics, logger } = run;
  const messages = batchMessageCount(batch);
  for (const e of events) if (e.warnings.length > 0) noteWarnings(run, e);
  let dropped = 0;
  for (const [reason, n] of t.drops) {
    metrics.drops.inc({ reason }, n);
    dropped += n;
  }
  if (t.dead.length > 0) {
    for (const d of t.dead) metrics.deadLetters.inc({ topic: d.topic });
    logger.warn('messages sent to the dead letter topic', {
      partition: `${t.dead[0]!.topic}/${t.dead[0]!.partition}`,
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
  if (run.trackDefinitions && events.length > 0) {
    const groupTypes = new Map<number, GroupTypeMapping>();
    for (const r of results) for (const [teamId, mapping] of r.groupTypes) groupTypes.set(teamId, mapping);
    await run
      .trackDefinitions(events, groupTypes)
      .catch((error: Error) =>
        logger.warn('could not record event and property definitions', { error: error.message }),
      );
  }
  if (run.onStored && sum.inserted > 0) {
    const teams = new Set<number>();
    for (const e of events) teams.add(e.teamId);
    await run
      .onStored(teams)
      .catch((error: Error) =>
        logger.warn('could not bump the query data versions', { error: error.message }),
      );
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  // Counted under the batch's first topic: a group's batches mix its topics (live and overflow).
  const topic = batch.parts[0]?.topic ?? 'none';
  const storedByTopic = new Map<string, number>();
  for (const e of events) {
    const origin = t.origins[Number(e.offset)]!;
    storedByTopic.set(origin.topic, (storedByTopic.get(origin.topic) ?? 0) + 1);
  }
  // Stored events by the topic each came from (the write counts rows, not which were new: with
  // duplicates in a batch of two topics, the rows are apportioned, the remainder to the first).
  const share = events.length > 0 ? sum.inserted / events.length : 0;
  let apportioned = 0;
  const counts = [...storedByTopic].map(([from, n]) => {
    const c = Math.floor(n * share);
    apportioned += c;
    return [from, c] as const;
  });
  counts.forEach(([from, c], i) =>
    metrics.events.inc({ topic: from }, i === 0 ? c + sum.inserted - apportioned : c),
  );
  metrics.batchSize.observe({ topic }, messages);
  // The oldest message's Kafka timestamp: how far behind the live traffic the batch was stored.
  let oldest = Infinity;
  for (const p of batch.parts) {
    const at = Number(p.messages[0]?.timestamp);
    if (at > 0 && at < oldest) oldest = at;
  }
  if (Number.isFinite(oldest) && results.length > 0)
    metrics.producedToStored.observe({ topic }, Math.max(0, Date.now() - oldest) / 1000);
  metrics.batchDuration.observe({ topic }, seconds);
  logger.info('batch ingested', {
    topic,
    partitions: batch.parts.length,
    // Where it came from: topic/partition@first-last offset, the first ten partitions.
    offsets:
      batch.parts
        .slice(0, 10)
        .map((p) => `${p.topic}/${p.partition}@${p.messages[0]?.offset}-${p.messages.at(-1)?.offset}`)
        .join(' ') + (batch.parts.length > 10 ? ' …' : ''),
    messages,
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
