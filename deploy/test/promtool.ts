// Helpers for promtool rule tests that start from real scrapes: a running service's /_metrics
// text becomes promtool input series (one sample per scrape, one interval apart, the last one
// held), and `promtool test rules` runs on a generated test file. JSON is YAML, so the file is
// written with JSON.stringify.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

export const ALERT_RULES = path.resolve(__dirname, '../monitoring/sett-alerts.yaml');

/** `name{labels}` -> value, from Prometheus text exposition (comments and NaN left out). */
export function parseScrape(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    const value = Number(line.slice(cut + 1));
    if (!Number.isNaN(value)) out.set(line.slice(0, cut), value);
  }
  return out;
}

/**
 * Input series from consecutive scrapes taken one `interval` apart: every series that any scrape
 * has, with `_` (no sample) where a scrape lacked it, and its last value held for `hold` more
 * intervals. A counter missing from the first scrape therefore starts at `_`, as Prometheus
 * would have seen it.
 */
export function seriesFromScrapes(scrapes: Map<string, number>[], hold = 30) {
  const names = new Set(scrapes.flatMap((s) => [...s.keys()]));
  return [...names].map((series) => {
    const values = scrapes.map((s) => (s.has(series) ? String(s.get(series)) : '_'));
    const last = [...scrapes]
      .reverse()
      .find((s) => s.has(series))!
      .get(series)!;
    return { series, values: `${values.join(' ')} ${last}x${hold}` };
  });
}

export function promtoolPath(): string {
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();
  if (!found)
    throw new Error(
      "promtool is not installed: scripts/setup.sh installs it (Debian's prometheus package); or apt-get install prometheus",
    );
  return found;
}

/** Runs `promtool test rules` on one generated test; returns its output, throws with it on failure. */
export function promtoolTestRules(tests: unknown[], interval = '1m'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-promtool-'));
  try {
    const file = path.join(dir, 'generated.test.yaml');
    fs.writeFileSync(
      file,
      JSON.stringify({ rule_files: [ALERT_RULES], evaluation_interval: interval, tests }, null, 2),
    );
    try {
      return execFileSync(promtoolPath(), ['test', 'rules', file], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`promtool test rules failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts a service's main.ts (of this checkout, or another) as the operator runs it; resolves with its base URL once it logs "ready". */
export async function spawnService(
  name: 'ingestion' | 'management',
  env: Record<string, string>,
  /** The checkout to run it from (default this one). */
  cwd = path.resolve(__dirname, '../..'),
): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', `services/${name}/src/main.ts`], {
    cwd,
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    for (const stream of [child.stdout!, child.stderr!])
      readline.createInterface({ input: stream }).on('line', (l) => {
        lines.push(l);
        const m = new RegExp(`${name} ready.*"port":(\\d+)`).exec(l);
        if (m) resolve(Number(m[1]));
      });
    child.once('exit', (code) =>
      reject(new Error(`${name} exited ${code}:\n${lines.slice(-20).join('\n')}`)),
    );
  });
  return { base: `http://127.0.0.1:${port}`, child };
}

export async function waitFor(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
