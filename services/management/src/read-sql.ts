// Helpers shared by the hand-written read queries (users, early access features) that run
// through the pg pool instead of Prisma: one round trip per request, rows shaped by the same
// functions as the Prisma rows of the write paths.

/**
 * A timestamptz as JSON text exactly as Prisma's Date.toISOString() prints it: UTC,
 * milliseconds truncated (to_char's MS truncates the microseconds, as Prisma does).
 */
export function isoMs(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** Collects positional parameters while a statement is assembled from fixed fragments. */
export class SqlParams {
  readonly values: unknown[] = [];
  /** `$n` for the value (values never go into the SQL text). */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}
