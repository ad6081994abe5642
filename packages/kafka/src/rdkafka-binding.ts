// Loads node-rdkafka (an optional, native dependency: it builds against the system's librdkafka
// at install and may be missing) and describes the part of its API Sett uses. The types are ours,
// so that this package type-checks on a machine where the native build failed.

export type RdkafkaDeliveryReport = {
  topic: string;
  partition: number;
  offset: number;
  opaque?: unknown;
};

export type RdkafkaError = Error & { code: number; isFatal?: boolean };

export type RdkafkaMetadata = {
  topics: Array<{ name: string; partitions: Array<{ id: number; leader: number }> }>;
};

export type RdkafkaProducer = {
  connect(options: { timeout?: number; topic?: string }, cb: (error: RdkafkaError | null) => void): void;
  disconnect(timeout: number, cb: (error: RdkafkaError | null) => void): void;
  isConnected(): boolean;
  produce(
    topic: string,
    partition: number | null,
    value: Buffer,
    key: string | null,
    timestamp: number | null,
    opaque: unknown,
  ): unknown;
  poll(): void;
  flush(timeoutMs: number, cb: (error: RdkafkaError | null) => void): void;
  getMetadata(
    options: { topic?: string; allTopics?: boolean; timeout?: number },
    cb: (error: RdkafkaError | null, metadata: RdkafkaMetadata) => void,
  ): void;
  on(
    event: 'delivery-report',
    listener: (error: RdkafkaError | null, report: RdkafkaDeliveryReport) => void,
  ): void;
  on(event: 'event.error', listener: (error: RdkafkaError) => void): void;
  on(event: 'event.stats', listener: (stats: { message: string }) => void): void;
  on(event: 'event.log', listener: (log: { severity: number; fac: string; message: string }) => void): void;
};

export type RdkafkaModule = {
  Producer: new (conf: Record<string, unknown>, topicConf?: Record<string, unknown>) => RdkafkaProducer;
  librdkafkaVersion: string;
  features: string[];
  CODES: { ERRORS: Record<string, number> };
};

let loaded: { module: RdkafkaModule } | { error: Error } | undefined;

/** node-rdkafka, or why it cannot be used here (not installed, native build failed, ...). */
export function loadRdkafka(): { module: RdkafkaModule } | { error: Error } {
  if (!loaded) {
    try {
      loaded = { module: require('node-rdkafka') as RdkafkaModule };
    } catch (error) {
      loaded = { error: error as Error };
    }
  }
  return loaded;
}
