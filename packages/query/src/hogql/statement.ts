// The last steps between a compiled HogQL statement and Postgres, shared by HogQLQuery and
// EventsQuery: dropping parameters the statement does not use, turning what Postgres refuses
// about a query into a 400, and reading the values of the answer.
import { ValidationError } from '@sett/http';
import { isoIn, localOf } from '../time-range';
import type { Type } from './compile';

/**
 * The statement with only the parameters it uses, renumbered: constants read only while
 * compiling (a LIMIT, a time zone name) were bound too, and Postgres refuses a statement with
 * a parameter it cannot type. The SQL holds `$<digits>` nowhere but in parameters.
 */
export function keepUsedParams(sql: string, params: unknown[]): { sql: string; params: unknown[] } {
  const renumbered = new Map<number, number>();
  const kept: unknown[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    const old = Number(n);
    let now = renumbered.get(old);
    if (now === undefined) {
      now = kept.push(params[old - 1]);
      renumbered.set(old, now);
    }
    return `$${now}`;
  });
  return { sql: text, params: kept };
}

// What Postgres may refuse in a query the compiler let through: a value out of range (22), a
// grouping or typing mistake the compiler does not foresee (42), a program limit (54) or the
// resources the query would need (53). All are about the query, so a 400 with Postgres' words;
// a timeout stays a 504 (the statement runner's).
const CLIENT_CLASSES = new Set(['22', '42', '53', '54']);

export function refusedByDatabase(err: unknown, attr = 'query.query'): ValidationError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !CLIENT_CLASSES.has(code.slice(0, 2))) return undefined;
  // Postgres' words, without the table aliases the compiler made up (s1.event is event).
  const message = (err as Error).message.replace(/"s\d+\.([^"]+)"/g, '"$1"');
  return new ValidationError(`${attr}: the database refused the query: ${message}.`, attr, 'hogql_refused');
}

/** A timestamp as PostHog shows it: ISO with the offset of its zone, milliseconds when any. */
function dateTimeText(d: Date, zone: string): string {
  const text = isoIn(localOf(d, zone), zone);
  const ms = d.getUTCMilliseconds();
  return ms === 0 ? text : `${text.slice(0, 19)}.${String(ms).padStart(3, '0')}${text.slice(19)}`;
}

/**
 * How a compiled column's values are read from the driver: int8 and numeric as numbers (text past
 * what a double holds exactly), timestamps as ISO text with the offset of their zone (or in UTC
 * with `Z`, `utc`), arrays element by element.
 */
export function valueReader(type: Type, timeZone: string, utc = false): (v: unknown) => unknown {
  switch (type.kind) {
    case 'Int':
    case 'Float':
      // int8 and numeric arrive as text: numbers, unless past what a double holds exactly.
      return (v) => {
        if (v === null || typeof v === 'number') return v;
        const n = Number(v);
        return type.kind === 'Int' && !Number.isSafeInteger(n) ? String(v) : n;
      };
    case 'DateTime':
      return (v) =>
        v instanceof Date ? (utc ? v.toISOString() : dateTimeText(v, type.zone ?? timeZone)) : v;
    case 'Array': {
      const each = valueReader(type.of ?? { kind: 'String' }, timeZone, utc);
      return (v) => (Array.isArray(v) ? v.map(each) : v);
    }
    default:
      return (v) => v;
  }
}
