// Hostile single requests for HogQL (POST /query/ with a HogQLQuery, bare or as the source of a
// DataVisualizationNode). Same rules as the main corpus (corpus.ts): every answer below 500, with
// JSON saying what is wrong, in time.
//
// Three kinds of case: the request around the text (fields of the wrong type, unstorable
// escapes, invalid UTF-8, placeholders and filters that do not fit); texts written to hit one
// edge each (constructs outside the subset, values Postgres would fail on, sizes and depths);
// and texts generated from a fixed seed, which put HogQL's tokens in orders nobody wrote. The
// generated texts read one table and join nothing, so none of them can rightly take the whole
// deadline: a 504 among them is a finding too.
import { prng } from '@sett/testing';
import type { CorpusContext, HostileCase } from './corpus';
import { INVALID_UTF8, UNSTORABLE_ESCAPES, withBytes } from './generators';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** Values of the wrong type for `query`, `values` and `filters`, as JSON text. */
const WRONG_VALUES = ['1', 'true', 'null', '[]', '["SELECT 1"]', '{}', '{"a":1}', '1e400', '""', '" "'];

/** One edge each: outside the subset, values Postgres would fail on, size and depth. */
const TEXTS: string[] = [
  // outside the subset or outside SELECT
  'SELECT count() OVER (PARTITION BY event) FROM events',
  'SELECT arrayMap(x -> x * 2, [1, 2, 3])',
  'SELECT event FROM events ARRAY JOIN [1, 2] AS n',
  'SELECT count() FROM events a ASOF JOIN events b ON a.distinct_id = b.distinct_id AND a.timestamp >= b.timestamp',
  'SELECT count() FROM events a ANY LEFT JOIN events b USING distinct_id',
  'SELECT event FROM events LIMIT 1 BY event',
  'SELECT count() FROM events SAMPLE 0.1',
  'SELECT count() FROM events FINAL',
  'SELECT count() FROM events PREWHERE event = 1',
  'SELECT event, count() FROM events GROUP BY event WITH TOTALS',
  'SELECT event, count() FROM events GROUP BY ROLLUP(event)',
  'SELECT count() FROM events SETTINGS max_execution_time = 3600',
  'SELECT {variables.x}',
  'SELECT {x}',
  'SELECT {}',
  'SELECT * FROM session_replay_events',
  'SELECT * FROM numbers(1000000000)',
  "SELECT * FROM url('http://127.0.0.1:5432/', 'CSV')",
  "SELECT * FROM postgresql('127.0.0.1:5432', 'sett', 'teams', 'root', '')",
  "SELECT * FROM s3('http://169.254.169.254/latest/meta-data/')",
  'INSERT INTO events (event) VALUES (1)',
  'DELETE FROM events',
  'DROP TABLE events',
  'TRUNCATE TABLE events',
  'EXPLAIN SELECT 1',
  'SHOW TABLES',
  'SELECT 1 INTO OUTFILE "/tmp/x"',
  'SELECT 1 FORMAT JSON',
  'SELECT 1 UNION ALL',
  'SELECT 1 INTERSECT SELECT 2',
  'WITH RECURSIVE r AS (SELECT 1 UNION ALL SELECT 1 FROM r) SELECT count() FROM r',
  'WITH a AS (SELECT * FROM a) SELECT * FROM a',
  'WITH x AS (SELECT 1), x AS (SELECT 2) SELECT * FROM x',
  'SELECT * FROM events AS events, events',
  '<Sparkline data={[1, 2]} />',
  'SELECT <div>{event}</div> FROM events',
  "f'{event}'",
  // values Postgres fails on, or that must not reach it
  'SELECT 1 / 0',
  'SELECT 1 % 0',
  'SELECT intDiv(1, 0)',
  'SELECT 9223372036854775807 + 1',
  'SELECT -9223372036854775809',
  'SELECT 1e400',
  'SELECT -1e400',
  'SELECT 0x7fffffffffffffffff',
  "SELECT toInt('x')",
  "SELECT toFloat('nan') * 1e308 * 10",
  "SELECT toDate('2024-02-30')",
  "SELECT toDate('0000-00-00')",
  "SELECT toStartOfDay(toDate('-2090-01-01'))",
  "SELECT count() FROM events WHERE timestamp > '2024-13-45'",
  "SELECT count() FROM events WHERE timestamp > 'yesterday'",
  'SELECT now() - INTERVAL 99999999999 DAY',
  'SELECT now() + INTERVAL 1 FORTNIGHT',
  "SELECT toTimeZone(now(), 'Mars/Olympus_Mons')",
  "SELECT toTimeZone(now(), '')",
  "SELECT toStartOfDay(now(), 'UTC; DROP TABLE events')",
  "SELECT dateDiff('aeon', now(), now())",
  "SELECT dateDiff('day', now())",
  'SELECT quantile(2)(1)',
  'SELECT quantile(-1)(1)',
  'SELECT quantile(0.5, 0.9)(1)',
  'SELECT quantile(event)(1) FROM events',
  'SELECT groupArray(1000000000)(event) FROM events',
  'SELECT groupArray(-1)(event) FROM events',
  'SELECT count(*, *) FROM events',
  'SELECT countIf() FROM events',
  'SELECT if(1)',
  'SELECT multiIf(1, 2)',
  'SELECT coalesce()',
  "SELECT match(event, '(a+)+$') FROM events",
  "SELECT match(event, '(') FROM events",
  "SELECT match(event, 'x{99999999}') FROM events",
  "SELECT match(event, '(?<=a)b') FROM events",
  "SELECT event =~ '\\\\p{Nonsense}' FROM events",
  `SELECT match(event, '${'(a|aa)*'.repeat(200)}') FROM events`,
  "SELECT 'a' LIKE '%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%b'",
  "SELECT 'a' ILIKE E'\\\\'",
  'SELECT length(1)',
  'SELECT lower(1, 2)',
  'SELECT toString()',
  "SELECT concat('a')",
  'SELECT properties.`$x`.`y`.`z` FROM events',
  `SELECT properties.${Array.from({ length: 200 }, (_, i) => `k${i}`).join('.')} FROM events`,
  'SELECT person.properties.email, person.id, person.nope FROM events',
  'SELECT event.nope FROM events',
  'SELECT * FROM events WHERE properties',
  'SELECT count() FROM events WHERE properties.x = [1, 2]',
  'SELECT count() FROM events WHERE properties.x = (1, 2)',
  'SELECT count() FROM events WHERE 1 IN 1',
  'SELECT count() FROM events WHERE event IN ()',
  'SELECT count() FROM events ORDER BY 99',
  'SELECT count() FROM events GROUP BY 99',
  'SELECT count() FROM events LIMIT 1.5',
  "SELECT count() FROM events LIMIT '1'",
  'SELECT count() FROM events LIMIT 1 OFFSET 99999999999999999999',
  'SELECT count() FROM events LIMIT 9223372036854775807 OFFSET 9223372036854775807',
  'SELECT event FROM events ORDER BY event COLLATE "C"',
  'SELECT `` FROM events',
  'SELECT `\\` FROM events',
  "SELECT 'unterminated FROM events",
  'SELECT "double quoted" FROM events',
  'SELECT 1 -- a comment',
  'SELECT 1 /* an unterminated comment',
  '/* only a comment */',
  '',
  ' ',
  ';',
  'SELECT',
  'FROM events',
  'select COUNT() from EVENTS',
  'SÉLECT 1',
  'SELECT 1 AS "名前", \'\u202e\' AS rtl',
  'SELECT \u0000',
  `SELECT '${'\\'.repeat(9999)}'`,
  // size and depth
  `SELECT ${'('.repeat(25)}1${')'.repeat(25)}`,
  `SELECT ${'('.repeat(1000)}1${')'.repeat(1000)}`,
  `SELECT ${'['.repeat(1000)}${']'.repeat(1000)}`,
  `SELECT ${'-'.repeat(10_000)}1`,
  `SELECT ${'NOT '.repeat(5000)}1`,
  `SELECT ${'if(1, '.repeat(200)}1${')'.repeat(200)}`,
  `SELECT ${Array.from({ length: 5000 }, () => '1').join(' + ')}`,
  `SELECT ${Array.from({ length: 3000 }, (_, i) => `c${i}`).join(', ')} FROM events`,
  `SELECT count() FROM events WHERE ${Array.from({ length: 2000 }, (_, i) => `event = 'e${i}'`).join(' OR ')}`,
  `SELECT '${'x'.repeat(500_000)}'`,
  `SELECT count() FROM events WHERE event IN (${Array.from({ length: 50_000 }, () => "'x'").join(',')})`,
  `${'SELECT 1 UNION ALL '.repeat(100)}SELECT 1`,
  `SELECT count() FROM ${'(SELECT * FROM '.repeat(40)}events${')'.repeat(40)}`,
  `WITH ${Array.from({ length: 40 }, (_, i) => `c${i} AS (SELECT 1)`).join(', ')} SELECT 1`,
];

/** Tokens the generated texts are made of (no table names, JOIN or SELECT: one table, no joins). */
const TOKENS = [
  'event',
  'timestamp',
  'distinct_id',
  'uuid',
  'person_id',
  'properties.$browser',
  'person.properties.email',
  'properties',
  'count()',
  'uniq(distinct_id)',
  'now()',
  'today()',
  'toStartOfDay(timestamp)',
  'toDate(timestamp)',
  "'a'",
  "''",
  "'%'",
  "'2024-01-01'",
  '0',
  '1',
  '-1',
  '1.5',
  '1e308',
  'null',
  'true',
  'false',
  'NULL',
  '+',
  '-',
  '*',
  '/',
  '%',
  '=',
  '==',
  '!=',
  '<>',
  '<',
  '>',
  '<=',
  '>=',
  '=~',
  '!~',
  '||',
  '.',
  ',',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  '?',
  ':',
  '->',
  'AND',
  'OR',
  'NOT',
  'IN',
  'LIKE',
  'ILIKE',
  'IS',
  'BETWEEN',
  'CASE',
  'WHEN',
  'THEN',
  'ELSE',
  'END',
  'AS',
  'DISTINCT',
  'INTERVAL',
  'DAY',
  'if',
  'multiIf',
  'coalesce',
  'toString',
  'toInt',
  'toFloat',
  'lower',
  'match',
  'length',
  'concat',
  'dateDiff',
  'sum',
  'avg',
  'quantile',
  'groupArray',
  'countIf',
  'x',
  '`x`',
  '$1',
  '--',
  '/*',
  '*/',
  ';',
  '\\',
  '"',
  "'",
];

/** Valid texts the mutations start from. */
const SEEDS = [
  'SELECT event, count() FROM events WHERE timestamp > now() - INTERVAL 7 DAY GROUP BY event ORDER BY count() DESC',
  'SELECT toStartOfDay(timestamp) AS day, uniq(distinct_id) FROM events GROUP BY day HAVING count() > 1 ORDER BY day',
  "SELECT properties.$browser AS b, countIf(event = '$pageview') FROM events WHERE b IS NOT NULL GROUP BY b LIMIT 10",
  'SELECT person.properties.email, max(timestamp) FROM events GROUP BY person.properties.email',
  "SELECT multiIf(event = 'a', 1, event = 'b', 2, 0) AS k, quantile(0.9)(length(event)) FROM events GROUP BY k",
];

export function buildHogqlCorpus(ctx: CorpusContext): HostileCase[] {
  const cases: HostileCase[] = [];
  const path = `/api/projects/${ctx.projectId}/query/`;
  const headers = { ...JSON_HEADERS, authorization: `Bearer ${ctx.personalKey}` };
  const add = (name: string, body: () => string | Buffer) =>
    cases.push({
      cls: 'query',
      service: 'management',
      phase: 1,
      name: `query management POST ${path} HogQL ${name}`,
      method: 'POST',
      path,
      headers,
      body,
    });
  /** A request body around `queryJson`, the HogQLQuery's `query` as JSON text. */
  const hogql = (queryJson: string, rest = '') =>
    `{"query":{"kind":"HogQLQuery","query":${queryJson}${rest}},"refresh":"force_blocking"}`;
  const show = (t: string) => JSON.stringify(t.length > 60 ? `${t.slice(0, 40)}…(${t.length} chars)` : t);

  // The request around the text.
  for (const v of WRONG_VALUES) {
    add(`query of ${v}`, () => hogql(v));
    add(`values of ${v}`, () => hogql('"SELECT {x}"', `,"values":${v}`));
    add(`filters of ${v}`, () => hogql('"SELECT count() FROM events"', `,"filters":${v}`));
    add(`filters.dateRange of ${v}`, () =>
      hogql('"SELECT count() FROM events"', `,"filters":{"dateRange":${v}}`),
    );
    add(`filters.properties of ${v}`, () =>
      hogql('"SELECT count() FROM events"', `,"filters":{"properties":${v}}`),
    );
    add(`visualization source of ${v}`, () => `{"query":{"kind":"DataVisualizationNode","source":${v}}}`);
  }
  for (const { label, escaped } of UNSTORABLE_ESCAPES) {
    add(`text with ${label}`, () =>
      hogql(`"SELECT '${escaped}' AS s, count() FROM events WHERE event = '${escaped}'"`),
    );
    add(`identifier with ${label}`, () => hogql(`"SELECT \`${escaped}\` FROM events"`));
    add(`placeholder value with ${label}`, () => hogql('"SELECT {x}"', `,"values":{"x":"${escaped}"}`));
  }
  for (const { label, bytes } of INVALID_UTF8)
    add(`text with invalid UTF-8 ${label}`, () => withBytes(hogql(`"SELECT '{{BAD}}'"`), bytes));
  for (const [name, rest] of [
    ['placeholder with no value', ''],
    ['placeholder value an object', ',"values":{"x":{"y":1}}'],
    ['placeholder value 100,000 deep', `,"values":{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`],
    ['placeholder named __proto__', ',"values":{"__proto__":1}'],
    [
      '10,000 placeholder values',
      `,"values":{${Array.from({ length: 10_000 }, (_, i) => `"v${i}":${i}`).join(',')}}`,
    ],
    ['placeholder value of 1 MB', `,"values":{"x":"${'x'.repeat(1024 * 1024)}"}`],
    ['dateRange of no dates', ',"filters":{"dateRange":{"date_from":"nonsense","date_to":"-2090y"}}'],
    [
      'dateRange at year 9999',
      ',"filters":{"dateRange":{"date_from":"9999-12-31","date_to":"9999-12-31T23:59:59Z"}}',
    ],
    ['filter of an unknown type', ',"filters":{"properties":[{"type":"nope","key":"a","value":"b"}]}'],
    [
      'filter of an unknown operator',
      ',"filters":{"properties":[{"type":"event","key":"a","value":"b","operator":"sounds_like"}]}',
    ],
    [
      'filter of a regex Postgres cannot run',
      ',"filters":{"properties":[{"type":"event","key":"a","value":"(?<=a)b","operator":"regex"}]}',
    ],
    ['unknown option', ',"modifiers":{"debug":true},"explain":true'],
    ['limit of -1 and offset of 1e400', ',"limit":-1,"offset":1e400'],
  ] as const)
    add(name, () => hogql('"SELECT {x} FROM events WHERE {filters}"', rest));
  add(
    'as the source of a visualization',
    () =>
      `{"query":{"kind":"DataVisualizationNode","source":{"kind":"HogQLQuery","query":"SELECT pg_sleep(10)"}}}`,
  );
  add(
    'in a visualization in a visualization',
    () =>
      `{"query":{"kind":"DataVisualizationNode","source":{"kind":"DataVisualizationNode","source":{"kind":"HogQLQuery","query":"SELECT 1"}}}}`,
  );

  // Texts written to hit one edge each.
  for (const text of TEXTS) add(show(text), () => hogql(JSON.stringify(text)));

  // Generated texts, from a fixed seed so a failure can be sent again.
  const random = prng(0x4f6b);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const phrase = (n: number) => Array.from({ length: n }, () => pick(TOKENS)).join(' ');
  for (let i = 0; i < 120; i++) {
    const text = `SELECT ${phrase(1 + Math.floor(random() * 8))} FROM events WHERE ${phrase(1 + Math.floor(random() * 8))}`;
    add(`generated #${i} ${show(text)}`, () => hogql(JSON.stringify(text)));
  }
  // Valid texts with one token dropped, repeated or replaced.
  for (let i = 0; i < 120; i++) {
    const words = pick(SEEDS).split(' ');
    const at = Math.floor(random() * words.length);
    const how = pick(['drop', 'repeat', 'replace'] as const);
    if (how === 'drop') words.splice(at, 1);
    else if (how === 'repeat') words.splice(at, 0, words[at]!);
    else words[at] = pick(TOKENS);
    const text = words.join(' ');
    add(`mutated #${i} (${how}) ${show(text)}`, () => hogql(JSON.stringify(text)));
  }
  return cases;
}
