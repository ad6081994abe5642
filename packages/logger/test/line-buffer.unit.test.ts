// Log lines are written together once per turn of the event loop, in order, at once past the
// pending limit, and synchronously when the process exits with lines still pending.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createLineBuffer } from '../src/line-buffer';

const write = (stream: NodeJS.WritableStream, line: string) =>
  new Promise<void>((resolve) => stream.write(line, () => resolve()));

test('one write per turn, lines in order', async () => {
  const batches: string[] = [];
  const lines = createLineBuffer({ write: (text) => batches.push(text) });
  await Promise.all(['a\n', 'b\n', 'c\n'].map((l) => write(lines, l)));
  expect(batches).toEqual([]);
  await new Promise((resolve) => setImmediate(resolve));
  expect(batches).toEqual(['a\nb\nc\n']);
  await write(lines, 'd\n');
  await new Promise((resolve) => setImmediate(resolve));
  expect(batches).toEqual(['a\nb\nc\n', 'd\n']);
  lines.end();
});

test('writes at once past the pending limit', async () => {
  const batches: string[] = [];
  const lines = createLineBuffer({ write: (text) => batches.push(text) });
  const big = `${'x'.repeat(300 * 1024)}\n`;
  await write(lines, 'small\n');
  await write(lines, big);
  expect(batches).toEqual([`small\n${big}`]);
  lines.end();
});

test('lines pending when the process exits are written', () => {
  const script = `
    const { createLogger } = require(${JSON.stringify(path.resolve(__dirname, '../src'))});
    const logger = createLogger({ service: 'exit-test' });
    logger.error('last words', { n: 1 });
    process.exit(3);
  `;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
  expect(result.status).toBe(3);
  const line = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
  expect(line).toMatchObject({ level: 'error', message: 'last words', n: 1, service: 'exit-test' });
});
