// HogQL text to PostHog's own AST, with PostHog's own parser (@posthog/hogql-parser, its ANTLR
// grammar compiled to WebAssembly): what Sett accepts is exactly what PostHog would parse.
//
// The parser is not safe to run on the event loop with hostile input. Measured with the pinned
// version: twenty nested calls take about half a second, a few hundred chained AND or `+` terms
// overflow its stack (a RuntimeError that leaves the module unusable), and a 20,000-item list
// takes two seconds. So:
// - the text is bounded (MAX_HOGQL_LENGTH) and its bracket nesting counted (MAX_NESTING) before
//   anything parses it;
// - it parses in one worker thread, loaded once per process, one text at a time, each within
//   PARSE_DEADLINE_MS; past it, or when the parser fails, the worker is replaced and the query
//   refused with a 400;
// - answers are remembered by text (the last CACHE_SIZE), so a dashboard's repeated queries
//   never reach the worker again.
import { Worker } from 'node:worker_threads';
import { ServiceUnavailableError, ValidationError } from '@sett/http';
import type { Node, Position } from './ast';

/** Longest HogQL text accepted (characters). */
export const MAX_HOGQL_LENGTH = 20_000;
/** Deepest nesting of brackets accepted: parse time grows steeply with it. */
export const MAX_NESTING = 24;
/** Longest one text may take to parse before it is refused (the worker is replaced). */
export const PARSE_DEADLINE_MS = 2_000;
const CACHE_SIZE = 500;

export type ParseRule = 'select' | 'expr' | 'order';

export interface HogQLParser {
  /** The AST of `text` parsed by `rule`; a ValidationError (400) for a syntax error, a text too
   * long, too deep or too slow to parse. `attr` names the request field in errors. */
  parse(text: string, rule: ParseRule, attr: string): Promise<Node>;
  /** Starts the worker and waits until its parser is loaded and warm (at a service's start, so
   * that no request pays for it); rejects when the parser cannot load. */
  warm(): Promise<void>;
  /** Texts sent to the worker so far (for tests). */
  readonly parsed: number;
  close(): Promise<void>;
}

// The worker's whole program: load the parser once, parse what it is sent. A parser failure
// other than a syntax error (its stack overflowing) leaves its memory in an unknown state, so
// the worker answers and then ends; the next text starts a fresh one.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
require(workerData.parser)().then((parser) => {
  // One parse first: the parser's first text pays for warming its tables (about 80 ms), which
  // is no query's cost. The deadline of each text starts after this.
  parser.parseSelect(workerData.warmUp, false);
  parentPort.postMessage({ ready: true });
  parentPort.on('message', ({ id, text, rule }) => {
    try {
      const json = rule === 'expr' ? parser.parseExpr(text, false) : rule === 'order' ? parser.parseOrderExpr(text, false) : parser.parseSelect(text, false);
      parentPort.postMessage({ id, json });
    } catch (err) {
      parentPort.postMessage({ id, failed: String((err && err.message) || err) });
      process.exit(0);
    }
  });
}, (err) => {
  parentPort.postMessage({ loadFailed: String((err && err.message) || err) });
});
`;
interface Answer {
  json?: string;
  failed?: string;
  /** The parser could not load: the server's fault, not the query's. */
  unavailable?: boolean;
}

const WARM_UP =
  "SELECT event, count() AS n FROM events WHERE timestamp > now() - INTERVAL 7 DAY AND properties.$browser = 'x' GROUP BY event HAVING n > 1 ORDER BY n DESC LIMIT 10";

interface Running {
  worker: Worker;
  /** Resolves when the parser is loaded and warm; rejects when it could not load. */
  ready: Promise<void>;
}

/** Where a position of `text` is, as messages say it: line and column, both from 1. The parser
 * gives AST nodes their line and column, and syntax errors only their offset. */
export function positionText(text: string, p: Position | undefined): string {
  if (!p) return 'an unknown position';
  if (p.line > 0) return `line ${p.line}, column ${p.column + 1}`;
  const before = text.slice(0, Math.max(0, p.offset));
  const line = before.split('\n').length;
  return `line ${line}, column ${before.length - before.lastIndexOf('\n')}`;
}

/** The deepest bracket nesting of `text` outside quotes, and where it first passes `limit`. */
export function nestingOver(text: string, limit: number): number | undefined {
  let depth = 0;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(' || c === '[' || c === '{') {
      if (++depth > limit) return i;
    } else if (c === ')' || c === ']' || c === '}') depth--;
  }
  return undefined;
}

export function createHogQLParser(opts: { deadlineMs?: number } = {}): HogQLParser {
  const deadlineMs = opts.deadlineMs ?? PARSE_DEADLINE_MS;
  // require.resolve, not createRequire: the bundler sees it, so the runtime tree carries the package.
  const parserPath = require.resolve('@posthog/hogql-parser');
  const cache = new Map<string, Node>();
  let running: Running | undefined;
  let nextId = 0;
  let count = 0;
  const pending = new Map<number, (a: Answer) => void>();
  let queue: Promise<unknown> = Promise.resolve();

  function start(): Running {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { parser: parserPath, warmUp: WARM_UP } });
    w.unref();
    let settle!: { resolve: () => void; reject: (err: Error) => void };
    const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    ready.catch(() => undefined);
    w.on('message', (m: Answer & { id?: number; ready?: boolean; loadFailed?: string }) => {
      if (m.ready) return settle.resolve();
      if (m.loadFailed !== undefined)
        return settle.reject(new Error(`the parser did not load: ${m.loadFailed}`));
      pending.get(m.id!)?.({ json: m.json, failed: m.failed });
      pending.delete(m.id!);
    });
    const fail = (why: string) => {
      if (running?.worker === w) running = undefined;
      settle.reject(new Error(why));
      for (const [id, resolve] of pending) {
        resolve({ failed: why });
        pending.delete(id);
      }
    };
    w.on('error', (err) => fail(`the parser failed: ${err.message}`));
    w.on('exit', () => fail('the parser stopped'));
    return { worker: w, ready };
  }

  function inWorker(text: string, rule: ParseRule): Promise<Answer> {
    const run = queue.then(async (): Promise<Answer> => {
      running ??= start();
      const { worker: w, ready } = running;
      try {
        await ready;
      } catch (err) {
        if (running?.worker === w) running = undefined;
        return { failed: (err as Error).message, unavailable: true };
      }
      return new Promise<Answer>((resolve) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          pending.delete(id);
          if (running?.worker === w) running = undefined;
          void w.terminate();
          resolve({ failed: `it took longer than ${deadlineMs} ms to parse` });
        }, deadlineMs);
        pending.set(id, (a) => {
          clearTimeout(timer);
          resolve(a);
        });
        count++;
        w.postMessage({ id, text, rule });
      });
    });
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    get parsed() {
      return count;
    },
    warm() {
      running ??= start();
      return running.ready;
    },
    async parse(text, rule, attr) {
      if (text.length > MAX_HOGQL_LENGTH)
        throw new ValidationError(
          `${attr} is ${text.length} characters long, more than the ${MAX_HOGQL_LENGTH} HogQL accepts here.`,
          attr,
        );
      const deep = nestingOver(text, MAX_NESTING);
      if (deep !== undefined)
        throw new ValidationError(
          `${attr} nests brackets deeper than ${MAX_NESTING} (at character ${deep + 1}): flatten the expression.`,
          attr,
        );
      const key = `${rule}\u0000${text}`;
      const hit = cache.get(key);
      if (hit) {
        cache.delete(key);
        cache.set(key, hit);
        return hit;
      }
      const answer = await inWorker(text, rule);
      if (answer.unavailable)
        throw new ServiceUnavailableError(`HogQL cannot be parsed now: ${answer.failed}.`);
      if (answer.failed !== undefined)
        throw new ValidationError(
          `${attr} could not be parsed (${answer.failed}): simplify the query, for example fewer chained terms or a shorter list.`,
          attr,
        );
      const ast = JSON.parse(answer.json!) as Node & {
        error?: boolean;
        type?: string;
        message?: string;
        start?: Position;
      };
      if (ast.error)
        throw new ValidationError(
          `${attr}: ${ast.type ?? 'SyntaxError'} at ${positionText(text, ast.start)}: ${ast.message}`,
          attr,
          'hogql_syntax_error',
        );
      cache.set(key, ast);
      if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
      return ast;
    },
    async close() {
      const r = running;
      running = undefined;
      if (r) await r.worker.terminate();
    },
  };
}

let shared: HogQLParser | undefined;
/** The process's parser (one worker, started on first use). */
export function sharedHogQLParser(): HogQLParser {
  return (shared ??= createHogQLParser());
}
