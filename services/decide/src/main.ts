// Entry point of the decide service: config, the app and its clients (compose.ts), start,
// graceful shutdown. The only place that reads the environment. With DECIDE_WORKERS > 1 this
// process becomes a cluster primary and each forked worker runs the rest.
import cluster from 'node:cluster';
import { loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import {
  notifyWorkerReady,
  resolveWorkers,
  runClusterPrimary,
  serverTimeouts,
  startService,
} from '@sett/http';
import { composeDecide } from './compose';

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'decide' });
  const workers = resolveWorkers(config.decide.workers);
  if (workers > 1 && cluster.isPrimary) {
    runClusterPrimary({ name: 'decide', workers, logger });
    return;
  }
  const { decide, closers } = await composeDecide(config, logger);
  const service = await startService({
    // A worker's own "ready" line must not read as the whole service being ready.
    name: cluster.isWorker ? 'decide worker' : 'decide',
    app: decide.app,
    host: config.host,
    port: config.ports.decide,
    timeouts: serverTimeouts(config),
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    extra: { geoip: config.decide.geoipEnabled, ...(cluster.isWorker ? { worker: cluster.worker?.id } : {}) },
    closers,
  });
  notifyWorkerReady(service.port);
}

main().catch((err) => {
  process.stderr.write(`decide failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
