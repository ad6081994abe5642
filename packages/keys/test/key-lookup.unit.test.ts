// createKeyLookup with a fake store and clock: remembered answers, the per-client unknown-key
// limit, and the probation lookups that keep valid keys served while bounding what guessing
// costs.
import {
  PROBATION_BURST,
  PROBATION_PER_SECOND,
  UNKNOWN_KEY_LIMIT,
  UNKNOWN_KEY_WINDOW_MS,
  createKeyLookup,
} from '../src';

function setup() {
  let t = 1_000_000;
  const loads: string[] = [];
  const lookup = createKeyLookup<string>({
    ttlMs: 5_000,
    now: () => t,
    load: async (key) => {
      loads.push(key);
      return key.startsWith('valid') ? `value of ${key}` : null;
    },
  });
  return { lookup, loads, advance: (ms: number) => (t += ms) };
}

const guess = (i: number) => `guess-${i}`;

async function exhaust(lookup: ReturnType<typeof setup>['lookup'], client: string) {
  for (let i = 0; i < UNKNOWN_KEY_LIMIT; i++)
    expect(await lookup.find(`${client}-${guess(i)}`, client)).toEqual({ kind: 'unknown' });
}

describe('createKeyLookup', () => {
  it('remembers found and unknown keys: one load per key within the TTL, then again', async () => {
    const { lookup, loads, advance } = setup();
    await lookup.find('valid-1', 'a');
    await lookup.find('valid-1', 'b');
    await lookup.find('nope', 'a');
    await lookup.find('nope', 'a');
    expect(loads).toEqual(['valid-1', 'nope']);
    advance(5_001);
    await lookup.find('nope', 'a');
    expect(loads).toEqual(['valid-1', 'nope', 'nope']);
  });

  it('throttles a client past the limit of unknown keys, and only that client', async () => {
    const { lookup } = setup();
    await exhaust(lookup, 'a');
    expect(await lookup.find('another-guess', 'a')).toEqual({
      kind: 'throttled',
      retryAfterSeconds: UNKNOWN_KEY_WINDOW_MS / 1000,
    });
    expect(await lookup.find('another-guess', 'b')).toEqual({ kind: 'unknown' });
    expect(await lookup.find('another-guess', undefined)).toEqual({ kind: 'unknown' });
  });

  it('never refuses a valid key because of misses, even from the same client', async () => {
    const { lookup } = setup();
    await exhaust(lookup, 'a');
    expect(await lookup.find('valid-2', 'a')).toEqual({ kind: 'found', value: 'value of valid-2' });
  });

  it('bounds the lookups of throttled clients together by the probation budget', async () => {
    const { lookup, loads, advance } = setup();
    for (const client of ['a', 'b', 'c']) await exhaust(lookup, client);
    const before = loads.length;
    const answers = [];
    for (let i = 0; i < 100; i++) answers.push((await lookup.find(`late-${i}`, ['a', 'b', 'c'][i % 3])).kind);
    expect(answers.every((k) => k === 'throttled')).toBe(true);
    expect(loads.length - before).toBe(PROBATION_BURST);
    // The budget refills: a valid key gets through again a moment later.
    expect((await lookup.find('valid-3', 'a')).kind).toBe('throttled');
    advance(Math.ceil(1000 / PROBATION_PER_SECOND));
    expect(await lookup.find('valid-3', 'a')).toEqual({ kind: 'found', value: 'value of valid-3' });
  });

  it('forgives a client that stops for a whole window', async () => {
    const { lookup, advance } = setup();
    await exhaust(lookup, 'a');
    advance(UNKNOWN_KEY_WINDOW_MS - 1);
    expect((await lookup.find('still-guessing', 'a')).kind).toBe('throttled');
    advance(UNKNOWN_KEY_WINDOW_MS + 1);
    expect(await lookup.find('new-guess', 'a')).toEqual({ kind: 'unknown' });
  });

  it('shares one load among concurrent finds of one key, and passes load errors on', async () => {
    let calls = 0;
    let release: (v: string | null) => void = () => undefined;
    const lookup = createKeyLookup<string>({
      ttlMs: 5_000,
      load: () => {
        calls++;
        return new Promise((r) => (release = r));
      },
    });
    const both = Promise.all([lookup.find('k', 'a'), lookup.find('k', 'b')]);
    release('v');
    expect(await both).toEqual([
      { kind: 'found', value: 'v' },
      { kind: 'found', value: 'v' },
    ]);
    expect(calls).toBe(1);
    const failing = createKeyLookup<string>({ ttlMs: 5_000, load: () => Promise.reject(new Error('down')) });
    await expect(failing.find('k', 'a')).rejects.toThrow('down');
  });
});
