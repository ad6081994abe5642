// The values the ingestion pipeline passes between its steps. Every step returns an explicit
// result: ok with the next value, drop (counted, not ingested: no name or distinct_id, see
// docs/interface.md "Events that are not ingested", and unknown tokens), or dlq (sent to the dead letter topic with the reason, never retried).
import type { CaptureMessage } from '@sett/kafka';

export type DropReason =
  | 'missing_event_name'
  | 'missing_distinct_id'
  | 'unknown_token'
  | 'duplicate_in_batch';

export type StepResult<T> =
  | { kind: 'ok'; value: T }
  | { kind: 'drop'; reason: DropReason }
  | { kind: 'dlq'; reason: string };

export const ok = <T>(value: T): StepResult<T> => ({ kind: 'ok', value });
export const drop = <T>(reason: DropReason): StepResult<T> => ({ kind: 'drop', reason });
export const dlq = <T>(reason: string): StepResult<T> => ({ kind: 'dlq', reason });

/** Warnings about an event that was still ingested (counted and logged, rate limited). */
export type IngestionWarning =
  | 'timestamp_missing'
  | 'timestamp_invalid'
  | 'timestamp_in_future'
  | 'sent_at_invalid'
  | 'now_invalid';

/** A decoded and validated event, not yet tied to a project. */
export type PreparedEvent = {
  /** Kafka offset of the message, for logs and dead letters. */
  offset: string;
  uuid: string;
  token: string;
  distinctId: string;
  event: string;
  properties: Record<string, unknown>;
  /** properties as stored (JSON), serialized once. */
  propertiesJson: string;
  /** ISO 8601, UTC, after clock-skew correction. */
  timestamp: string;
  historical: boolean;
  /** False when $process_person_profile is false: the event is stored without a person. */
  processPerson: boolean;
  warnings: IngestionWarning[];
};

/** A prepared event whose token resolved to a project. */
export type TeamEvent = PreparedEvent & { teamId: number };

export type { CaptureMessage };
