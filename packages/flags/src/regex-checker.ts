// Settles regular expressions that a request brings (flag and cohort conditions, property
// filters of queries and lists) before the request is checked, without stalling the event loop
// every project shares. Each pattern's compile is bounded (MAX_REGEX_LENGTH, and an estimate of
// its program that counts repeats, Unicode classes and case-folded ranges: regex-cost.ts), but a
// request may carry many, each new (a fresh suffix defeats any cache). So:
// - a request has a budget of estimated instructions for the patterns this process has not met
//   yet (REQUEST_REGEX_BUDGET: about 60 ms of compiling); past it the request is refused, before
//   anything is compiled;
// - patterns estimated small compile here, one per turn of the event loop;
// - larger ones compile in a worker thread, one at a time, each within a deadline past which
//   the worker is replaced and the pattern refused.
// Either way the verdict is remembered (property-match.ts), so regexProblem answers at once and
// the pattern is never compiled on the event loop for checking.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { isRegexCompiled, regexEstimateProblem, regexProblem, rememberRegexVerdict } from './property-match';
import { estimateRegexProgram } from './regex-cost';

/** Estimated instructions of new patterns one request may bring (about 60 ms of compiling). */
export const REQUEST_REGEX_BUDGET = 32_768;
/** Patterns estimated above this compile in the worker thread (about 1 ms and more). */
const WORKER_THRESHOLD = 512;
/** A pattern within the estimate compiles in a few milliseconds; this only catches the unforeseen. */
const WORKER_DEADLINE_MS = 2_000;

export interface RegexChecker {
  /**
   * Compiles (or refuses, remembering why) the patterns not met yet, within `budget` estimated
   * instructions. Resolves with undefined, after which regexProblem answers each of them without
   * compiling; or with a sentence saying why the set is refused (over the budget), having
   * compiled none of them.
   */
  prepare(patterns: Iterable<unknown>, budget?: number): Promise<string | undefined>;
  /** Patterns compiled in the worker so far (for tests and metrics). */
  readonly offLoopCompiles: number;
  close(): Promise<void>;
}

interface Found {
  size?: number;
  error?: string;
}

// The worker's whole program: compile what it is sent, answer the program size or the error.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { RE2JS } = require(workerData.re2js);
parentPort.on('message', ({ id, pattern }) => {
  try {
    parentPort.postMessage({ id, size: RE2JS.compile(pattern).programSize() });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

const repr = (value: unknown) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null'));
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createRegexChecker(): RegexChecker {
  const re2js = createRequire(__filename).resolve('re2js');
  let worker: Worker | undefined;
  let nextId = 0;
  let offLoop = 0;
  const pending = new Map<number, (found: Found) => void>();
  // One pattern at a time: the deadline of each is its own compile, not a queue's wait.
  let queue: Promise<unknown> = Promise.resolve();

  function start(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { re2js } });
    w.unref();
    w.on('message', ({ id, size, error }: Found & { id: number }) => {
      pending.get(id)?.({ size, error });
      pending.delete(id);
    });
    const fail = (why: string) => {
      if (worker === w) worker = undefined;
      for (const [id, resolve] of pending) {
        resolve({ error: why });
        pending.delete(id);
      }
    };
    w.on('error', (err) => fail(`the regex compiler failed: ${err.message}`));
    w.on('exit', () => fail('the regex compiler stopped'));
    return w;
  }

  function compileOffLoop(pattern: string): Promise<Found> {
    const run = queue.then(
      () =>
        new Promise<Found>((resolve) => {
          worker ??= start();
          const w = worker;
          const id = nextId++;
          const timer = setTimeout(() => {
            pending.delete(id);
            worker = undefined;
            void w.terminate();
            resolve({ error: `it took longer than ${WORKER_DEADLINE_MS} ms to compile` });
          }, WORKER_DEADLINE_MS);
          pending.set(id, (found) => {
            clearTimeout(timer);
            resolve(found);
          });
          offLoop++;
          w.postMessage({ id, pattern });
        }),
    );
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    get offLoopCompiles() {
      return offLoop;
    },
    async prepare(patterns, budget = REQUEST_REGEX_BUDGET) {
      const fresh = new Map<string, number>();
      let total = 0;
      for (const pattern of patterns) {
        const text = repr(pattern);
        if (fresh.has(text) || isRegexCompiled(text)) continue;
        // Refused on sight (too long, or estimated over the limit): costs nothing to settle.
        if (regexEstimateProblem(text)) {
          regexProblem(text);
          continue;
        }
        const estimate = estimateRegexProgram(text);
        fresh.set(text, estimate);
        total += estimate;
      }
      if (total > budget)
        return `the regular expressions of this request would take too long to compile together (about ${Math.round(total)} instructions, at most ${budget}): use fewer or simpler patterns`;
      for (const [text, estimate] of fresh) {
        if (isRegexCompiled(text)) continue;
        if (estimate <= WORKER_THRESHOLD) {
          regexProblem(text);
          await nextTurn();
        } else rememberRegexVerdict(text, await compileOffLoop(text));
      }
      return undefined;
    },
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
  };
}
