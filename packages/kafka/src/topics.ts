// Sett's Kafka topic names (fixed: docs/architecture.md, "Kafka"; partition counts are configuration).
export const TOPICS = {
  main: 'events_plugin_ingestion',
  overflow: 'events_plugin_ingestion_overflow',
  historical: 'events_plugin_ingestion_historical',
  deadLetter: 'events_dead_letter',
} as const;

export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];
