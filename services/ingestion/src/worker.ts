// The ingestion worker, wired from its dependencies so tests run the real thing in-process:
// one consumer runner per consumer group (live, historical; chosen by config) with its stall
// watchdog, a shared batch runner writing to Postgres, a dead letter producer, metrics
// (including consumer lag per partition, stalls and offset resets) and readiness.
import type { Pool } from 'pg';
import type { Kafka } from 'kafkajs';
import type { Registry } from 'prom-client';
import type { Config } from '@sett/config';
import { createDefinitionTracker } from './definitions/definition-tracker';
import { bumpQueryDataVersions, writeGroupTypes, type Redis } from '@sett/cache';
import { prom } from '@sett/http';
import {
  TOPICS,
  createKafkajsProducer,
  createConsumerRunner,
  createDeadLetterMessage,
  encodeDeadLetterMessage,
  type BatchingProducer,
  type ConsumerBatch,
  type OffsetReset,
  type ConsumerRunner,
  type PartitionLag,
} from '@sett/kafka';
import { noGeoIp, type GeoIp } from '@sett/geoip';
import type { Logger } from '@sett/logger';
import { createBatchRunner, type DeadLetter } from './pipeline/run-batch';
import { RetryHealth } from './pipeline/retry';
import { GROUP_IDS, consumerPlans, type ConsumerPlan } from './kafka/consumers';
import { createIngestionMetrics } from './metrics';
import type { WriteBatchResult } from './pipeline/write-batch';
import { createTeamSteps } from './pipeline/team-steps';
import { createTeamResolver } from './teams/team-resolver';
import { createTeamSettingsStore } from './teams/team-settings';

export type IngestionWorkerConfig = Pick<
  Config['ingestion'],
  | 'topics'
  | 'maxBatchBytes'
  | 'sessionTimeoutMs'
  | 'heartbeatIntervalMs'
  | 'maxWaitTimeMs'
  | 'batchMaxEvents'
  | 'batchMaxBytes'
  | 'batchWaitMs'
  | 'batchConcurrency'
  | 'stallTimeoutMs'
> &
  Partial<Pick<Config['ingestion'], 'definitionsEnabled'>>;

export type IngestionWorkerDeps = {
  kafka: Kafka;
  /** Produces dead letters (main.ts: createProducer); default a kafkajs producer on `kafka`. */
  producer?: BatchingProducer;
  pool: Pool;
  /** Token cache shared with capture/decide, and where new group type mappings are published. */
  redis?: Redis;
  logger: Logger;
  registry: Registry;
  config: IngestionWorkerConfig;
  /** Consumer group ids (tests run a second, independent worker on the same topics). */
  groupIds?: { live: string; historical: string };
  /** Backoff of failed batch attempts. */
  retry?: { initialMs?: number; maxMs?: number };
  /** Backoff of consumer restarts after a crash (default 1 s doubling to 30 s). */
  restart?: { initialMs?: number; maxMs?: number };
  /** Fault injection for tests: runs before each batch is handled; a throw fails that batch. */
  beforeBatch?: (batch: ConsumerBatch) => void | Promise<void>;
  tokenCacheTtlMs?: number;
  /** The Kafka message limit (KAFKA_MESSAGE_MAX_BYTES): dead letters are kept under it. */
  messageMaxBytes?: number;
  /** $geoip_* properties from the event's $ip (projects may turn it off); default none. */
  geoip?: GeoIp;
};

const DEFAULT_MESSAGE_MAX_BYTES = 1_000_000;

export type GroupLag = PartitionLag & { groupId: string };

export type IngestionWorker = {
  start(): Promise<void>;
  /** Finishes and commits the batches in flight, leaves the groups, flushes the producer. */
  stop(): Promise<void>;
  lag(): Promise<GroupLag[]>;
  /** Problems that make the worker not ready (a partition stuck retrying, a stopped consumer). */
  problems(): string[];
  /**
   * The same, for one consumer group: not consuming (crashed, restarting, not joined yet,
   * broker unreachable), or one of its partitions stuck retrying. Empty when all is well.
   */
  groupProblems(groupId: string): string[];
  plans: ConsumerPlan[];
  /** Counts and logs a reset offset (createKafka's onOffsetReset). */
  noteOffsetReset(info: OffsetReset): void;
};

export function createIngestionWorker(deps: IngestionWorkerDeps): IngestionWorker {
  const { logger, config } = deps;
  const health = new RetryHealth();
  const plans = consumerPlans(config.topics, deps.groupIds ?? GROUP_IDS);
  const metrics = createIngestionMetrics(deps.registry, {
    topics: plans.flatMap((p) => p.topics),
    groups: plans.map((p) => p.groupId),
  });
  const producer = deps.producer ?? createKafkajsProducer({ kafka: deps.kafka, lingerMs: 5, logger });
  const teams = createTeamResolver({
    pool: deps.pool,
    redis: deps.redis,
    logger,
    ttlMs: deps.tokenCacheTtlMs,
  });

  const teamSteps = createTeamSteps({
    settings: createTeamSettingsStore({ pool: deps.pool, ttlMs: deps.tokenCacheTtlMs }),
    geoip: deps.geoip ?? noGeoIp,
    onLocated: (n) => metrics.geoipLocated.inc(n),
  });

  const sendDeadLetters = async (letters: DeadLetter[]) => {
    await producer.send(
      TOPICS.deadLetter,
      letters.map((l) => ({
        key: null,
        value: encodeDeadLetterMessage(
          createDeadLetterMessage(l),
          deps.messageMaxBytes ?? DEFAULT_MESSAGE_MAX_BYTES,
        ),
      })),
    );
  };

  // decide reads group type mappings from Redis: publish a project's mapping when it changed,
  // and once per process for every project seen (heals a crash between commit and publish).
  const published = new Set<number>();
  const afterPostgresCommit = async (result: WriteBatchResult) => {
    const redis = deps.redis;
    if (!redis) return;
    for (const [teamId, mapping] of result.groupTypes) {
      if (mapping.size === 0 || (published.has(teamId) && !result.newGroupTypeTeams.has(teamId))) continue;
      const byIndex: Record<number, string> = {};
      for (const [type, index] of mapping) byIndex[index] = type;
      await writeGroupTypes(redis, teamId, byIndex);
      published.add(teamId);
    }
  };

  const definitions = createDefinitionTracker({
    pool: deps.pool,
    logger,
    onWritten: (n) => {
      metrics.definitionsWritten.inc({ table: 'event_definitions' }, n.events);
      metrics.definitionsWritten.inc({ table: 'property_definitions' }, n.properties);
      metrics.definitionsWritten.inc({ table: 'event_properties' }, n.eventProperties);
    },
  });

  const handleBatch = createBatchRunner({
    pool: deps.pool,
    teams,
    sendDeadLetters,
    logger,
    metrics,
    health,
    retry: deps.retry,
    afterPostgresCommit,
    teamSteps,
    // Cached query answers of these projects are stale now (management's result cache).
    onStored: deps.redis ? (teams) => bumpQueryDataVersions(deps.redis!, teams) : undefined,
    trackDefinitions:
      config.definitionsEnabled === false
        ? undefined
        : (events, groupTypes) => definitions.track(events, groupTypes),
  });
  const runners = plans.map((plan) => ({
    plan,
    runner: createConsumerRunner({
      kafka: deps.kafka,
      groupId: plan.groupId,
      topics: plan.topics,
      handleBatch: deps.beforeBatch
        ? async (batch, ctx) => {
            await deps.beforeBatch!(batch);
            await handleBatch(batch, ctx);
          }
        : handleBatch,
      sessionTimeout: config.sessionTimeoutMs,
      heartbeatInterval: config.heartbeatIntervalMs,
      maxWaitTimeInMs: config.maxWaitTimeMs,
      maxBytesPerPartition: config.maxBatchBytes,
      gather: {
        maxMessages: config.batchMaxEvents,
        maxBytes: config.batchMaxBytes,
        maxWaitMs: config.batchWaitMs,
        concurrency: config.batchConcurrency,
      },
      onBatchFormed: ({ waitedMs }) => metrics.batchWait.observe({ group: plan.groupId }, waitedMs / 1000),
      restart: deps.restart,
      onRestart: ({ groupId }) => metrics.consumerRestarts.inc({ group: groupId }),
      stallTimeoutMs: config.stallTimeoutMs,
      // A partition retrying a failed step is held on purpose (readiness says so): not a stall.
      isHeld: () => health.problems().some((p) => plan.topics.some((t) => p.startsWith(`${t}/`))),
      onStall: ({ groupId }) => metrics.consumerStalls.inc({ group: groupId }),
      logger: logger.child({ consumerGroup: plan.groupId }),
    }) as ConsumerRunner,
  }));

  const lag = async (): Promise<GroupLag[]> => {
    const all = await Promise.all(
      runners.map(async ({ plan, runner }) =>
        (await runner.lag()).map((l) => ({ ...l, groupId: plan.groupId })),
      ),
    );
    return all.flat();
  };

  new prom.Gauge({
    name: 'sett_ingestion_consumer_lag',
    help: 'Messages not yet committed by the consumer group, per partition',
    labelNames: ['group', 'topic', 'partition'],
    registers: [deps.registry],
    async collect() {
      try {
        this.reset();
        for (const l of await lag())
          this.set({ group: l.groupId, topic: l.topic, partition: String(l.partition) }, l.lag);
      } catch (error) {
        logger.debug('consumer lag unavailable', { error: (error as Error).message });
      }
    },
  });

  let started = false;
  const groupProblems = (groupId: string): string[] => {
    const entry = runners.find((r) => r.plan.groupId === groupId);
    if (!entry) return [`unknown consumer group ${groupId}`];
    if (!started) return ['consumers not started'];
    const problems: string[] = [];
    const status = entry.runner.status();
    if (!status.consuming) problems.push(`not consuming (${status.state}): ${status.reason ?? 'unknown'}`);
    // Partitions stuck retrying are keyed topic/partition; the group owns its topics.
    for (const p of health.problems())
      if (entry.plan.topics.some((t) => p.startsWith(`${t}/`))) problems.push(p);
    return problems;
  };
  return {
    plans,
    async start() {
      await producer.connect();
      started = true;
      // A runner that cannot join yet keeps trying by itself (readiness says so meanwhile).
      for (const { runner } of runners) await runner.start();
      logger.info('ingestion consumers started', {
        groups: plans.map((p) => ({ groupId: p.groupId, topics: p.topics })),
      });
    },
    async stop() {
      started = false;
      // In parallel: each runner waits for its in-flight batch and commits it.
      await Promise.all(runners.map(({ runner }) => runner.stop()));
      await producer.disconnect();
    },
    lag,
    groupProblems,
    noteOffsetReset: ({ groupId, topic }) => metrics.offsetResets.inc({ group: groupId, topic }),
    problems() {
      if (!started) return ['consumers not started'];
      return plans.flatMap((p) => groupProblems(p.groupId).map((why) => `${p.groupId}: ${why}`));
    },
  };
}
