// Looking up presented secret keys (personal API keys, project secret keys) without letting
// guessers cost a Postgres query each, and without letting anyone's guesses lock a valid key
// out. Shared by decide's local evaluation and management's authentication.
//
// - Every answer, found or not, is remembered for `ttlMs` (a negative cache too), so polling and
//   repeated guesses of one key cost no query; concurrent misses for one key share one lookup.
// - Per client address (the caller reads it with the trusted-proxy rule, so a client cannot
//   choose it): a client whose lookups found no key `unknownLimit` times, each time within
//   `windowMs` of the previous one, is over the limit until it stops for that long.
// - A client over the limit still gets its key looked up, never refused blind: a valid key is
//   served whoever else (or the same address) guessed before. But its lookups draw on a small
//   process-wide probation budget (`probationPerSecond`, `probationBurst`), so however many
//   addresses guess, they cost at most that many queries a second together; an unknown key, or
//   an empty budget, answers `throttled`. Only a valid key presented from an address that is
//   itself guessing flat out at that moment can meet an empty budget.
import { createLocalCache } from '@sett/cache';

/** Unknown keys one client may present before its lookups go on probation. */
export const UNKNOWN_KEY_LIMIT = 30;
/** How long a client must stop presenting unknown keys to be forgiven. */
export const UNKNOWN_KEY_WINDOW_MS = 60_000;
/** Lookups per second for every client over the limit together, and their burst. */
export const PROBATION_PER_SECOND = 5;
export const PROBATION_BURST = 10;

export type KeyLookupResult<V> =
  | { kind: 'found'; value: V }
  | { kind: 'unknown' }
  | { kind: 'throttled'; retryAfterSeconds: number };

export interface KeyLookupOptions<V> {
  /** The stored value of a key (one Postgres query), or null when there is none. */
  load: (key: string) => Promise<V | null>;
  /** How long an answer, found or not, is remembered. */
  ttlMs: number;
  maxEntries?: number;
  unknownLimit?: number;
  windowMs?: number;
  probationPerSecond?: number;
  probationBurst?: number;
  now?: () => number;
}

export interface KeyLookup<V> {
  /**
   * What `key` names, for a request from `client` (undefined: not throttled). `race` bounds the
   * wait for a lookup (the lookup itself goes on and is remembered). Rejects when `load` does.
   */
  find(
    key: string,
    client: string | undefined,
    race?: <T>(work: Promise<T>) => Promise<T>,
  ): Promise<KeyLookupResult<V>>;
  /** Forget every remembered answer (after keys or their users changed); counts are kept. */
  clear(): void;
}

export function createKeyLookup<V>(opts: KeyLookupOptions<V>): KeyLookup<V> {
  const now = opts.now ?? Date.now;
  const limit = opts.unknownLimit ?? UNKNOWN_KEY_LIMIT;
  const windowMs = opts.windowMs ?? UNKNOWN_KEY_WINDOW_MS;
  const retryAfterSeconds = Math.max(1, Math.ceil(windowMs / 1000));
  const answers = createLocalCache<string, V | null>({
    ttlMs: opts.ttlMs,
    maxEntries: opts.maxEntries ?? 10_000,
    now,
  });
  // Per client address: unknown keys presented, forgotten after a quiet window.
  const misses = createLocalCache<string, number>({ ttlMs: windowMs, maxEntries: 50_000, now });
  const probation = tokenBucket(
    opts.probationPerSecond ?? PROBATION_PER_SECOND,
    opts.probationBurst ?? PROBATION_BURST,
    now,
  );
  const direct = <T>(work: Promise<T>) => work;

  const overLimit = (client: string | undefined) =>
    client !== undefined && (misses.get(client) ?? 0) >= limit;
  const countMiss = (client: string | undefined) => {
    if (client !== undefined) misses.set(client, (misses.get(client) ?? 0) + 1);
  };
  const throttled = (): KeyLookupResult<V> => ({ kind: 'throttled', retryAfterSeconds });

  return {
    async find(key, client, race = direct) {
      const hit = answers.get(key);
      const onProbation = overLimit(client);
      // Remembered answers cost nothing: a valid key is served, a known unknown one refused.
      if (hit !== undefined && hit !== null) return { kind: 'found', value: hit };
      if (hit === null) return onProbation ? throttled() : { kind: 'unknown' };
      if (onProbation && !probation.take()) return throttled();
      const value = await race(answers.getOrLoad(key, () => opts.load(key)));
      if (value !== null) return { kind: 'found', value };
      countMiss(client);
      return onProbation ? throttled() : { kind: 'unknown' };
    },
    clear() {
      answers.clear();
    },
  };
}

function tokenBucket(perSecond: number, burst: number, now: () => number) {
  let tokens = burst;
  let at = now();
  return {
    take(): boolean {
      const t = now();
      tokens = Math.min(burst, tokens + ((t - at) / 1000) * perSecond);
      at = t;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
  };
}
