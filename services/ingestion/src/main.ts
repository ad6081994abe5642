// Composition root of the ingestion worker: config, clients, consumers, health port, shutdown.
import express from 'express';
import { loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import { createMetricsRegistry, createServiceApp, startService } from '@sett/http';
import { createPgPool } from '@sett/db';
import { createKafka } from '@sett/kafka';

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'ingestion' });
  if (config.kafkaBrokers.length === 0) throw new Error('KAFKA_BROKERS is not set');
  const pool = createPgPool({ databaseUrl: config.databaseUrl, max: config.databasePoolSize, applicationName: 'sett-ingestion' });
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'sett-ingestion', logger, logLevel: 'warn' });
  const admin = kafka.admin();
  await admin.connect();
  const app = createServiceApp({
    name: 'ingestion',
    logger,
    registry: createMetricsRegistry('ingestion'),
    readiness: {
      postgres: async () => void (await pool.query('SELECT 1')),
      kafka: async () => void (await admin.listTopics()),
    },
    routes: express.Router(),
  });
  await startService({
    name: 'ingestion',
    app,
    host: config.host,
    port: config.ports.ingestion,
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    closers: [() => admin.disconnect(), () => pool.end()],
    extra: { topics: config.ingestion.topics },
  });
}

main().catch((err) => {
  process.stderr.write(`ingestion failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
