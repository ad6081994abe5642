import { createGenerations } from '../src/generations';

test('a stamp stays current until its key or every key is invalidated', () => {
  const g = createGenerations<number>();
  const one = g.stamp(1);
  const two = g.stamp(2);
  expect(g.current(1, one)).toBe(true);
  g.bump(1);
  expect(g.current(1, one)).toBe(false);
  expect(g.current(2, two)).toBe(true);
  const again = g.stamp(1);
  g.bumpAll();
  expect(g.current(1, again)).toBe(false);
  expect(g.current(2, two)).toBe(false);
  expect(g.current(3, g.stamp(3))).toBe(true);
});
