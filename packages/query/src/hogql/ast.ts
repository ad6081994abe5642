// The shape of PostHog's HogQL AST as @posthog/hogql-parser returns it (JSON): every node has
// `node` (its class name in PostHog's ast.py) and, parsed with positions, `start` and `end`.
export interface Position {
  line: number;
  column: number;
  offset: number;
}

export interface Node {
  node: string;
  start?: Position;
  end?: Position;
  [field: string]: unknown;
}

export const isNode = (v: unknown): v is Node =>
  typeof v === 'object' && v !== null && typeof (v as { node?: unknown }).node === 'string';
