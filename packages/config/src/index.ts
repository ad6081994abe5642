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
