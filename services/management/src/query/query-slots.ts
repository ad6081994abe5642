// How many queries run at once, held in Redis so that the caps hold across management replicas:
// at most `global` in all (kept below the query pool's size, so a query never waits for a
// connection), `perUser` of one user over all their keys and projects, and `perProject` of one
// project. A query takes a slot in all three together or in none (one Lua script), and gives
// them back when it ends. A slot is a lease: a sorted-set member whose score is its expiry, so a
// replica that dies holding slots loses them after `leaseMs` (longer than any query may run).
//
// When Redis does not answer, the same caps are kept in this process alone (counted in
// management_query_slots_local_total): a Redis outage weakens the caps to per replica, it never
// lifts them.
import { randomUUID } from 'node:crypto';
import type { Redis } from '@sett/cache';
import { prom } from '@sett/http';
import type { Logger } from '@sett/logger';

export interface SlotLimits {
  global: number;
  perUser: number;
  perProject: number;
}

export type SlotScope = 'global' | 'user' | 'project';

export interface SlotSubject {
  userId: number;
  teamId: number;
}

export type SlotLease = { ok: true; release(): Promise<void> } | { ok: false; refusedBy: SlotScope };

export interface QuerySlots {
  acquire(subject: SlotSubject): Promise<SlotLease>;
}

// KEYS: the global, user and project sets. ARGV: their limits, the lease id, the lease length in
// ms. Returns 0 when the lease is taken in every set, else the 1-based index of a full one.
const ACQUIRE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[#KEYS + 2])
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[i]) then return i end
end
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], now + lease, ARGV[#KEYS + 1])
  redis.call('PEXPIRE', KEYS[i], lease)
end
return 0
`;

const SCOPES: SlotScope[] = ['global', 'user', 'project'];
const WARN_EVERY_MS = 10_000;

/** One hash tag for every set: the script touches three of them, so on a Redis Cluster they
 * must share a slot (queries are few; one slot carries them). */
export function slotKeys(subject: SlotSubject): string[] {
  return [
    'sett:{query-slots}:global',
    `sett:{query-slots}:user:${subject.userId}`,
    `sett:{query-slots}:project:${subject.teamId}`,
  ];
}

/** A lease whose release runs once, however often it is called. */
function taken(release: () => Promise<void>): SlotLease {
  let released = false;
  return {
    ok: true,
    async release() {
      if (released) return;
      released = true;
      await release();
    },
  };
}

type AcquireCommand = (numKeys: number, ...args: (string | number)[]) => Promise<number>;

export function createQuerySlots(opts: {
  redis: Redis;
  limits: SlotLimits;
  leaseMs: number;
  logger: Logger;
  registry: prom.Registry;
}): QuerySlots {
  const { redis, limits, logger } = opts;
  const command = 'settQuerySlotAcquire';
  redis.defineCommand(command, { lua: ACQUIRE_SCRIPT });
  const acquire = (redis as unknown as Record<string, AcquireCommand>)[command]!.bind(redis);
  const local = new Map<string, number>();
  const fallbacks = new prom.Counter({
    name: 'management_query_slots_local_total',
    help: 'Query slots taken in this process alone because Redis did not answer',
    registers: [opts.registry],
  });
  let lastWarning = 0;

  function takeLocally(keys: string[]): SlotLease {
    fallbacks.inc();
    const now = Date.now();
    if (now - lastWarning >= WARN_EVERY_MS) {
      lastWarning = now;
      logger.warn('query slots held in this process: Redis is not answering');
    }
    const caps = [limits.global, limits.perUser, limits.perProject];
    const full = keys.findIndex((k, i) => (local.get(k) ?? 0) >= caps[i]!);
    if (full !== -1) return { ok: false, refusedBy: SCOPES[full]! };
    for (const k of keys) local.set(k, (local.get(k) ?? 0) + 1);
    return taken(async () => {
      for (const k of keys) {
        const left = (local.get(k) ?? 1) - 1;
        if (left <= 0) local.delete(k);
        else local.set(k, left);
      }
    });
  }

  return {
    async acquire(subject) {
      const keys = slotKeys(subject);
      if (redis.status !== 'ready') return takeLocally(keys);
      const lease = randomUUID();
      const full = await acquire(
        keys.length,
        ...keys,
        limits.global,
        limits.perUser,
        limits.perProject,
        lease,
        opts.leaseMs,
      ).catch((err: Error) => err);
      if (full instanceof Error) return takeLocally(keys);
      if (full !== 0) return { ok: false, refusedBy: SCOPES[full - 1]! };
      // Best effort: a lease Redis does not drop now expires by itself.
      return taken(() =>
        Promise.all(keys.map((k) => redis.zrem(k, lease))).then(
          () => undefined,
          (err: Error) =>
            logger.warn('could not release a query slot; it expires by itself', { err: err.message }),
        ),
      );
    },
  };
}
