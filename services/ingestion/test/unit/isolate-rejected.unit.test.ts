import { writeIsolatingRejected } from '../../src/pipeline/isolate-rejected';

class Refused extends Error {}

/** A writer that refuses any part holding a bad item, recording the size of every attempt. */
function fakeWriter(bad: Set<number>) {
  const attempts: number[][] = [];
  const stored: number[] = [];
  const write = async (part: number[]) => {
    attempts.push(part);
    if (part.some((i) => bad.has(i))) throw new Refused(`refused ${part.length}`);
    stored.push(...part);
    return part.length;
  };
  return { write, attempts, stored };
}

const isRefused = (e: unknown) => e instanceof Refused;

describe('writeIsolatingRejected', () => {
  it('writes a clean batch once', async () => {
    const w = fakeWriter(new Set());
    const items = Array.from({ length: 500 }, (_, i) => i);
    const out = await writeIsolatingRejected(items, w.write, isRefused);
    expect(out).toEqual({ results: [500], rejected: [], writes: 1 });
  });

  it('stores every good item in order and rejects exactly the bad ones, in far fewer than n writes', async () => {
    const n = 1000;
    const bad = new Set([3, 4, 517, 999]);
    const w = fakeWriter(bad);
    const items = Array.from({ length: n }, (_, i) => i);
    const out = await writeIsolatingRejected(items, w.write, isRefused);
    expect(out.rejected.map((r) => r.item)).toEqual([3, 4, 517, 999]);
    expect(out.rejected[0]!.error).toBeInstanceOf(Refused);
    expect(w.stored).toEqual(items.filter((i) => !bad.has(i))); // order kept
    expect(out.results.reduce((a, b) => a + b, 0)).toBe(n - bad.size);
    const singleWrites = w.attempts.filter((a) => a.length === 1).length;
    expect(out.writes).toBe(w.attempts.length);
    // 4 bad among 1000: about 1 + 2*4*log2(250) = 65 writes, not 1000.
    expect(out.writes).toBeLessThan(80);
    expect(singleWrites).toBeLessThan(10);
  });

  it('rejects everything when everything is bad, and a single bad item with two writes', async () => {
    const all = await writeIsolatingRejected([1, 2, 3], fakeWriter(new Set([1, 2, 3])).write, isRefused);
    expect(all.rejected.map((r) => r.item)).toEqual([1, 2, 3]);
    const one = await writeIsolatingRejected([7], fakeWriter(new Set([7])).write, isRefused);
    expect(one).toMatchObject({ results: [], writes: 1 });
    expect(await writeIsolatingRejected([], fakeWriter(new Set()).write, isRefused)).toEqual({
      results: [],
      rejected: [],
      writes: 0,
    });
  });

  it('lets other failures through (the caller retries the whole batch)', async () => {
    const down = new Error('connection terminated');
    await expect(
      writeIsolatingRejected(
        [1, 2],
        async () => {
          throw down;
        },
        isRefused,
      ),
    ).rejects.toBe(down);
  });
});
