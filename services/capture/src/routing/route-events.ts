// Which topic and key each message goes to (docs/architecture.md, "Kafka"): historical batches to the
// historical topic, keyed, never overflowed; live events to the main topic keyed
// `<token>:<distinct_id>` unless the key spiked past its token bucket, then to the overflow
// topic without a key so the load spreads. Events with `$process_person_profile: false` keep
// their key: it costs nothing and keeps one distinct id's events in order.
import { TOPICS, type CaptureMessage, type ProducerMessage } from '@sett/kafka';
import type { KeyLimiter } from './token-bucket';

export type Routed = { topic: string; message: ProducerMessage };

export function messageKey(m: Pick<CaptureMessage, 'token' | 'distinct_id'>): string {
  return `${m.token}:${m.distinct_id}`;
}

/** limiter null: overflow routing disabled. */
export function routeMessage(m: CaptureMessage, value: string | Buffer, limiter: KeyLimiter | null): Routed {
  const key = messageKey(m);
  if (m.historical_migration) return { topic: TOPICS.historical, message: { key, value } };
  if (limiter && !limiter.take(key)) return { topic: TOPICS.overflow, message: { key: null, value } };
  return { topic: TOPICS.main, message: { key, value } };
}
