// PostHog's HogQL parser in its worker thread: PostHog's AST for what it parses, a syntax error
// with its position as a 400, texts refused before parsing (too long, too deep), a text past the
// parse deadline refused with the worker replaced, and repeated texts answered without parsing.
import { createHogQLParser, nestingOver, type HogQLParser } from '../src/hogql/parse';

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
    const slow = `SELECT 1 FROM events WHERE ${Array.from({ length: 300 }, (_, i) => `properties.p${i} = 'v'`).join(' AND ')}`;
    await expect(parser.parse(slow, 'select', 'q')).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/longer than 150 ms to parse/),
    });
    await expect(parser.parse('SELECT 1', 'select', 'q')).resolves.toMatchObject({ node: 'SelectQuery' });
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
});
