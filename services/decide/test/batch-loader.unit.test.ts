import { createBatchLoader } from '../src/persons/person-store';

function fakeLoader(maxBatch = 100, fail?: (keys: string[]) => boolean) {
  const calls: Array<[number, string[]]> = [];
  const loader = createBatchLoader<string | null>({
    maxBatch,
    async loadMany(teamId, keys) {
      calls.push([teamId, keys]);
      if (fail?.(keys)) throw new Error('db down');
      return new Map(keys.map((k) => [k, k.startsWith('known') ? `person:${teamId}:${k}` : null]));
    },
  });
  return { loader, calls };
}

describe('createBatchLoader', () => {
  it('loads the keys asked for in one turn with one call per project, duplicates shared', async () => {
    const { loader, calls } = fakeLoader();
    const answers = await Promise.all([
      loader.load(1, 'known-a'),
      loader.load(1, 'unknown-b'),
      loader.load(1, 'known-a'),
      loader.load(2, 'known-a'),
    ]);
    expect(answers).toEqual(['person:1:known-a', null, 'person:1:known-a', 'person:2:known-a']);
    expect(calls).toEqual([
      [1, ['known-a', 'unknown-b']],
      [2, ['known-a']],
    ]);
  });

  it('starts a new batch in the next turn and splits batches at maxBatch', async () => {
    const { loader, calls } = fakeLoader(2);
    await Promise.all(['known-1', 'known-2', 'known-3'].map((k) => loader.load(7, k)));
    await loader.load(7, 'known-4');
    expect(calls).toEqual([
      [7, ['known-1', 'known-2']],
      [7, ['known-3']],
      [7, ['known-4']],
    ]);
  });

  it('rejects every lookup of a failed batch and only those', async () => {
    const { loader } = fakeLoader(1, (keys) => keys.includes('known-bad'));
    const [bad, good] = await Promise.allSettled([loader.load(1, 'known-bad'), loader.load(1, 'known-ok')]);
    expect(bad).toMatchObject({ status: 'rejected', reason: new Error('db down') });
    expect(good).toEqual({ status: 'fulfilled', value: 'person:1:known-ok' });
  });
});
