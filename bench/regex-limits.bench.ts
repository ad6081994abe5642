// `pnpm bench regex-limits`: what the largest flag patterns Sett accepts cost the event loop that
// every project shares (@sett/flags MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM): compiling each kind
// once (a fresh pattern every time, as when a flag is saved or first evaluated) and matching it
// against a 1,012-character value, next to refusing a 749 KB pattern. Compiling is timed in CPU
// time of this process (a busy machine stretches wall time, not that) and in wall time.
// Baseline in the same run: compiling and matching an ordinary pattern
// (`^[a-z0-9.]+@example\.com$`).
// Targets: every accepted kind compiles in under 25 ms of CPU and matches in under 10 ms
// (medians), and the 749 KB pattern is refused in under 1 ms.
import { randomUUID } from 'node:crypto';
import { MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM, matchProperty, regexProblem } from '@sett/flags';
import { ratioLine } from './lib';

const RUNS = 15;
const COMPILE_TARGET_MS = 25;
const MATCH_TARGET_MS = 10;
const REFUSE_TARGET_MS = 1;
const VALUE = `${'é'.repeat(500)}${'a'.repeat(500)}@example.com`;

/** The largest patterns accepted, of each kind that costs the most (tag makes each one new). */
const KINDS: Record<string, (tag: string) => string> = {
  'alternation of 4 KB': (tag) => {
    const words: string[] = [];
    while (words.join('|').length < MAX_REGEX_LENGTH - 40)
      words.push(`${tag}w${words.length}\\.example\\.com`);
    return `@(?:${words.slice(0, -1).join('|')})$`;
  },
  'case-insensitive literal of 4 KB': (tag) => `(?i)${tag}${'x'.repeat(MAX_REGEX_PROGRAM - 16 - tag.length)}`,
  'four .{999} in a row': (tag) => `${'.{999}'.repeat(4)}${tag}`,
  'as many \\pL as allowed': (tag) =>
    `${tag}${'\\pL'.repeat(Math.floor((2 * MAX_REGEX_PROGRAM - 100) / 65))}`,
};

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const cpuMs = (start: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

function measure(make: (tag: string) => string): { compile: number; compileWall: number; match: number } {
  const compile: number[] = [];
  const compileWall: number[] = [];
  const match: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const pattern = make(`t${randomUUID().slice(0, 8)}`);
    let t = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    const problem = regexProblem(pattern);
    compile.push(cpuMs(cpu));
    compileWall.push(ms(t));
    if (problem) throw new Error(`refused: ${problem}`);
    const filter = { key: 'email', type: 'person', operator: 'regex', value: pattern };
    t = process.hrtime.bigint();
    matchProperty(filter, { email: VALUE }, new Date());
    match.push(ms(t));
  }
  return { compile: median(compile), compileWall: median(compileWall), match: median(match) };
}

export async function run(): Promise<boolean> {
  // Warm the compiler and matcher up, as a running service is.
  for (let i = 0; i < 30; i++) measure((tag) => `^${tag}[a-z]+$`);
  const baseline = measure((tag) => `^${tag}[a-z0-9.]+@example\\.com$`);
  let ok = true;
  for (const [name, make] of Object.entries(KINDS)) {
    const m = measure(make);
    process.stdout.write(`${ratioLine(`${name}: compile (CPU)`, m.compile, baseline.compile, 'ms')}\n`);
    process.stdout.write(
      `${ratioLine(`${name}: compile (wall)`, m.compileWall, baseline.compileWall, 'ms')}\n`,
    );
    process.stdout.write(`${ratioLine(`${name}: match 1,012 chars`, m.match, baseline.match, 'ms')}\n`);
    if (m.compile >= COMPILE_TARGET_MS || m.match >= MATCH_TARGET_MS) ok = false;
  }
  const huge = 'abcdefghij'.repeat(76_700);
  const refusals: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = process.hrtime.bigint();
    if (!regexProblem(huge)) throw new Error('the 749 KB pattern was accepted');
    refusals.push(ms(t));
  }
  const refuse = median(refusals);
  process.stdout.write(`${ratioLine('749 KB pattern: refused', refuse, baseline.compile, 'ms')}\n`);
  if (refuse >= REFUSE_TARGET_MS) ok = false;
  process.stdout.write(
    ok
      ? 'ok\n'
      : `FAILED: targets are compile < ${COMPILE_TARGET_MS} ms of CPU, match < ${MATCH_TARGET_MS} ms, refusal < ${REFUSE_TARGET_MS} ms\n`,
  );
  return ok;
}
