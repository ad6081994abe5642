// Container health probe for the Sett image: `node deploy/docker/healthcheck.mjs [path]`.
// Exits 0 when GET http://127.0.0.1:<port><path> answers 2xx, 1 otherwise. The path defaults to
// /_health (alive); compose uses /_ready (dependencies reachable) so depends_on waits for real
// readiness.
//
// One image runs four services on four ports, so the port is found rather than configured:
// HEALTHCHECK_PORT if set, else the port variable of whichever service is running in this
// container (read from /proc: `dist/<name>.cjs` in the image, `services/<name>/src/main.ts` from
// source), else that service's default. Plain ESM with no
// imports beyond node:fs so it starts in well under the probe timeout.
/* global fetch, AbortSignal -- Node 20+ globals */
import { readdirSync, readFileSync } from 'node:fs';

const PORTS = {
  management: ['MANAGEMENT_PORT', 8001],
  capture: ['CAPTURE_PORT', 8002],
  decide: ['DECIDE_PORT', 8003],
  ingestion: ['INGESTION_PORT', 8004],
};

function runningService() {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // the process exited while we looked
    }
    const match =
      /dist\/(management|capture|decide|ingestion)\.cjs/.exec(cmdline) ??
      /services\/(management|capture|decide|ingestion)\/src\/main\.ts/.exec(cmdline);
    if (match) return match[1];
  }
  return undefined;
}

function port() {
  if (process.env.HEALTHCHECK_PORT) return Number(process.env.HEALTHCHECK_PORT);
  const service = runningService();
  if (!service) throw new Error('no Sett service is running in this container');
  const [variable, fallback] = PORTS[service];
  return Number(process.env[variable] || fallback);
}

const path = process.argv[2] ?? '/_health';
try {
  const res = await fetch(`http://127.0.0.1:${port()}${path}`, { signal: AbortSignal.timeout(4000) });
  if (!res.ok) {
    console.error(`${path}: HTTP ${res.status} ${await res.text().catch(() => '')}`.trim());
    process.exit(1);
  }
  process.exit(0);
} catch (err) {
  console.error(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
