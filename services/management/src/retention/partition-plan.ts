// Pure arithmetic of the events partitions (docs/data-lifecycle.md): one partition per calendar
// month (UTC) of UUIDv7 time, named events_pYYYY_MM in the schema events_partitions, bounded by
// the lowest v7 uuid of the month's first millisecond and of the next month's. Shared by the
// retention job and its tests; the migration's SQL function uuid7_floor computes the same bound.
import { randomUUID } from 'node:crypto';

export const PARTITION_SCHEMA = 'events_partitions';
export const DEFAULT_PARTITION = 'events_default';

export interface MonthPartition {
  name: string;
  /** First millisecond of the month (UTC). */
  from: Date;
  /** First millisecond of the next month. */
  to: Date;
  fromUuid: string;
  toUuid: string;
}

/** The lowest UUIDv7 of a moment: its unix milliseconds as the first 48 bits, the rest zero. */
export function uuid7Floor(at: Date): string {
  const ms = at.getTime();
  if (!Number.isFinite(ms) || ms < 0 || ms >= 2 ** 48)
    throw new RangeError(`no UUIDv7 for ${at.toISOString()}`);
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** A UUIDv7 of the given unix milliseconds with a random tail (tests and benchmarks). */
export function uuidv7At(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0');
  const tail = randomUUID().replace(/-/g, '').slice(13);
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7${tail.slice(0, 3)}-8${tail.slice(3, 6)}-${tail.slice(6, 18)}`;
}

/** The unix milliseconds a UUIDv7 carries, or null when the uuid is not version 7. */
export function uuid7Time(uuid: string): number | null {
  if (uuid.length !== 36 || uuid[14] !== '7') return null;
  return parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16);
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

export function addMonths(month: Date, n: number): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + n, 1));
}

export function monthPartition(month: Date): MonthPartition {
  const from = monthStart(month);
  const to = addMonths(from, 1);
  const name = `events_p${from.getUTCFullYear()}_${String(from.getUTCMonth() + 1).padStart(2, '0')}`;
  return { name, from, to, fromUuid: uuid7Floor(from), toUuid: uuid7Floor(to) };
}

/** The partitions that should exist ahead of `now`: this month and the next `monthsAhead`. */
export function partitionsAhead(now: Date, monthsAhead: number): MonthPartition[] {
  const out: MonthPartition[] = [];
  for (let i = 0; i <= monthsAhead; i++) out.push(monthPartition(addMonths(monthStart(now), i)));
  return out;
}

/** Parses a partition name back to its month; null for names that are not monthly partitions. */
export function partitionMonth(name: string): Date | null {
  const m = /^events_p(\d{4})_(\d{2})$/.exec(name);
  if (!m) return null;
  const month = Number(m[2]);
  if (month < 1 || month > 12) return null;
  return new Date(Date.UTC(Number(m[1]), month - 1, 1));
}

/** The oldest moment a project keeps: events with an earlier timestamp are past retention. */
export function retentionCutoff(now: Date, retentionDays: number): Date {
  return new Date(now.getTime() - retentionDays * 86_400_000);
}
