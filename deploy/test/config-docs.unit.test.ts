// docs/configuration.md's table is generated from the code (`pnpm routes`, checked in CI by
// `pnpm routes --check`). These tests hold the sources of that table to the code: every
// environment variable loadConfig reads has a row with its meaning, every row names variables the
// code reads, and the defaults on the page are the ones the code applies. The set read is taken
// from loadConfig itself, through an environment that records what is asked of it, independently
// of the recorder that builds the table.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, renderSettingsTable, SETTINGS, settingsProblems } from '@sett/config';

const root = path.resolve(__dirname, '../..');

function settingsRead(): Set<string> {
  const seen = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_t, k) {
      if (typeof k === 'string') seen.add(k);
      return undefined;
    },
  });
  loadConfig(env as NodeJS.ProcessEnv);
  return seen;
}

it('every setting the code reads has a row in SETTINGS, and every row names settings the code reads', () => {
  expect(settingsProblems()).toEqual([]);
  const rows = new Set(SETTINGS.flatMap((r) => r.vars));
  expect([...settingsRead()].filter((n) => !rows.has(n)).sort()).toEqual([]);
});

it('docs/configuration.md holds the table generated from the code', () => {
  const page = fs.readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');
  for (const line of renderSettingsTable().trimEnd().split('\n')) expect(page).toContain(line);
});

it('the table shows the defaults loadConfig applies', () => {
  const table = renderSettingsTable();
  const config = loadConfig({});
  const line = (name: string) => table.split('\n').find((l) => l.startsWith(`| \`${name}\``)) ?? '';
  expect(line('SETT_PORT')).toContain(`| ${config.ports.edge} |`);
  expect(line('QUERY_TIMEOUT_MS')).toContain(`| ${config.query.timeoutMs} (30 s) |`);
  expect(line('KAFKA_PRODUCER_COMPRESSION')).toContain(`| \`${config.kafka.compression}\` |`);
  expect(line('CAPTURE_MAX_BODY_BYTES')).toContain(`${config.capture.maxBodyBytes} (20 MiB)`);
  expect(line('MANAGEMENT_PORT')).toContain('| 8001 / 8002 / 8003 / 8004 |');
});

it('a setting read without a row is a problem named by its variable', () => {
  const row = SETTINGS.find((r) => r.vars.includes('HOST'))!;
  const saved = row.vars;
  row.vars = ['NOT_READ_BY_THE_CODE'];
  try {
    expect(settingsProblems()).toEqual(
      expect.arrayContaining([
        expect.stringContaining('HOST is read by loadConfig but has no row'),
        expect.stringContaining('NOT_READ_BY_THE_CODE has a row in SETTINGS but loadConfig does not read it'),
      ]),
    );
    expect(() => renderSettingsTable()).toThrow(/HOST is read by loadConfig/);
  } finally {
    row.vars = saved;
  }
});
