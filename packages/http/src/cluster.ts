// Optional multi-process serving (CAPTURE_WORKERS, DECIDE_WORKERS): a primary that forks workers
// sharing the port (node:cluster), logs "<name> ready" once every worker listens, replaces a
// worker that dies, and on SIGTERM/SIGINT lets every worker drain before it exits itself. Each
// worker is a complete service process (own clients and caches), which is how an operator uses
// more than one core per host with a single-threaded runtime.
//
// Metrics: the shared port hands each scrape to whichever worker accepts it, so a worker's own
// registry would make counters jump between workers' values. A worker answering /_metrics asks
// the primary over IPC; the primary collects every worker's registry (prom-client's
// AggregatorRegistry, which has to run in the primary) and sends back the sum.
import cluster from 'node:cluster';
import os from 'node:os';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Logger } from '@sett/logger';

const WORKER_READY = 'sett-worker-ready';
const METRICS_REQUEST = 'sett-metrics-request';
const METRICS_RESPONSE = 'sett-metrics-response';

type MetricsResponse = { type: typeof METRICS_RESPONSE; id: number; metrics?: string; error?: string };

/** In a worker: let the primary's aggregation read this registry. No-op outside a cluster. */
export function shareMetricsWithPrimary(registry: Registry): void {
  if (!cluster.isWorker) return;
  // Constructing one installs prom-client's worker-side listener that answers the primary.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
}

let nextMetricsRequest = 0;

/** In a worker: the metrics of every worker, summed by the primary (Prometheus text). */
export function clusterMetrics(timeoutMs = 6000): Promise<string> {
  const id = ++nextMetricsRequest;
  return new Promise<string>((resolve, reject) => {
    const onMessage = (msg: unknown) => {
      const m = msg as MetricsResponse | null;
      if (m?.type !== METRICS_RESPONSE || m.id !== id) return;
      finish();
      if (m.error !== undefined || m.metrics === undefined) reject(new Error(m.error ?? 'no metrics'));
      else resolve(m.metrics);
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`the primary did not send metrics within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    process.on('message', onMessage);
    if (!process.send?.({ type: METRICS_REQUEST, id })) {
      finish();
      reject(new Error('no IPC channel to the cluster primary'));
    }
  });
}

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
  const aggregator = new AggregatorRegistry();
  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (msg: unknown) => {
      const type = (msg as { type?: string } | null)?.type;
      if (type === METRICS_REQUEST) {
        const id = (msg as { id: number }).id;
        const reply = (answer: Omit<MetricsResponse, 'type' | 'id'>) => {
          if (worker.isConnected()) worker.send({ type: METRICS_RESPONSE, id, ...answer });
        };
        aggregator.clusterMetrics().then(
          (metrics) => reply({ metrics }),
          (err: Error) => {
            logger.warn("could not collect the workers' metrics", { err: err.message });
            reply({ error: err.message });
          },
        );
        return;
      }
      if (type !== WORKER_READY) return;
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
