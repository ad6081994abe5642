// trendsFilter.formula: arithmetic over a TrendsQuery's series, as PostHog writes it (`A/B*100`,
// `(A + B) / 2`, `-A`): the letters A, B, C, … name the series in order, with numbers, + - * /
// and parentheses. Parsed by a small grammar into a tree (never eval'd), bounded in length and in
// depth, then evaluated bucket by bucket. Division by zero gives 0, as PostHog draws it.

export type Formula =
  | { kind: 'number'; value: number }
  | { kind: 'series'; index: number }
  | { kind: 'negate'; of: Formula }
  | { kind: 'binary'; op: '+' | '-' | '*' | '/'; left: Formula; right: Formula };

import { ValidationError } from '@sett/http';

const MAX_DEPTH = 32;

/** The formula's tree; a 400 naming `attr` with the position of what it cannot read. */
export function parseFormula(text: string, seriesCount: number, attr: string): Formula {
  let at = 0;
  let depth = 0;
  const fail = (why: string): never => {
    throw new ValidationError(`${attr}: ${why} at position ${at + 1} of ${JSON.stringify(text)}.`, attr);
  };
  const skip = () => {
    while (at < text.length && /\s/.test(text[at]!)) at++;
  };
  // expression := term (('+' | '-') term)*; term := factor (('*' | '/') factor)*;
  // factor := number | letter | '(' expression ')' | '-' factor
  const expression = (): Formula => {
    let left = term();
    for (skip(); text[at] === '+' || text[at] === '-'; skip()) {
      const op = text[at++] as '+' | '-';
      left = { kind: 'binary', op, left, right: term() };
    }
    return left;
  };
  const term = (): Formula => {
    let left = factor();
    for (skip(); text[at] === '*' || text[at] === '/'; skip()) {
      const op = text[at++] as '*' | '/';
      left = { kind: 'binary', op, left, right: factor() };
    }
    return left;
  };
  const factor = (): Formula => {
    skip();
    if (++depth > MAX_DEPTH) fail(`more than ${MAX_DEPTH} levels of nesting`);
    try {
      const c = text[at];
      if (c === undefined) return fail('an operand is missing');
      if (c === '(') {
        at++;
        const inner = expression();
        skip();
        if (text[at] !== ')') fail('a ")" is missing');
        at++;
        return inner;
      }
      if (c === '-') {
        at++;
        return { kind: 'negate', of: factor() };
      }
      const number = /^\d+(\.\d+)?/.exec(text.slice(at));
      if (number) {
        at += number[0].length;
        return { kind: 'number', value: Number(number[0]) };
      }
      if (/[A-Za-z]/.test(c)) {
        const index = c.toUpperCase().charCodeAt(0) - 65;
        if (index >= seriesCount)
          fail(`${c.toUpperCase()} names series ${index + 1}, but the query has ${seriesCount}`);
        at++;
        return { kind: 'series', index };
      }
      return fail(`unexpected ${JSON.stringify(c)}`);
    } finally {
      depth--;
    }
  };
  const tree = expression();
  skip();
  if (at < text.length) fail(`unexpected ${JSON.stringify(text[at])}`);
  return tree;
}

/** The formula's value, with each series' number from `series`. Iterative: no recursion. */
export function evaluateFormula(formula: Formula, series: (index: number) => number): number {
  // Post-order over an explicit stack.
  const values: number[] = [];
  const stack: Array<{ node: Formula; visited: boolean }> = [{ node: formula, visited: false }];
  while (stack.length > 0) {
    const top = stack.pop()!;
    const n = top.node;
    if (n.kind === 'number') values.push(n.value);
    else if (n.kind === 'series') values.push(series(n.index));
    else if (!top.visited) {
      stack.push({ node: n, visited: true });
      if (n.kind === 'negate') stack.push({ node: n.of, visited: false });
      else {
        stack.push({ node: n.right, visited: false });
        stack.push({ node: n.left, visited: false });
      }
    } else if (n.kind === 'negate') values.push(-values.pop()!);
    else {
      const right = values.pop()!;
      const left = values.pop()!;
      values.push(
        n.op === '+'
          ? left + right
          : n.op === '-'
            ? left - right
            : n.op === '*'
              ? left * right
              : right === 0
                ? 0
                : left / right,
      );
    }
  }
  const result = values.pop()!;
  return Number.isFinite(result) ? result : 0;
}
