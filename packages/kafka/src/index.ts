// @sett/kafka: topic names, the capture message format, and the Kafka clients, producers
// (node-rdkafka, kafkajs), consumer runner and topic admin that Sett's services share.
export * from './types';
export * from './topics';
export * from './message';
export * from './client';
export * from './security';
export * from './producer-types';
export * from './producer';
export * from './kafkajs-producer';
export * from './rdkafka-producer';
export * from './rdkafka-binding';
export * from './partitioner';
export * from './consumer-runner';
export * from './topic-admin';
export * from './client-info';
