// HogQL text to PostHog's own AST, with PostHog's own parser (@posthog/hogql-parser, its ANTLR
// grammar compiled to WebAssembly): what Sett accepts is exactly what PostHog would parse.
//
// The parser is not safe to run on the event loop with hostile input. Measured with the pinned
// version: twenty nested calls take about half a second, a few hundred chained AND or `+` terms
// overflow its stack (a RuntimeError that leaves the module unusable), and a 20,000-item list
// takes two seconds. So:
// - the text is bounded (MAX_HOGQL_LENGTH) and its bracket nesting counted (MAX_NESTING) before
//   anything parses it;
// - so are runs of NOT and long field chains, which cost seconds in fewer than a thousand
//   characters;
// - it parses in PARSE_WORKERS worker threads, loaded once per process, one text at a time
//   each, within PARSE_DEADLINE_MS; past it, or when the parser fails, the worker is replaced
//   and the query refused with a 400;
// - projects take turns: each has at most one text in a worker, and the next text goes to the
//   waiting project whose last turn is oldest, so one project's slow texts delay another's by at most one
//   deadline, however many it sends;
// - answers are remembered by text (the last CACHE_SIZE), so a dashboard's repeated queries
//   never reach the worker again.
import { Worker } from 'node:worker_threads';
import { RateLimitedError, ServiceUnavailableError, ValidationError } from '@sett/http';
import type { Node, Position } from './ast';

/** Longest HogQL text accepted (characters). */
export const MAX_HOGQL_LENGTH = 20_000;
/** Deepest nesting of brackets accepted: parse time grows steeply with it. */
export const MAX_NESTING = 24;
/** Longest one text may take to parse before it is refused (the worker is replaced). */
export const PARSE_DEADLINE_MS = 2_000;
/** Longest run of NOTs accepted: parse time grows steeply with it (50 take over a second). */
export const MAX_NOT_RUN = 4;
/** Most names in one field chain (`properties.a.b…`): parse time grows with its square. */
export const MAX_CHAIN = 16;
/** Parser workers per process. Each owner has at most one text in them at a time. */
export const PARSE_WORKERS = 2;
/** Texts of one owner waiting for a worker before more are turned away (429). */
export const MAX_WAITING_PER_OWNER = 64;
const CACHE_SIZE = 500;

export type ParseRule = 'select' | 'expr' | 'order';

export interface HogQLParser {
  /** The AST of `text` parsed by `rule`; a ValidationError (400) for a syntax error, a text too
   * long, too deep or too slow to parse. `attr` names the request field in errors. `owner` (the
   * project) takes turns with other owners for the workers; past MAX_WAITING_PER_OWNER texts
   * waiting, a RateLimitedError (429). */
  parse(text: string, rule: ParseRule, attr: string, owner?: string): Promise<Node>;
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
  /** Texts sent to this worker and not answered yet, by id. */
  pending: Map<number, (a: Answer) => void>;
}

/** A worker's place: its parser (started on first use, replaced after a failure) and whether a
 * text is in it. */
interface Slot {
  running?: Running;
  busy: boolean;
}

interface Job {
  text: string;
  rule: ParseRule;
  resolve: (a: Answer) => void;
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

/** What makes `text` too costly to parse, other than its length and nesting: a run of more
 * than MAX_NOT_RUN NOTs, or a field chain of more than MAX_CHAIN names (outside quotes and
 * comments). */
export function shapeProblem(text: string): string | undefined {
  let prev = '';
  let nots = 0;
  let links = 0;
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (text.startsWith('--', i) || text.startsWith('/*', i)) {
      const close = c === '-' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2);
      i = close < 0 ? text.length : close + (c === '-' ? 1 : 2);
      continue;
    }
    let token: string;
    let name = false;
    if (c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== "'") j += text[j] === '\\' ? 2 : 1;
      token = "'";
      i = j + 1;
    } else if (c === '`' || c === '"') {
      const j = text.indexOf(c, i + 1);
      i = j < 0 ? text.length : j + 1;
      token = 'name';
      name = true;
    } else {
      const word = /^[A-Za-z_$][\w$]*/.exec(text.slice(i, i + 256));
      token = word ? word[0] : c;
      name = word !== null;
      i += token.length;
    }
    const isNot = token.toUpperCase() === 'NOT';
    nots = isNot ? nots + 1 : 0;
    if (nots > MAX_NOT_RUN)
      return `has more than ${MAX_NOT_RUN} NOTs in a row (at character ${i}): simplify the condition.`;
    links = name && !isNot ? (prev === '.' ? links + 1 : 1) : token === '.' ? links : 0;
    if (links > MAX_CHAIN) return `names a field chain of more than ${MAX_CHAIN} names (at character ${i}).`;
    prev = token;
  }
  return undefined;
}

export function createHogQLParser(opts: { deadlineMs?: number; workers?: number } = {}): HogQLParser {
  const deadlineMs = opts.deadlineMs ?? PARSE_DEADLINE_MS;
  // require.resolve, not createRequire: the bundler sees it, so the runtime tree carries the package.
  const parserPath = require.resolve('@posthog/hogql-parser');
  const cache = new Map<string, Node>();
  const slots: Slot[] = Array.from({ length: opts.workers ?? PARSE_WORKERS }, () => ({ busy: false }));
  /** Texts waiting, by owner. */
  const waiting = new Map<string, Job[]>();
  /** When each owner last had a turn (a count of turns): the oldest turn goes next. */
  const lastTurn = new Map<string, number>();
  let turns = 0;
  /** Owners with a text in a worker now: one each, so no owner holds every worker. */
  const parsing = new Set<string>();
  let nextId = 0;
  let count = 0;

  function start(): Running {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { parser: parserPath, warmUp: WARM_UP } });
    w.unref();
    const pending = new Map<number, (a: Answer) => void>();
    let settle!: { resolve: () => void; reject: (err: Error) => void };
    const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    ready.catch(() => undefined);
    w.on('message', (m: Answer & { id?: number; ready?: boolean; loadFailed?: string }) => {
      if (m.ready) return settle.resolve();
      if (m.loadFailed !== undefined)
        return settle.reject(new Error(`the parser did not load: ${m.loadFailed}`));
      // A failed parse ends the worker (see WORKER_SOURCE): forget it now, not at its exit, so
      // the text queued next starts a fresh one instead of dying with this one.
      if (m.failed !== undefined)
        for (const slot of slots) if (slot.running?.worker === w) slot.running = undefined;
      pending.get(m.id!)?.({ json: m.json, failed: m.failed });
      pending.delete(m.id!);
    });
    const fail = (why: string) => {
      for (const slot of slots) if (slot.running?.worker === w) slot.running = undefined;
      settle.reject(new Error(why));
      for (const [id, resolve] of pending) {
        resolve({ failed: why });
        pending.delete(id);
      }
    };
    w.on('error', (err) => fail(`the parser failed: ${err.message}`));
    w.on('exit', () => fail('the parser stopped'));
    return { worker: w, ready, pending };
  }

  async function runIn(slot: Slot, job: Job): Promise<Answer> {
    slot.running ??= start();
    const { worker: w, ready, pending } = slot.running;
    try {
      await ready;
    } catch (err) {
      if (slot.running?.worker === w) slot.running = undefined;
      return { failed: (err as Error).message, unavailable: true };
    }
    return new Promise<Answer>((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        if (slot.running?.worker === w) slot.running = undefined;
        void w.terminate();
        resolve({ failed: `it took longer than ${deadlineMs} ms to parse` });
      }, deadlineMs);
      pending.set(id, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
      count++;
      w.postMessage({ id, text: job.text, rule: job.rule });
    });
  }

  /** Gives each free worker the next owner's oldest text, owners taking turns. */
  function pump(): void {
    for (const slot of slots) {
      if (slot.busy) continue;
      let owner: string | undefined;
      let oldest = Infinity;
      for (const o of waiting.keys()) {
        const turn = lastTurn.get(o) ?? -1;
        if (!parsing.has(o) && turn < oldest) [owner, oldest] = [o, turn];
      }
      if (owner === undefined) return;
      const jobs = waiting.get(owner)!;
      const job = jobs.shift()!;
      if (jobs.length === 0) waiting.delete(owner);
      lastTurn.set(owner, turns++);
      // Owners with nothing waiting are forgotten now and then (the map would grow forever).
      if (lastTurn.size > 10_000) for (const o of lastTurn.keys()) if (!waiting.has(o)) lastTurn.delete(o);
      slot.busy = true;
      parsing.add(owner);
      const finish = (answer: Answer) => {
        slot.busy = false;
        parsing.delete(owner);
        job.resolve(answer);
        pump();
      };
      runIn(slot, job).then(finish, (err: Error) => finish({ failed: `the parser failed: ${err.message}` }));
    }
  }

  function inWorker(text: string, rule: ParseRule, owner: string): Promise<Answer> {
    const jobs = waiting.get(owner) ?? [];
    if (jobs.length >= MAX_WAITING_PER_OWNER) throw new RateLimitedError(1);
    waiting.set(owner, jobs);
    return new Promise<Answer>((resolve) => {
      jobs.push({ text, rule, resolve });
      pump();
    });
  }

  return {
    get parsed() {
      return count;
    },
    async warm() {
      await Promise.all(slots.map((slot) => (slot.running ??= start()).ready));
    },
    async parse(text, rule, attr, owner = '') {
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
      const shape = shapeProblem(text);
      if (shape) throw new ValidationError(`${attr} ${shape}`, attr);
      const answer = await inWorker(text, rule, owner);
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
      const workers = slots.flatMap((slot) => (slot.running ? [slot.running.worker] : []));
      for (const slot of slots) slot.running = undefined;
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

let shared: HogQLParser | undefined;
/** The process's parser (PARSE_WORKERS workers, started at warm-up or on first use). */
export function sharedHogQLParser(): HogQLParser {
  return (shared ??= createHogQLParser());
}
