// `pnpm bench flags`: a flag `regex` condition with a pattern that is catastrophic for a
// backtracking engine, `^(a+)+$`, against a 10,000-character property value that almost matches
// (`aaaa...a!`), through @sett/flags' matchProperty (RE2 semantics). Baselines in the same run:
// an `exact` condition on the same value (a plain string comparison) and native RegExp on a
// safe pattern (`^a+$`) over the same text. The native RegExp on the catastrophic pattern is
// not run: it needs about a second at 27 characters and doubles with each one more.
// Target: the catastrophic pattern under 1 ms per evaluation at 10,000 characters.
import { matchProperty, type PropertyFilter } from '@sett/flags';
import { fmt, ratioLine } from './lib';

const TARGET_MS = 1;
const LENGTH = 10_000;
const BUDGET_MS = 3_000;

/** Mean milliseconds per call of `fn`, run for about `budgetMs` after a warm-up. */
function timePerCall(fn: () => unknown, budgetMs = BUDGET_MS): number {
  for (let i = 0; i < 50; i++) fn();
  let calls = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(budgetMs) * 1_000_000n;
  let now = started;
  while (now < deadline) {
    for (let i = 0; i < 20; i++) fn();
    calls += 20;
    now = process.hrtime.bigint();
  }
  return Number(now - started) / 1e6 / calls;
}

export async function run(): Promise<boolean> {
  const now = new Date();
  const value = `${'a'.repeat(LENGTH)}!`;
  const props = { email: value };
  const filter = (operator: string, pattern: string): PropertyFilter => ({
    key: 'email',
    type: 'person',
    operator,
    value: pattern,
  });
  const catastrophic = filter('regex', '^(a+)+$');
  const exact = filter('exact', value.slice(0, -1));
  const safeNative = /^a+$/;

  if (matchProperty(catastrophic, props, now) !== false) throw new Error('wrong result for ^(a+)+$');
  if (matchProperty(catastrophic, { email: value.slice(0, -1) }, now) !== true)
    throw new Error('wrong result for ^(a+)+$ on a matching value');

  const re2Ms = timePerCall(() => matchProperty(catastrophic, props, now));
  const exactMs = timePerCall(() => matchProperty(exact, props, now));
  const nativeMs = timePerCall(() => safeNative.test(value));

  process.stdout.write(
    `regex ^(a+)+$ on ${fmt(LENGTH)} chars: ${re2Ms.toFixed(4)} ms per evaluation (target < ${TARGET_MS} ms)\n`,
  );
  process.stdout.write(`${ratioLine('vs exact match of the same value', re2Ms, exactMs, 'ms')}\n`);
  process.stdout.write(`${ratioLine('vs native RegExp ^a+$ on the same text', re2Ms, nativeMs, 'ms')}\n`);
  const ok = re2Ms < TARGET_MS;
  process.stdout.write(ok ? 'ok\n' : `FAILED: over ${TARGET_MS} ms\n`);
  return ok;
}
