// The query engine: one interface for every dashboard query kind, so that a second storage
// engine (ClickHouse, for when one Postgres is outgrown) can sit behind it. A query goes through
// two stages:
// - prepare: the wrappers PostHog's clients send are unwrapped (InsightVizNode,
//   DataVisualizationNode and DataTableNode answer as their `source`), the kind's closed schema
//   checks the node (400 naming the field), its planner resolves dates and filters and bounds
//   the answer's size, and the request's regexes are settled within their budget. Nothing has
//   touched the database yet, so a caller may take its limits (slots) only now;
// - run: the kind's planner SQL runs through the engine's statements (one connection, one
//   read-only transaction, one deadline) and its shaper builds PostHog's response.
// Each kind lives in kinds/<kind>.ts: its schema, its planner and its shaper.
import { ValidationError } from '@sett/http';
import type { RegexChecker } from '@sett/flags';
import { compile, describeAjvError } from '@sett/schemas';
import { filterPatterns, settlePatterns, type PropertyGroup, type RequestPattern } from './property-filters';
import type { Statements, StatementRunner } from './statements';

/** The project a query reads. */
export interface QueryTeam {
  id: number;
  timeZone: string;
  /** The project's test account filters (PostHog's property filters), for `filterTestAccounts`. */
  testAccountFilters?: unknown;
}

export interface RunOptions {
  /** Epoch ms past which the query is cancelled (504). */
  deadline: number;
  /** Aborted when the client left: the running statement is cancelled. */
  signal?: AbortSignal;
}

/** A query node checked and planned, ready to run. */
export interface PreparedQuery {
  kind: string;
  /** The node after unwrapping, as it was checked: what identifies the answer (cache key). */
  node: Record<string, unknown>;
  run(opts: RunOptions): Promise<Record<string, unknown>>;
}

export interface QueryEngine {
  readonly kinds: readonly string[];
  /** Unwraps, checks and plans `query` for `team`; 400s come from here. */
  prepare(team: QueryTeam, query: unknown): Promise<PreparedQuery>;
  /** prepare() and run() together. */
  run(team: QueryTeam, query: unknown, opts: RunOptions): Promise<Record<string, unknown>>;
}

/** What a plan carries for the engine: its filter groups, whose regexes are settled before it runs. */
export interface PlanBase {
  groups: Array<PropertyGroup | undefined>;
  /** Other regular expressions of the query (HogQL's match and =~), each with its field. */
  patterns?: RequestPattern[];
}

/** One query kind: a closed schema, a planner and the SQL-and-shaping step. */
export interface QueryKind<Q = never, P extends PlanBase = PlanBase> {
  kind: string;
  /** JSON schema of the node (closed: an unknown field is a 400 naming it). */
  schema: object;
  /** Dates, filters and the answer's size, from the node alone; throws ValidationError. */
  plan(query: Q, team: QueryTeam, now: Date): P | Promise<P>;
  /** Runs the plan's SQL and shapes PostHog's response. */
  execute(db: Statements, team: QueryTeam, plan: P, now: Date): Promise<Record<string, unknown>>;
}

/** Kinds wrapping another query in `source`: they answer as their source (display options
 * around it are the client's). */
const WRAPPERS = new Set(['InsightVizNode', 'DataVisualizationNode', 'DataTableNode']);
const MAX_WRAPPING = 3;

function unwrap(query: unknown): { node: Record<string, unknown>; path: string } {
  let node = query;
  let path = 'query';
  for (let depth = 0; ; depth++) {
    if (typeof node !== 'object' || node === null || Array.isArray(node))
      throw new ValidationError(`${path} must be a query node, an object with a kind.`, path);
    const kind = (node as { kind?: unknown }).kind;
    if (typeof kind !== 'string' || !WRAPPERS.has(kind))
      return { node: node as Record<string, unknown>, path };
    if (depth >= MAX_WRAPPING)
      throw new ValidationError(`${path}: wrappers nest deeper than ${MAX_WRAPPING}.`, path);
    node = (node as { source?: unknown }).source;
    path = `${path}.source`;
    if (node === undefined) throw new ValidationError(`${path} is required in a ${kind}.`, path);
  }
}

export interface EngineDeps {
  statements: StatementRunner;
  regexes: RegexChecker;
  kinds: ReadonlyArray<QueryKind<never, PlanBase>>;
  now?: () => Date;
}

/** The engine over Postgres: the kinds' SQL through `statements`. */
export function createQueryEngine(deps: EngineDeps): QueryEngine {
  const now = deps.now ?? (() => new Date());
  const byKind = new Map(
    deps.kinds.map((k) => [k.kind, { kind: k, validate: compile<unknown>(k.schema as never) }] as const),
  );
  const kinds = [...byKind.keys()];

  const prepare = async (team: QueryTeam, query: unknown): Promise<PreparedQuery> => {
    const { node, path } = unwrap(query);
    const entry = byKind.get(node.kind as string);
    if (!entry)
      throw new ValidationError(
        `Query kind ${JSON.stringify(node.kind)} is not supported. Supported kinds: ${kinds.join(', ')}.`,
        `${path}.kind`,
        'unsupported_query_kind',
      );
    if (!entry.validate(node)) {
      const problem = describeAjvError(entry.validate.errors);
      throw new ValidationError(
        problem.attr ? `${path}.${problem.detail}` : problem.detail,
        problem.attr ? `${path}.${problem.attr}` : path,
      );
    }
    const at = now();
    const plan = await entry.kind.plan(node as never, team, at);
    // The filters' patterns and the query's own (HogQL's match) share the request's one budget.
    const patterns = [...filterPatterns(plan.groups), ...(plan.patterns ?? [])];
    await settlePatterns(patterns, deps.regexes);
    // Each distinct pattern once: tried on Postgres' engine before the query's statements.
    const byPattern = new Map<string, RequestPattern>();
    for (const p of patterns) if (!byPattern.has(p.pattern)) byPattern.set(p.pattern, p);
    return {
      kind: entry.kind.kind,
      node,
      run: async (opts) => {
        const started = process.hrtime.bigint();
        const answer = await deps.statements.run((db) => entry.kind.execute(db, team, plan, at), {
          deadline: opts.deadline,
          signal: opts.signal,
          regexes: [...byPattern.values()],
        });
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        return { ...answer, timings: [{ k: entry.kind.kind, t: seconds }] };
      },
    };
  };

  return {
    kinds,
    prepare,
    async run(team, query, opts) {
      return (await prepare(team, query)).run(opts);
    },
  };
}

/** A query answer's data, by the fields PostHog's responses share. */
export type QueryAnswer = Record<string, unknown>;
