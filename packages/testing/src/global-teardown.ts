// Jest global teardown: stops the development broker that the global setup started (if it
// started one; a broker given through KAFKA_BROKERS is not ours to stop).
import { BROKER_HANDLE_KEY } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const store = globalThis as Record<string, unknown>;
  const broker = store[BROKER_HANDLE_KEY] as { stop(): Promise<void> } | undefined;
  if (!broker) return;
  delete store[BROKER_HANDLE_KEY];
  await broker.stop();
}
