// Optional multi-process capture (CAPTURE_WORKERS): a primary that forks workers sharing the
// port (node:cluster), replaces a worker that dies, logs "capture ready" once every worker is
// listening, and on SIGTERM/SIGINT lets every worker drain (in-flight requests answered, producer
// flushed) before it exits itself. Each worker is a complete capture process: its own producer
// (one produce request in flight each), Redis client, token cache, spike limiter and /_metrics.
// What that changes: the spike limit applies per worker, so a key spread over N workers'
// connections overflows at up to N times the configured rate; per-key order still holds for
// everything a client sends after its previous request was acknowledged (an acknowledged event
// is in Kafka before the next request is read), as with one process.
import cluster from 'node:cluster';
import os from 'node:os';
import type { Logger } from '@sett/logger';

/** CAPTURE_WORKERS: a positive count or "auto" (one per core available); unset means 1. */
export function parseWorkers(value: string | undefined, cores = os.availableParallelism()): number {
  const v = value?.trim().toLowerCase();
  if (v === undefined || v === '') return 1;
  if (v === 'auto') return Math.max(1, cores);
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 256)
    throw new Error(`CAPTURE_WORKERS must be a number from 1 to 256 or "auto", got "${value}"`);
  return Number(v);
}

export const WORKER_READY = 'sett-capture-worker-ready';

export function runPrimary(opts: { workers: number; logger: Logger; restartDelayMs?: number }): void {
  const { logger } = opts;
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
        logger.info('capture ready', { workers: opts.workers, port, pid: process.pid });
      }
    });
  };
  for (let i = 0; i < opts.workers; i++) fork();
  logger.info('capture primary started', { workers: opts.workers, pid: process.pid });

  cluster.on('exit', (worker, code, signal) => {
    ready.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info('capture stopped');
        process.exit(0);
      }
      return;
    }
    logger.error('capture worker died; starting another', { pid: worker.process.pid, code, signal });
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
