// waitFor polls until the check yields a value, fails at once when the check throws, and on
// timeout names what it waited for.
import { waitFor } from '../src/wait-for';

test('resolves with the first value the check yields', async () => {
  let calls = 0;
  const value = await waitFor('the third call', () => (++calls === 3 ? { calls } : undefined), {
    intervalMs: 1,
  });
  expect(value).toEqual({ calls: 3 });
  expect(await waitFor('zero', () => 0)).toBe(0);
});

test('a throwing check fails the wait at once', async () => {
  const started = Date.now();
  await expect(
    waitFor(
      'a process that exited',
      () => {
        throw new Error('exited with 1');
      },
      { timeoutMs: 5_000 },
    ),
  ).rejects.toThrow('exited with 1');
  expect(Date.now() - started).toBeLessThan(1_000);
});

test('times out naming what it waited for', async () => {
  const started = Date.now();
  await expect(waitFor('the row', () => false, { timeoutMs: 60, intervalMs: 5 })).rejects.toThrow(
    'timed out after 60 ms waiting for the row',
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(60);
});
