export {
  loadConfig,
  loadConfigOrExit,
  ConfigError,
  INGESTION_TOPIC_CHOICES,
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
} from './config';
export type { Config, IngestionTopicChoice } from './config';
