// Runs a kafkajs consumer group member that hands fetched messages to handleBatch and commits
// their offsets only after handleBatch resolved: the ingestion worker writes to Postgres inside
// handleBatch, so a commit means the work is durable (at-least-once; inserts are idempotent on
// the event uuid).
//
// Batches form across partitions (`gather`): what kafkajs fetches from every assigned partition
// is queued in fetch order and handed to handleBatch together, up to `maxMessages` or
// `maxBytes`, after at most `maxWaitMs` when the writer is idle. Fetching goes on while a batch
// is written (the fetch position moves as soon as a partition's messages are queued; the
// committed offset only after the write), until twice a batch waits; then the fetch loop waits
// for room, heartbeating. So live traffic, which arrives in small record batches on many
// partitions, is written in batches of hundreds or thousands, not one small batch per partition.
// Per-key order holds: a key lives on one partition, whose messages are queued and written in
// offset order, one batch at a time: partitions are split into `concurrency` lanes, each with
// one writer, so several batches are written at once without two holding one partition. A rebalance drops what is queued but not written (the
// partitions' owners read it again from the committed offsets); a write in flight finishes, and
// its commit is refused for partitions no longer ours, which are then read again (harmless:
// inserts are idempotent). A handleBatch that throws (not a stop) replaces the consumer, as a
// crash does: the member resumes from the committed offsets.
//
// The member never stays down: whatever crashes the kafkajs consumer (a handler throwing a
// TypeError, retries exhausted, the broker unreachable while joining) makes the runner restart
// it itself, with exponential backoff (1 s doubling to 30 s, back to 1 s once a batch was
// committed or the member lived a while), logging and reporting each restart. status() says
// whether the member is really consuming: joined, and a fetch or a heartbeat succeeded recently.
//
// A member can also freeze without crashing (kafkajs's fetch loop was seen spinning after a
// broker bounce; a batch can hang on something with no timeout). A watchdog checks every few
// seconds: when partitions assigned to this member have lag and no batch has started or
// finished for stallTimeoutMs (and the handler is not knowingly retrying, see isHeld), the member
// is stalled: status() says so (readiness goes 503 naming the group), onStall is called (a
// counter), an error is logged, and the member is replaced by a fresh kafkajs consumer. The frozen
// one is abandoned, not awaited (its disconnect may never return): its heartbeats stop, so the
// group moves its partitions to the fresh member, and its late work is harmless (inserts are
// idempotent on the event uuid, and its commits are refused once it left the group).
import type { Admin, Consumer, EachBatchHandler, Kafka, KafkaMessage, RetryOptions } from 'kafkajs';
import { silentLogger, type KafkaLogger } from './types';

/** One partition's messages, in offset order. */
export type PartitionMessages = {
  topic: string;
  partition: number;
  highWatermark: string;
  messages: KafkaMessage[];
};

/** What handleBatch gets: the messages of one or more partitions, each part in offset order. */
export type ConsumerBatch = {
  parts: PartitionMessages[];
};

/** Total messages of a batch. */
export const batchMessageCount = (batch: ConsumerBatch): number =>
  batch.parts.reduce((n, p) => n + p.messages.length, 0);

export type GatherOptions = {
  /** Messages of one batch at most (a partition's fetch is never split). */
  maxMessages: number;
  /** Bytes of message values of one batch at most. */
  maxBytes: number;
  /** How long the first queued messages wait for more while no batch is being written. */
  maxWaitMs: number;
  /** Batches written at once: partitions are split into this many lanes (by partition number),
   * each written by one writer, in order. */
  concurrency: number;
};

const DEFAULT_GATHER: GatherOptions = {
  maxMessages: 5_000,
  maxBytes: 8 * 1024 * 1024,
  maxWaitMs: 10,
  concurrency: 2,
};

export type BatchContext = {
  /** Tells the coordinator we are alive; the runner also does this on a timer during a batch. */
  heartbeat(): Promise<void>;
  /** False once stop() was called: long handlers may cut work short (and throw, to not commit). */
  isRunning(): boolean;
  /** True when the group rebalanced since the batch was formed: its partitions may be another
   * member's now, and it will be read again (a retrying step gives up). */
  isStale(): boolean;
};

export type PartitionLag = {
  topic: string;
  partition: number;
  /** Next offset the group will read, or '-1' when it has committed nothing yet. */
  committedOffset: string;
  highWatermark: string;
  /** Messages not yet committed (from the log start when nothing is committed). */
  lag: number;
};

export type ConsumerRunnerOptions = {
  kafka: Kafka;
  groupId: string;
  topics: string[];
  handleBatch: (batch: ConsumerBatch, ctx: BatchContext) => Promise<void>;
  sessionTimeout?: number;
  heartbeatInterval?: number;
  maxWaitTimeInMs?: number;
  maxBytesPerPartition?: number;
  /** How batches form across partitions (default 5,000 messages, 8 MB, 10 ms). */
  gather?: Partial<GatherOptions>;
  /** Where a group with no committed offset starts (default true: the beginning). */
  fromBeginning?: boolean;
  /** Backoff between retries of a failed batch (kafkajs retry options). */
  retry?: RetryOptions;
  /** Backoff between restarts of a crashed consumer (default 1 s doubling to 30 s). */
  restart?: { initialMs?: number; maxMs?: number };
  /**
   * Without a successful fetch or heartbeat for this long the member is reported as not
   * consuming (broker unreachable, coordinator lost). Default: the session timeout.
   */
  silenceTimeoutMs?: number;
  /**
   * The watchdog: with lag on its partitions and no batch started or finished for this long, the
   * member is stalled and replaced (default 120 s; 0 turns the watchdog off).
   */
  stallTimeoutMs?: number;
  /** True while the handler is knowingly holding a partition (retrying a failed step): not a stall. */
  isHeld?: () => boolean;
  /** Called on each restart scheduled after a crash (metrics). */
  onRestart?: (info: { groupId: string; restarts: number; delayMs: number; reason: string }) => void;
  /** Called when the watchdog finds the member stalled, before it is replaced (metrics). */
  onStall?: (info: { groupId: string; stalledMs: number; lag: number }) => void;
  /** Called when a batch is handed to handleBatch: its size and how long its oldest part waited. */
  onBatchFormed?: (info: { messages: number; bytes: number; waitedMs: number }) => void;
  logger?: KafkaLogger;
};

export type ConsumerState = 'idle' | 'starting' | 'consuming' | 'restarting' | 'stopped';

export type ConsumerStatus = {
  /** Joined and fetching or heartbeating: what readiness asks. */
  consuming: boolean;
  state: ConsumerState;
  /** Why it is not consuming, when it is not. */
  reason?: string;
  /** Restarts after crashes since start(). */
  restarts: number;
};

export type ConsumerRunner = {
  start(): Promise<void>;
  /** Lets the in-flight batch finish and commit, then leaves the group and disconnects. */
  stop(): Promise<void>;
  lag(): Promise<PartitionLag[]>;
  /** True from start() until stop(), whatever the member's state (see status()). */
  isRunning(): boolean;
  status(): ConsumerStatus;
  /** The current kafkajs consumer (a new one after a stall), for instrumentation events. */
  readonly consumer: Consumer;
};

export function createConsumerRunner(options: ConsumerRunnerOptions): ConsumerRunner {
  const logger = options.logger ?? silentLogger;
  const heartbeatInterval = options.heartbeatInterval ?? 3000;
  const { groupId, topics, kafka } = options;

  const sessionTimeout = options.sessionTimeout ?? 30000;
  const silenceMs = options.silenceTimeoutMs ?? sessionTimeout;
  const stallTimeoutMs = options.stallTimeoutMs ?? 120_000;
  const restartInitialMs = options.restart?.initialMs ?? 1000;
  const restartMaxMs = options.restart?.maxMs ?? 30_000;

  let running = false;
  let stopping = false;
  let state: ConsumerState = 'idle';
  let reason: string | undefined = 'not started';
  let lastAlive = 0;
  /** When a batch last started or finished (or the member joined): the watchdog's clock. */
  let lastProgress = 0;
  /** Set by the watchdog, cleared by the next progress: readiness reports it meanwhile. */
  let stalled: string | undefined;
  /** Partitions the coordinator gave this member, by topic (from the last join). */
  let assignment: Record<string, number[]> = {};
  let startedAt = 0;
  let restarts = 0;
  let restartDelay = restartInitialMs;
  let restartTimer: NodeJS.Timeout | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let starting: Promise<void> | undefined;
  let admin: Admin | undefined;
  let adminConnecting: Promise<Admin> | undefined;

  const newConsumer = (): Consumer =>
    kafka.consumer({
      groupId,
      sessionTimeout,
      heartbeatInterval,
      maxWaitTimeInMs: options.maxWaitTimeInMs ?? 1000,
      maxBytesPerPartition: options.maxBytesPerPartition,
      allowAutoTopicCreation: false,
      // A failing batch is retried by kafkajs at a bounded pace; exhausted retries (or an error
      // kafkajs deems unrecoverable, like a TypeError) crash the consumer, and restarting it is
      // then always ours (restartOnFailure false): kafkajs alone would not restart on a
      // TypeError/RangeError, and it would restart the others without backoff or readiness.
      // A restarted member resumes from the last committed offset.
      retry: {
        ...(options.retry ?? { initialRetryTime: 300, maxRetryTime: 10_000, retries: 10 }),
        restartOnFailure: async () => false,
      },
    });

  /** Bumped when a stalled consumer is abandoned: its late events and batches are ignored. */
  let generation = 0;
  let consumer = newConsumer();

  // --- gathering -------------------------------------------------------------------------
  const gather: GatherOptions = { ...DEFAULT_GATHER, ...options.gather };
  type Queued = PartitionMessages & { bytes: number; at: number; gen: number };
  /** Fetched, queued, not yet handed to handleBatch; in fetch order. */
  let queued: Queued[] = [];
  let queuedMessages = 0;
  /** Bumped by every rebalance: a batch formed before it is stale. */
  let epoch = 0;
  /** The writer of each lane that is writing. */
  const writers = new Map<number, Promise<void>>();
  let lingerTimer: NodeJS.Timeout | undefined;
  /** Fetch loops waiting for room in the queue. */
  let roomWaiters: Array<() => void> = [];
  const wakeRoomWaiters = () => {
    const waiters = roomWaiters;
    roomWaiters = [];
    for (const w of waiters) w();
  };
  const clearQueue = () => {
    queued = [];
    queuedMessages = 0;
    clearTimeout(lingerTimer);
    lingerTimer = undefined;
    wakeRoomWaiters();
  };

  const scheduleRestart = (why: string) => {
    if (stopping || restartTimer) return;
    state = 'restarting';
    reason = why;
    // A member that lived a while (without committing: an idle topic) starts the backoff over.
    if (Date.now() - startedAt > restartMaxMs * 2) restartDelay = restartInitialMs;
    const delayMs = restartDelay;
    restartDelay = Math.min(restartMaxMs, restartDelay * 2);
    restarts++;
    logger.warn('kafka consumer restarting', { groupId, inMs: delayMs, restarts, reason: why });
    options.onRestart?.({ groupId, restarts, delayMs, reason: why });
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      starting = connectAndRun().finally(() => {
        starting = undefined;
      });
    }, delayMs);
  };

  /** Wires a consumer's events; everything checks that it is still the current one. */
  const wire = (c: Consumer, gen: number): void => {
    const current = () => gen === generation;
    const alive = () => {
      if (current()) lastAlive = Date.now();
    };
    for (const event of [
      c.events.FETCH,
      c.events.HEARTBEAT,
      c.events.START_BATCH_PROCESS,
      c.events.COMMIT_OFFSETS,
    ])
      c.on(event, alive);
    c.on(c.events.GROUP_JOIN, ({ payload }) => {
      if (!current()) return;
      alive();
      lastProgress = Date.now();
      assignment = payload.memberAssignment;
      // kafkajs reads every assigned partition again from its committed offset: what is queued
      // would come twice, and a partition now another member's must not be written by us.
      epoch++;
      clearQueue();
      if (state !== 'starting' && state !== 'consuming') return;
      state = 'consuming';
      reason = undefined;
    });
    c.on(c.events.CRASH, ({ payload }) => {
      if (!current()) return;
      logger.error('kafka consumer crashed', {
        groupId,
        error: payload.error.message,
        restart: payload.restart,
      });
      scheduleRestart(`crashed: ${payload.error.message}`);
    });
  };
  wire(consumer, generation);

  const progressed = (): void => {
    lastProgress = Date.now();
    if (stalled) logger.info('kafka consumer making progress again', { groupId });
    stalled = undefined;
  };

  const partitionKey = (p: { topic: string; partition: number }) => `${p.topic}/${p.partition}`;
  /** Each partition belongs to one writer (its lane), so its batches are written in order. */
  const laneOf = (p: { partition: number }) => p.partition % gather.concurrency;

  /** Takes a lane's next batch off the queue: whole partition fetches in fetch order, up to
   * the size caps. */
  const takeBatch = (lane: number): Queued[] => {
    const parts: Queued[] = [];
    const rest: Queued[] = [];
    let messages = 0;
    let bytes = 0;
    let full = false;
    for (const q of queued) {
      if (!full && laneOf(q) === lane) {
        const fits =
          parts.length === 0 ||
          (messages + q.messages.length <= gather.maxMessages && bytes + q.bytes <= gather.maxBytes);
        if (fits) {
          parts.push(q);
          messages += q.messages.length;
          bytes += q.bytes;
          continue;
        }
        // A lane's later fetches wait for the next batch, to stay in order.
        full = true;
      }
      rest.push(q);
    }
    queued = rest;
    queuedMessages -= messages;
    return parts;
  };

  /** Writes one batch of `parts` and commits its partitions' offsets; false when it must stop. */
  const writeBatch = async (gen: number, c: Consumer, parts: Queued[]): Promise<boolean> => {
    const batchEpoch = epoch;
    const started = Date.now();
    const messages = parts.reduce((n, p) => n + p.messages.length, 0);
    options.onBatchFormed?.({
      messages,
      bytes: parts.reduce((n, p) => n + p.bytes, 0),
      waitedMs: started - Math.min(...parts.map((p) => p.at)),
    });
    progressed();
    try {
      await options.handleBatch(
        {
          parts: parts.map(({ topic, partition, highWatermark, messages: m }) => ({
            topic,
            partition,
            highWatermark,
            messages: m,
          })),
        },
        {
          heartbeat: async () => undefined,
          isRunning: () => running && gen === generation,
          isStale: () => epoch !== batchEpoch,
        },
      );
    } catch (error) {
      if (gen !== generation) return false;
      const stopped = !running || epoch !== batchEpoch;
      logger.error('batch handler failed; offsets not committed, the batch will be read again', {
        groupId,
        partitions: parts.map(partitionKey).join(','),
        messages,
        error: (error as Error).message,
      });
      clearQueue();
      // As a crash: a fresh member resumes from the committed offsets. A stop or a rebalance
      // needs nothing more (the batch is simply not committed).
      if (!stopped) replace(`crashed: batch handler failed: ${(error as Error).message}`);
      return false;
    }
    // Abandoned meanwhile: the group has moved on; the fresh member redoes this batch.
    if (gen !== generation) return false;
    // A committed offset names the next message to read, hence +1; one commit for every
    // partition of the batch.
    const next = parts.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      offset: (BigInt(p.messages[p.messages.length - 1]!.offset) + 1n).toString(),
    }));
    try {
      await c.commitOffsets(next);
    } catch (error) {
      // A rebalance took partitions away meanwhile: their owners read these messages again.
      logger.warn('offsets of a written batch not committed; those messages will be read again', {
        groupId,
        error: (error as Error).message,
      });
    }
    progressed();
    // Consuming again: the next crash restarts after the shortest delay.
    restartDelay = restartInitialMs;
    logger.debug('batch committed', { groupId, partitions: next.length, messages, ms: Date.now() - started });
    return true;
  };

  /** One lane's writer: its batches off the queue, one after another, while there are any. */
  const writeQueued = async (gen: number, c: Consumer, lane: number): Promise<void> => {
    while (gen === generation) {
      const parts = takeBatch(lane);
      if (parts.length === 0) return;
      wakeRoomWaiters();
      if (!(await writeBatch(gen, c, parts))) return;
    }
  };

  /** Starts the writers of lanes with queued messages: now when a batch is full or a writer is
   * busy already, else after the linger (the first messages after a quiet spell wait a moment). */
  const kick = (gen: number, c: Consumer, force = false): void => {
    if (gen !== generation || queued.length === 0) return;
    const start = () => {
      clearTimeout(lingerTimer);
      lingerTimer = undefined;
      if (gen !== generation) return;
      for (const q of queued) {
        const lane = laneOf(q);
        if (writers.has(lane)) continue;
        const w: Promise<void> = writeQueued(gen, c, lane).finally(() => {
          if (writers.get(lane) === w) writers.delete(lane);
          // Messages of this lane queued while its writer ended.
          if (gen === generation && (running || force)) kick(gen, c, force);
        });
        writers.set(lane, w);
      }
    };
    if (force || writers.size > 0 || queuedMessages >= gather.maxMessages || gather.maxWaitMs <= 0)
      return start();
    lingerTimer ??= setTimeout(start, gather.maxWaitMs);
  };

  const eachBatchOf =
    (gen: number, c: Consumer): EachBatchHandler =>
    async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      const running = () => isRunning() && gen === generation && !stopping;
      if (batch.isEmpty() || !running() || isStale()) return;
      // Room for it: at most two batches wait. Meanwhile the fetch loop waits too, so kafkajs
      // does not heartbeat: this does (heartbeat() skips the request until it is due).
      if (queuedMessages >= 2 * gather.maxMessages) {
        const beat = setInterval(() => {
          if (gen !== generation) return clearInterval(beat);
          heartbeat().catch((error: Error) =>
            logger.debug('heartbeat while waiting for room failed', { groupId, error: error.message }),
          );
        }, heartbeatInterval);
        try {
          while (queuedMessages >= 2 * gather.maxMessages && running() && !isStale())
            await new Promise<void>((resolve) => roomWaiters.push(resolve));
        } finally {
          clearInterval(beat);
        }
        if (!running() || isStale()) return;
      }
      const { topic, partition } = batch;
      let bytes = 0;
      for (const m of batch.messages) bytes += m.value?.length ?? 0;
      queued.push({
        topic,
        partition,
        highWatermark: batch.highWatermark,
        messages: batch.messages,
        bytes,
        at: Date.now(),
        gen,
      });
      queuedMessages += batch.messages.length;
      // Fetching goes on from after these; the commit waits for the write.
      resolveOffset(batch.lastOffset());
      kick(gen, c);
    };

  /** One attempt to (re)join: failures schedule the next attempt, they never throw. */
  const connectAndRun = async (): Promise<void> => {
    if (stopping) return;
    state = 'starting';
    reason = 'joining the consumer group';
    startedAt = Date.now();
    try {
      // After a crash kafkajs has disconnected already; after a failed connect this cleans up.
      if (restarts > 0) await consumer.disconnect().catch(() => undefined);
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: options.fromBeginning ?? true });
      // Resolves once joined; a failed join crashes (CRASH event) instead of rejecting.
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        // Queuing a partition's fetch is quick, but kafkajs' own steps around each take promise
        // turns: all of one fetch's partitions at once, so the next fetch starts sooner.
        partitionsConsumedConcurrently: 64,
        eachBatch: eachBatchOf(generation, consumer),
      });
    } catch (error) {
      logger.error('kafka consumer failed to start', { groupId, error: (error as Error).message });
      scheduleRestart(`start failed: ${(error as Error).message}`);
    }
  };

  const start = async (): Promise<void> => {
    stopping = false;
    running = true;
    restarts = 0;
    restartDelay = restartInitialMs;
    lastProgress = Date.now();
    if (stallTimeoutMs > 0 && !watchdog) {
      watchdog = setInterval(() => void checkStall(), Math.min(5000, Math.max(100, stallTimeoutMs / 4)));
      watchdog.unref();
    }
    starting = connectAndRun().finally(() => {
      starting = undefined;
    });
    await starting;
  };

  const status = (): ConsumerStatus => {
    if (state !== 'consuming') return { consuming: false, state, reason, restarts };
    if (stalled) return { consuming: false, state, reason: stalled, restarts };
    const silentMs = Date.now() - lastAlive;
    if (silentMs > silenceMs)
      return {
        consuming: false,
        state,
        reason: `no successful fetch or heartbeat for ${silentMs} ms (broker unreachable?)`,
        restarts,
      };
    return { consuming: true, state, restarts };
  };

  /**
   * The watchdog's check: lag on this member's partitions, and no batch started or finished for
   * stallTimeoutMs, while the handler is not knowingly retrying. Then the member is replaced.
   */
  let checking = false;
  const checkStall = async (): Promise<void> => {
    if (checking || stopping || state !== 'consuming' || stalled) return;
    const quietMs = Date.now() - lastProgress;
    if (quietMs < stallTimeoutMs || options.isHeld?.()) return;
    checking = true;
    try {
      const mine = (await lag()).filter((l) => assignment[l.topic]?.includes(l.partition));
      const behind = mine.reduce((n, l) => n + l.lag, 0);
      // Re-checked after the await: a batch may have started meanwhile.
      if (behind === 0 || Date.now() - lastProgress < stallTimeoutMs || stopping || state !== 'consuming')
        return;
      stalled = `stalled: ${behind} messages behind on its partitions and no batch progressed for ${Date.now() - lastProgress} ms; restarting the consumer`;
      logger.error('kafka consumer stalled; replacing it', {
        groupId,
        stalledMs: Date.now() - lastProgress,
        lag: behind,
        partitions: mine.filter((l) => l.lag > 0).map((l) => `${l.topic}/${l.partition}`),
      });
      options.onStall?.({ groupId, stalledMs: Date.now() - lastProgress, lag: behind });
      replace();
    } catch (error) {
      // Lag unknown (broker unreachable): that is not a stall, and readiness says so already.
      logger.debug('watchdog could not read lag', { groupId, error: (error as Error).message });
    } finally {
      checking = false;
    }
  };

  /** Abandons the current consumer without waiting for it (or its writer) and starts a fresh one. */
  function replace(why?: string): void {
    const old = consumer;
    generation++;
    clearQueue();
    // The abandoned writers may never return: the fresh member's do not wait for them.
    writers.clear();
    consumer = newConsumer();
    wire(consumer, generation);
    // Not awaited: a frozen consumer's disconnect waits for its frozen batch.
    void old.disconnect().catch(() => undefined);
    scheduleRestart(why ?? stalled ?? 'replaced');
  }

  const getAdmin = (): Promise<Admin> => {
    if (admin) return Promise.resolve(admin);
    adminConnecting ??= (async () => {
      const a = kafka.admin();
      await a.connect();
      admin = a;
      return a;
    })().finally(() => {
      adminConnecting = undefined;
    });
    return adminConnecting;
  };

  // Built on fetchTopicOffsets + fetchOffsets because the dev broker lacks ListGroups and
  // DescribeGroups (docs/architecture.md, "The development Kafka broker").
  const lag = async (): Promise<PartitionLag[]> => {
    const a = await getAdmin();
    const committed = await a.fetchOffsets({ groupId, topics });
    const result: PartitionLag[] = [];
    for (const topic of topics) {
      const ends = await a.fetchTopicOffsets(topic);
      const byPartition = new Map(
        (committed.find((c) => c.topic === topic)?.partitions ?? []).map((p) => [p.partition, p.offset]),
      );
      for (const end of ends) {
        const committedOffset = byPartition.get(end.partition) ?? '-1';
        const from = BigInt(committedOffset) >= 0n ? BigInt(committedOffset) : BigInt(end.low);
        const lagValue = BigInt(end.high) - from;
        result.push({
          topic,
          partition: end.partition,
          committedOffset,
          highWatermark: end.high,
          lag: Number(lagValue > 0n ? lagValue : 0n),
        });
      }
    }
    return result.sort((x, y) => x.topic.localeCompare(y.topic) || x.partition - y.partition);
  };

  const stop = async (): Promise<void> => {
    running = false;
    stopping = true;
    clearTimeout(restartTimer);
    restartTimer = undefined;
    clearInterval(watchdog);
    watchdog = undefined;
    await starting?.catch(() => undefined);
    // What is queued is written and committed first (a retrying step gives up at once: the
    // batch is then not committed, and read again by the next member); fetch loops waiting for
    // room are let go. Then disconnect() stops the runner.
    wakeRoomWaiters();
    kick(generation, consumer, true);
    while (writers.size > 0) await Promise.all([...writers.values()].map((w) => w.catch(() => undefined)));
    clearQueue();
    await consumer.disconnect();
    state = 'stopped';
    reason = 'stopped';
    const a = admin ?? (adminConnecting ? await adminConnecting.catch(() => undefined) : undefined);
    admin = undefined;
    await a?.disconnect();
  };

  return {
    start,
    stop,
    lag,
    isRunning: () => running,
    status,
    get consumer() {
      return consumer;
    },
  };
}
