// What a producer knows about its broker, shared by both clients: every produce request's (or
// send's) outcome is recorded (last success, last failure, failures in a row), and checkReady()
// turns that into a readiness answer: failing while recent requests failed, ready while recent
// ones succeeded, and when idle a cheap metadata probe, bounded in time, so readiness follows the
// broker without traffic. The probe itself is the client's (a metadata request).
import type { ProducerHealth, ReadinessPolicy } from './producer-types';

/** A readiness probe still running after this long is replaced by a fresh one. */
const ABANDON_PROBE_AFTER_MS = 10_000;

export type HealthTracker = {
  recordSuccess(): void;
  recordFailure(message: string): void;
  /** Resolves when ready, rejects with the reason; waits at most the policy's probeTimeoutMs. */
  checkReady(connected: boolean): Promise<void>;
  snapshot(connected: boolean): ProducerHealth;
  /** Forgets a probe in flight (disconnect). */
  reset(): void;
};

/**
 * `probe` fetches metadata of `topics` and throws when a partition has no leader. One runs at a
 * time; concurrent checks share it and its answer is reused for probeCacheMs. A probe stuck in
 * the client's own retries longer than ABANDON_PROBE_AFTER_MS is forgotten, its late answer
 * ignored, so a hung connection cannot pin readiness.
 */
export function createHealthTracker(
  policy: ReadinessPolicy,
  probe: (topics: string[]) => Promise<void>,
): HealthTracker {
  const now = policy.now ?? Date.now;
  const freshMs = policy.freshMs ?? 2000;
  const failureHoldMs = policy.failureHoldMs ?? 2000;
  const probeTimeoutMs = policy.probeTimeoutMs ?? 1500;
  const probeCacheMs = policy.probeCacheMs ?? 1000;
  const probeTopics = policy.probeTopics ?? [];
  const health = {
    lastSuccessAt: null as number | null,
    lastFailureAt: null as number | null,
    consecutiveFailures: 0,
    lastError: null as string | null,
  };
  let probing: { promise: Promise<void>; startedAt: number } | undefined;
  let lastProbe: { at: number; error: string | null } | undefined;

  const recordSuccess = (): void => {
    health.lastSuccessAt = now();
    health.consecutiveFailures = 0;
  };
  const recordFailure = (message: string): void => {
    health.lastFailureAt = now();
    health.consecutiveFailures++;
    health.lastError = message;
  };

  const startProbe = (): Promise<void> => {
    const startedAt = now();
    const promise = probe(probeTopics).then(
      () => {
        if (probing?.promise !== promise) return;
        lastProbe = { at: now(), error: null };
        recordSuccess();
      },
      (error: unknown) => {
        const message = `probe failed: ${(error as Error).message}`;
        if (probing?.promise === promise) {
          lastProbe = { at: now(), error: message };
          recordFailure(message);
        }
        throw new Error(message);
      },
    );
    void promise
      .catch(() => undefined)
      .finally(() => {
        if (probing?.promise === promise) probing = undefined;
      });
    probing = { promise, startedAt };
    return promise;
  };

  const checkReady = async (connected: boolean): Promise<void> => {
    if (!connected) throw new Error('producer is not connected');
    const t = now();
    if (
      health.consecutiveFailures > 0 &&
      health.lastFailureAt !== null &&
      t - health.lastFailureAt < failureHoldMs
    )
      throw new Error(
        `kafka: ${health.consecutiveFailures} failed produce request(s), send(s) or probe(s) in a row, last: ${health.lastError}`,
      );
    if (
      health.consecutiveFailures === 0 &&
      health.lastSuccessAt !== null &&
      t - health.lastSuccessAt < freshMs
    )
      return;
    if (lastProbe && t - lastProbe.at < probeCacheMs) {
      if (lastProbe.error) throw new Error(lastProbe.error);
      return;
    }
    if (probing && t - probing.startedAt > ABANDON_PROBE_AFTER_MS) probing = undefined;
    const promise = probing?.promise ?? startProbe();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        promise,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`probe not answered within ${probeTimeoutMs} ms`)),
            probeTimeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    recordSuccess,
    recordFailure,
    checkReady,
    snapshot: (connected) => ({ connected, ...health }),
    reset: () => {
      probing = undefined;
    },
  };
}
