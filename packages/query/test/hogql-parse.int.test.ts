// PostHog's HogQL parser in its worker thread: PostHog's AST for what it parses, a syntax error
// with its position as a 400, texts refused before parsing (too long, too deep), a text past the
// parse deadline refused with the worker replaced, repeated texts answered without parsing, and
// projects taking turns for the workers.
import { createHogQLParser, nestingOver, shapeProblem, type HogQLParser } from '../src/hogql/parse';

/** A text that takes the parser well over 150 ms: 300 chained conditions (`tag` makes it new). */
const slowText = (tag: string | number) =>
  `SELECT ${JSON.stringify(String(tag))} FROM events WHERE ${Array.from({ length: 300 }, (_, i) => `properties.p${i} = 'v'`).join(' AND ')}`;

let parser: HogQLParser;
beforeEach(() => {
  parser = createHogQLParser({ deadlineMs: 150 });
});
afterEach(() => parser.close());

describe('the HogQL parser', () => {
  it("returns PostHog's AST", async () => {
    const ast = await parser.parse('SELECT event, count() FROM events GROUP BY event', 'select', 'q');
    expect(ast).toMatchObject({
      node: 'SelectQuery',
      select: [
        { node: 'Field', chain: ['event'] },
        { node: 'Call', name: 'count', args: [] },
      ],
      select_from: { node: 'JoinExpr', table: { node: 'Field', chain: ['events'] } },
      group_by: [{ node: 'Field', chain: ['event'] }],
    });
    const expr = await parser.parse("properties.$browser = 'Chrome'", 'expr', 'q');
    expect(expr).toMatchObject({ node: 'CompareOperation', op: '==' });
  });

  it('answers a syntax error as a 400 with the line and column', async () => {
    await expect(
      parser.parse('SELECT event\nFROM events WHERE', 'select', 'query.query'),
    ).rejects.toMatchObject({
      status: 400,
      attr: 'query.query',
      message: expect.stringMatching(/^query\.query: SyntaxError at line 2, column \d+: /),
    });
  });

  it('refuses deep nesting and long texts without parsing them', async () => {
    await expect(
      parser.parse(`SELECT ${'f('.repeat(30)}1${')'.repeat(30)}`, 'select', 'q'),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/nests brackets deeper than 24/),
    });
    await expect(parser.parse(`SELECT '${'x'.repeat(20_001)}'`, 'select', 'q')).rejects.toMatchObject({
      status: 400,
    });
    expect(parser.parsed).toBe(0);
  });

  it('counts nesting outside quotes only', () => {
    expect(nestingOver("SELECT '((((('", 2)).toBeUndefined();
    expect(nestingOver('SELECT `(((`', 2)).toBeUndefined();
    expect(nestingOver('SELECT (((1)))', 2)).toBe(9);
  });

  it('refuses a text past the deadline, then parses the next one in a fresh worker', async () => {
    await expect(parser.parse(slowText(1), 'select', 'q')).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/longer than 150 ms to parse/),
    });
    await expect(parser.parse('SELECT 1', 'select', 'q')).resolves.toMatchObject({ node: 'SelectQuery' });
  });

  it('parses the text queued behind one that crashed the parser in a fresh worker', async () => {
    const one = createHogQLParser({ workers: 1 });
    try {
      await one.warm();
      const chain = `SELECT ${Array.from({ length: 600 }, (_, i) => `a${i}`).join(' + ')} FROM events`;
      const [crashed, next] = await Promise.allSettled([
        one.parse(chain, 'select', 'q', 'a'),
        one.parse('SELECT 5', 'select', 'q', 'a'),
      ]);
      expect(crashed).toMatchObject({ status: 'rejected', reason: { status: 400 } });
      // The crashed worker is on its way out: the next text must not be sent to it.
      expect(next).toMatchObject({ status: 'fulfilled', value: { node: 'SelectQuery' } });
    } finally {
      await one.close();
    }
  });

  it('warms up ahead of the first text, which then parses well within the deadline', async () => {
    await parser.warm();
    expect(parser.parsed).toBe(0);
    // The deadline (150 ms here) would refuse this if loading or warming were still ahead of it.
    await expect(parser.parse('SELECT uniq(person_id) FROM events', 'select', 'q')).resolves.toMatchObject({
      node: 'SelectQuery',
    });
  });

  it('answers a repeated text from memory', async () => {
    await parser.parse('SELECT 2', 'select', 'q');
    await parser.parse('SELECT 2', 'select', 'q');
    expect(parser.parsed).toBe(1);
  });

  it('refuses runs of NOT and long field chains without parsing them, outside quotes and comments', async () => {
    await expect(parser.parse(`SELECT ${'NOT '.repeat(50)}1`, 'select', 'q')).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/^q has more than 4 NOTs in a row/),
    });
    const chain = (n: number) =>
      `SELECT properties.${Array.from({ length: n - 1 }, (_, i) => `k${i}`).join('.')}`;
    await expect(parser.parse(chain(17), 'select', 'q')).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/field chain of more than 16 names/),
    });
    expect(parser.parsed).toBe(0);
    expect(shapeProblem(chain(16))).toBeUndefined();
    expect(shapeProblem('SELECT NOT NOT NOT NOT 1')).toBeUndefined();
    expect(shapeProblem('SELECT NOT NOT NOT NOT NOT 1')).toMatch(/NOTs in a row/);
    expect(
      shapeProblem("SELECT 'NOT NOT NOT NOT NOT', `not not not not not` -- NOT NOT NOT NOT NOT\n"),
    ).toBeUndefined();
    expect(shapeProblem('SELECT 1 /* a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r */')).toBeUndefined();
    expect(shapeProblem('SELECT `a`.`b`.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q')).toMatch(/field chain/);
  });
});

describe('projects taking turns for the parser', () => {
  const done = (order: string[], label: string, p: Promise<unknown>) =>
    p.then(
      () => order.push(label),
      () => order.push(label),
    );

  it("parses another project's text after one slow text of a project that queued four", async () => {
    const one = createHogQLParser({ deadlineMs: 150, workers: 1 });
    try {
      await one.warm();
      const order: string[] = [];
      const slow = [1, 2, 3, 4].map((i) => done(order, `a${i}`, one.parse(slowText(i), 'select', 'q', 'a')));
      const other = done(order, 'b', one.parse('SELECT 1', 'select', 'q', 'b'));
      await Promise.all([...slow, other]);
      // In arrival order b would be last; taking turns, it is second.
      expect(order).toEqual(['a1', 'b', 'a2', 'a3', 'a4']);
    } finally {
      await one.close();
    }
  });

  it("gives another project the second worker while one project's text is in the first", async () => {
    await parser.warm();
    const order: string[] = [];
    const slow = [1, 2].map((i) => done(order, `a${i}`, parser.parse(slowText(`w${i}`), 'select', 'q', 'a')));
    const other = done(order, 'b', parser.parse('SELECT 3', 'select', 'q', 'b'));
    await Promise.all([...slow, other]);
    expect(order).toEqual(['b', 'a1', 'a2']);
  });

  it("turns a project's texts away with 429 past 64 waiting, and parses the rest", async () => {
    const answers = await Promise.allSettled(
      Array.from({ length: 70 }, (_, i) => parser.parse(`SELECT ${i}`, 'select', 'q', 'a')),
    );
    const refused = answers.filter((a) => a.status === 'rejected');
    expect(refused).toHaveLength(5);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 429 });
    expect(parser.parsed).toBe(65);
  });
});
