// Optional multi-process serving (CAPTURE_WORKERS, DECIDE_WORKERS): a primary that forks workers
// sharing the port (node:cluster), logs "<name> ready" once every worker listens, replaces a
// worker that dies, and on SIGTERM/SIGINT lets every worker drain before it exits itself. Each
// worker is a complete service process (own clients, caches and /_metrics), which is how an
// operator uses more than one core per host with a single-threaded runtime.
import cluster from 'node:cluster';
import os from 'node:os';
import type { Logger } from '@sett/logger';

const WORKER_READY = 'sett-worker-ready';

/** A workers setting as a process count: "auto" is one per core available to this process. */
export function resolveWorkers(setting: number | 'auto', cores = os.availableParallelism()): number {
  return setting === 'auto' ? Math.max(1, cores) : Math.max(1, Math.floor(setting));
}

/** Called by a worker once its server listens, so the primary can announce readiness. */
export function notifyWorkerReady(port: number): void {
  if (cluster.isWorker) process.send?.({ type: WORKER_READY, port });
}

export function runClusterPrimary(opts: {
  name: string;
  workers: number;
  logger: Logger;
  restartDelayMs?: number;
}): void {
  const { logger, name } = opts;
  let stopping = false;
  let announced = false;
  const ready = new Set<number>();
  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (msg: unknown) => {
      if ((msg as { type?: string } | null)?.type !== WORKER_READY) return;
      ready.add(worker.id);
      if (!announced && ready.size >= opts.workers) {
        announced = true;
        const port = (msg as { port?: number }).port;
        logger.info(`${name} ready`, { workers: opts.workers, port, pid: process.pid });
      }
    });
  };
  for (let i = 0; i < opts.workers; i++) fork();
  logger.info(`${name} primary started`, { workers: opts.workers, pid: process.pid });

  cluster.on('exit', (worker, code, signal) => {
    ready.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info(`${name} stopped`);
        process.exit(0);
      }
      return;
    }
    logger.error(`${name} worker died; starting another`, { pid: worker.process.pid, code, signal });
    setTimeout(fork, opts.restartDelayMs ?? 1000).unref();
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info(`received ${signal}; stopping workers`);
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    for (const worker of workers) worker?.process.kill('SIGTERM');
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
