// Makes sure the topics a service needs exist. Against real Kafka it creates the missing ones;
// against the development broker createTopics fails (its metadata names controller 0 while its
// brokers are numbered from 1, see docs/architecture.md) and the launcher has pre-created them, so
// existing topics count as success and a failed creation only matters if topics are missing.
import type { Kafka } from 'kafkajs';
import { silentLogger, type KafkaLogger } from './types';

export type TopicSpec = { topic: string; numPartitions: number; replicationFactor?: number };

export type EnsureTopicsResult = { created: string[]; existing: string[] };

export class TopicsMissingError extends Error {
  override readonly name = 'TopicsMissingError';
  constructor(
    readonly missing: string[],
    override readonly cause?: unknown,
  ) {
    super(
      `Kafka topics missing and could not be created: ${missing.join(', ')}${cause ? ` (${(cause as Error).message})` : ''}`,
    );
  }
}

export async function ensureTopics(
  kafka: Kafka,
  topics: TopicSpec[],
  logger: KafkaLogger = silentLogger,
): Promise<EnsureTopicsResult> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const before = new Set(await admin.listTopics());
    const existing = topics.filter((t) => before.has(t.topic));
    const missing = topics.filter((t) => !before.has(t.topic));

    if (existing.length > 0) {
      // A topic with fewer partitions than configured still works, only with less parallelism.
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: existing.map((t) => t.topic) });
      for (const spec of existing) {
        const found = metadata.find((m) => m.name === spec.topic);
        if (found && found.partitions.length < spec.numPartitions) {
          logger.warn('kafka topic has fewer partitions than configured', {
            topic: spec.topic,
            partitions: found.partitions.length,
            configured: spec.numPartitions,
          });
        }
      }
    }
    if (missing.length === 0) return { created: [], existing: existing.map((t) => t.topic) };

    let createError: unknown;
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.topic,
          numPartitions: t.numPartitions,
          replicationFactor: t.replicationFactor ?? -1,
        })),
      });
    } catch (error) {
      createError = error;
      logger.warn('kafka createTopics failed; checking whether the topics exist anyway', {
        error: (error as Error).message,
      });
    }

    // Whatever createTopics said, the broker's topic list is the truth (another instance may
    // have created them concurrently, or the broker created them some other way).
    const after = new Set(await admin.listTopics());
    const stillMissing = missing.filter((t) => !after.has(t.topic)).map((t) => t.topic);
    if (stillMissing.length > 0) throw new TopicsMissingError(stillMissing, createError);
    const created = createError ? [] : missing.map((t) => t.topic);
    if (created.length > 0) logger.info('kafka topics created', { topics: created });
    return { created, existing: topics.map((t) => t.topic).filter((t) => !created.includes(t)) };
  } finally {
    await admin.disconnect();
  }
}
