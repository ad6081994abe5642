// Settling a request's new patterns: within a budget of estimated instructions, small ones on the
// event loop, large ones in a worker thread, with the verdict remembered so that checking them
// again compiles nothing.
import { createRegexChecker, regexProblem } from '../src';

const checker = createRegexChecker();
afterAll(() => checker.close());

test('compiles a large pattern off the event loop and remembers the verdict', async () => {
  const pattern = `(?i)w${Date.now()}${'[Ā-￿]'.repeat(3)}`;
  expect(await checker.prepare([pattern])).toBeUndefined();
  expect(checker.offLoopCompiles).toBe(1);
  expect(regexProblem(pattern)).toBeUndefined();
  // Settled: a second request with it compiles nothing.
  expect(await checker.prepare([pattern])).toBeUndefined();
  expect(checker.offLoopCompiles).toBe(1);
});

test('remembers what the worker refused, with RE2s message', async () => {
  const pattern = `(?i)${'[Ā-￿]'.repeat(2)}(a)\\1`;
  expect(await checker.prepare([pattern])).toBeUndefined();
  expect(regexProblem(pattern)).toMatch(/invalid regex/);
});

test('refuses a set over the budget before compiling any of it', async () => {
  const before = checker.offLoopCompiles;
  const patterns = Array.from({ length: 5 }, (_, i) => `(?i)b${i}${Date.now()}${'[Ā-￿]'.repeat(7)}`);
  expect(await checker.prepare(patterns)).toMatch(/too long to compile together/);
  expect(checker.offLoopCompiles).toBe(before);
  // Patterns refused on sight (over the limit of one pattern) cost nothing and are not counted.
  expect(await checker.prepare([`(?i)${'[Ā-￿]'.repeat(100)}`])).toBeUndefined();
});
