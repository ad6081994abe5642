// Property type inference as PostHog does it, and the tracker's promise: one statement per batch
// for what it has not written recently, none when nothing is new, and a retry after a failure.
import type pg from 'pg';
import { createSilentLogger } from '@sett/logger';
import { createDefinitionTracker } from '../../src/definitions/definition-tracker';
import { inferPropertyType } from '../../src/definitions/property-types';
import type { TeamEvent } from '../../src/pipeline/types';

describe('inferPropertyType', () => {
  it.each([
    ['price', 12.5, 'Numeric'],
    ['count', 0, 'Numeric'],
    ['created_at', 1_767_225_600, 'DateTime'],
    ['event_time', 1_767_225_600_000, 'DateTime'],
    ['created_at', 42, 'Numeric'],
    ['paid', true, 'Boolean'],
    ['flag', ' FALSE ', 'Boolean'],
    ['when', '2026-01-02', 'DateTime'],
    ['when', '2026-01-02T03:04:05.123Z', 'DateTime'],
    ['when', '2026-01-02 03:04:05+02:00', 'DateTime'],
    ['when', 'Tue, 01 Jan 2030 10:00:00 GMT', 'DateTime'],
    ['when', '2026-13-45', 'String'],
    ['name', 'Ada', 'String'],
    ['utm_campaign', 'true', 'String'],
    ['$feature/beta', true, 'String'],
    ['$survey_response_1', 5, 'String'],
    ['nested', { a: 1 }, null],
    ['list', [1], null],
    ['nothing', null, null],
  ])('%s = %j is %s', (key, value, type) => {
    expect(inferPropertyType(key, value)).toBe(type);
  });
});

const event = (teamId: number, name: string, properties: Record<string, unknown>): TeamEvent =>
  ({ teamId, event: name, properties, processPerson: true }) as TeamEvent;

function recordingPool(fail = false) {
  const calls: unknown[][] = [];
  const pool = {
    query: async (_sql: string, params: unknown[]) => {
      calls.push(params);
      if (fail) throw new Error('down');
      return { rows: [{ events: 0, properties: 0, event_properties: 0 }] };
    },
  } as unknown as pg.Pool;
  return { pool, calls };
}

describe('definition tracker', () => {
  it('writes what is new once, in one statement, sorted, and nothing when a batch brings nothing new', async () => {
    const { pool, calls } = recordingPool();
    let t = 0;
    const tracker = createDefinitionTracker({
      pool,
      logger: createSilentLogger(),
      now: () => t,
      refreshMs: 1000,
    });
    const batch = [
      event(2, 'b', { y: 1, x: 'a' }),
      event(1, 'a', { $set: { email: 'e' } }),
      event(2, 'b', { x: 'b' }),
    ];
    await tracker.track(batch, new Map());
    expect(calls).toHaveLength(1);
    const [teams, names, pTeams, kinds, , pNames, types, epTeams, epEvents, epProps] = calls[0]!;
    expect([teams, names]).toEqual([
      [1, 2],
      ['a', 'b'],
    ]);
    expect([pTeams, kinds, pNames, types]).toEqual([
      [1, 2, 2],
      [2, 1, 1],
      ['email', 'x', 'y'],
      ['String', 'String', 'Numeric'],
    ]);
    expect([epTeams, epEvents, epProps]).toEqual([
      [2, 2],
      ['b', 'b'],
      ['x', 'y'],
    ]);
    await tracker.track(batch, new Map());
    expect(calls).toHaveLength(1);
    // Something new: only it goes.
    await tracker.track([event(2, 'b', { x: 1, z: 2 })], new Map());
    expect(calls).toHaveLength(2);
    expect(calls[1]![5]).toEqual(['z']);
    expect(calls[1]![1]).toEqual([]);
    // After the refresh interval the names go again (last_seen_at moves on).
    t = 1000;
    await tracker.track([event(2, 'b', {})], new Map());
    expect(calls[2]![1]).toEqual(['b']);
  });

  it('tracks one batch at a time: two lanes with the same new names write them once', async () => {
    const { pool, calls } = recordingPool();
    const tracker = createDefinitionTracker({ pool, logger: createSilentLogger() });
    const lane = [event(1, '$pageview', { $browser: 'Chrome', $current_url: '/' })];
    await Promise.all([tracker.track(lane, new Map()), tracker.track(lane, new Map())]);
    expect(calls).toHaveLength(1);
    // A failed write does not stop the next batch from being tracked.
    const failing = recordingPool(true);
    const other = createDefinitionTracker({ pool: failing.pool, logger: createSilentLogger() });
    const results = await Promise.allSettled([other.track(lane, new Map()), other.track(lane, new Map())]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(failing.calls).toHaveLength(2);
  });

  it('forgets nothing it failed to write: the next batch tries again', async () => {
    const failing = recordingPool(true);
    const tracker = createDefinitionTracker({ pool: failing.pool, logger: createSilentLogger() });
    await expect(tracker.track([event(1, 'a', {})], new Map())).rejects.toThrow('down');
    await expect(tracker.track([event(1, 'a', {})], new Map())).rejects.toThrow('down');
    expect(failing.calls).toHaveLength(2);
  });

  it('keeps at most rememberMax names in memory, starting again from empty past it', async () => {
    const { pool, calls } = recordingPool();
    const tracker = createDefinitionTracker({ pool, logger: createSilentLogger(), rememberMax: 2 });
    await tracker.track([event(1, 'a', {}), event(1, 'b', {})], new Map());
    await tracker.track([event(1, 'a', {}), event(1, 'b', {})], new Map());
    expect(calls).toHaveLength(1);
    await tracker.track([event(1, 'c', {})], new Map());
    await tracker.track([event(1, 'a', {})], new Map());
    expect(calls).toHaveLength(3);
    await tracker.track([event(1, 'a', {})], new Map());
    expect(calls).toHaveLength(3);
  });

  it('records group properties under the index of their type, and skips what is hidden or too long', async () => {
    const { pool, calls } = recordingPool();
    const tracker = createDefinitionTracker({ pool, logger: createSilentLogger() });
    await tracker.track(
      [
        event(1, '$groupidentify', {
          $group_type: 'company',
          $group_key: 'c',
          $group_set: { seats: 3 },
          distinct_id: 'x',
          ['k'.repeat(401)]: 1,
        }),
      ],
      new Map([[1, new Map([['company', 3]])]]),
    );
    const [, , , kinds, indexes, names] = calls[0]!;
    expect([kinds, indexes, names]).toEqual([[3], [3], ['seats']]);
  });
});
