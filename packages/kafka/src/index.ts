// @sett/kafka: topic names, the capture message format, and the Kafka client, batching
// producer, consumer runner and topic admin that Sett's services share.
export * from './types';
export * from './topics';
export * from './message';
export * from './client';
export * from './security';
export * from './batching-producer';
export * from './partitioner';
export * from './consumer-runner';
export * from './topic-admin';
