import { resolveWorkers } from '../src';

describe('resolveWorkers', () => {
  it('takes a count as given and auto as the cores available', () => {
    expect(resolveWorkers(1, 8)).toBe(1);
    expect(resolveWorkers(3, 2)).toBe(3);
    expect(resolveWorkers('auto', 2)).toBe(2);
    expect(resolveWorkers('auto', 0)).toBe(1);
  });
});
