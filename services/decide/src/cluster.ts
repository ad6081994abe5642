// Optional multi-process decide (DECIDE_WORKERS): a primary that forks workers sharing the
// port (node:cluster), replaces a worker that dies, and on SIGTERM/SIGINT lets every worker
// drain before it exits itself. Each worker is a complete decide process (own pools, caches and
// /_metrics: scrape per process or aggregate). Flag evaluation is CPU-bound, so this is how an
// operator uses more than one core per host.
import cluster from 'node:cluster';
import os from 'node:os';
import type { Logger } from '@sett/logger';

/** DECIDE_WORKERS as a process count: "auto" is one per core available to this process. */
export function resolveWorkers(setting: number | 'auto', cores = os.availableParallelism()): number {
  return setting === 'auto' ? Math.max(1, cores) : Math.max(1, Math.floor(setting));
}

export function runPrimary(opts: { workers: number; logger: Logger; restartDelayMs?: number }): void {
  const { logger } = opts;
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < opts.workers; i++) fork();
  logger.info('decide primary started', { workers: opts.workers, pid: process.pid });

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info('decide primary stopped');
        process.exit(0);
      }
      return;
    }
    logger.error('decide worker died; starting another', { pid: worker.process.pid, code, signal });
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
