export {
  loadConfig,
  loadConfigOrExit,
  databaseTimeouts,
  ConfigError,
  INGESTION_TOPIC_CHOICES,
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
} from './config';
export type { Config, DatabaseService, IngestionTopicChoice, LoadConfigOptions } from './config';
export { KAFKA_SECURITY_PROTOCOLS, KAFKA_SASL_MECHANISMS } from './kafka-security';
export type {
  KafkaSecurityConfig,
  KafkaSecurityProtocol,
  KafkaSaslConfig,
  KafkaSaslMechanism,
  KafkaTlsConfig,
} from './kafka-security';
export { buildInfo } from './build-info';
export type { BuildInfo } from './build-info';
export { SETTINGS, renderSettingsTable, settingsProblems } from './settings';
export type { SettingRow } from './settings';
export { describeSettings } from './config';
export type { SettingFacts } from './config';
