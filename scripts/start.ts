// `pnpm start`: the whole Sett stack on this machine, in the foreground.
// Starts the Kafka development broker unless KAFKA_BROKERS is set, the four services and the
// edge on SETT_PORT, bootstraps a default project on an empty database and prints its keys.
// Ctrl-C (or SIGTERM) stops everything this script started, and nothing else.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { loadConfigOrExit } from '@sett/config';
import { ensureConsoleBuilt, startDevBroker, startEdge, type DevBroker, type Edge } from '@sett/devstack';
import { bootstrap, existingStackLines, presentCredentials } from '@sett/cli';

const root = path.resolve(__dirname, '..');
const config = loadConfigOrExit();
const services = [
  { name: 'management', port: config.ports.management },
  { name: 'capture', port: config.ports.capture },
  { name: 'decide', port: config.ports.decide },
  { name: 'ingestion', port: config.ports.ingestion },
] as const;

const children: ChildProcess[] = [];
let broker: DevBroker | undefined;
let edge: Edge | undefined;
let stopping = false;

function say(line: string) {
  process.stdout.write(`${line}\n`);
}

function launch(name: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'services', name, 'src', 'main.ts')],
    {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream! }).on('line', (l) => say(`[${name}] ${l}`));
  }
  child.on('exit', (code, signal) => {
    if (!stopping) {
      say(`[${name}] exited (${signal ?? code}); stopping the stack`);
      void shutdown(1);
    }
  });
  children.push(child);
  return child;
}

async function waitHealthy(name: string, port: number, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/_health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} did not answer /_health on port ${port} within ${timeoutMs / 1000}s`);
}

// scripts/start.sh has scripts/setup.sh note the Postgres and Redis servers it had to start in
// the file SETT_STARTED_NOTE names; they belong to this run, so they stop with it. Servers that
// were already running, or that another set-up started (the test command's), are never touched.
function stopWhatSetupStarted() {
  const file = process.env.SETT_STARTED_NOTE;
  if (!file || !fs.existsSync(file)) return;
  for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const [what, arg] = line.split(' ');
    try {
      if (what === 'redis')
        execFileSync('redis-cli', ['-p', arg!, 'shutdown', 'nosave'], { stdio: 'ignore' });
      if (what === 'postgres') execFileSync('pg_ctlcluster', [arg!, 'main', 'stop'], { stdio: 'ignore' });
      say(`stopped ${what} (started by set-up)`);
    } catch {
      say(`could not stop ${what} started by set-up`);
    }
  }
  fs.rmSync(file);
}

async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  say('stopping…');
  await edge?.stop();
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGTERM');
          setTimeout(() => c.kill('SIGKILL'), config.shutdownTimeoutMs + 5000).unref();
        }),
    ),
  );
  await broker?.stop();
  stopWhatSetupStarted();
  process.exit(code);
}

async function main() {
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  // A wrapper that dies without passing its signal on (e.g. `timeout pnpm start`) must not leave
  // the stack running: when we are orphaned, stop everything.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void shutdown(0);
  }, 1000).unref();

  // The web console (apps/console), built when its sources changed; management serves it at `/`.
  let consoleBuilt = true;
  try {
    if (ensureConsoleBuilt(say) === 'built') say('console: built apps/console/dist');
  } catch (err) {
    consoleBuilt = false;
    const e = err as Error & { stderr?: string };
    say(`console: the build failed, the API runs without it:\n${e.stderr || e.message}`);
  }

  let brokers = config.kafkaBrokers.join(',');
  if (!brokers) {
    broker = await startDevBroker();
    brokers = broker.bootstrap;
    say(`kafka development broker: ${brokers} (in memory; set KAFKA_BROKERS to use a real Kafka)`);
  }
  // Page links of the management API point at the edge (docs/hardening.md: never the Host header).
  const bound = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const edgeHost = bound.includes(':') ? `[${bound}]` : bound;
  const env = {
    ...process.env,
    SETT_PUBLIC_URL: process.env.SETT_PUBLIC_URL ?? `http://${edgeHost}:${config.ports.edge}`,
    // The edge appends the address it saw to X-Forwarded-For: one trusted hop (docs/hardening.md).
    TRUSTED_PROXY_HOPS: process.env.TRUSTED_PROXY_HOPS ?? '1',
    KAFKA_BROKERS: brokers,
    DATABASE_URL: config.databaseUrl,
    REDIS_URL: config.redisUrl,
  };
  for (const s of services) launch(s.name, env);
  await Promise.all(services.map((s) => waitHealthy(s.name, s.port)));
  edge = await startEdge({
    host: config.host,
    port: config.ports.edge,
    upstreams: {
      management: { host: '127.0.0.1', port: config.ports.management },
      capture: { host: '127.0.0.1', port: config.ports.capture },
      decide: { host: '127.0.0.1', port: config.ports.decide },
    },
    // The services' own deadlines and body limits, so the edge holds what they hold.
    timeouts: {
      headersMs: config.http.headersTimeoutMs,
      requestMs: config.http.requestTimeoutMs,
      keepAliveMs: config.http.keepAliveTimeoutMs,
    },
    bodyLimits: { capture: config.capture.maxBodyBytes, decide: config.decide.maxBodyBytes },
  });

  const result = await bootstrap({
    databaseUrl: config.databaseUrl,
    redisUrl: config.redisUrl,
    onlyIfEmpty: true,
    consolePassword: true,
  });
  say('');
  say(`Sett is running. Edge: http://${config.host}:${edge.port}`);
  say(
    consoleBuilt
      ? `  console     http://${edgeHost}:${edge.port}/  (sign in with a user's email and password)`
      : '  console     not built (see the build error above); the API works without it',
  );
  for (const s of services)
    say(`  ${s.name.padEnd(11)} http://127.0.0.1:${s.port}  (/_health, /_ready, /_metrics)`);
  say(`  kafka       ${brokers}`);
  if (result.created) {
    say('');
    say('Created a default organization, project and user:');
    // The personal key in full only on a terminal; piped or logged output gets it masked and
    // the full key goes to an owner-only file (packages/cli/src/credentials-output.ts).
    const lines = presentCredentials(
      {
        project_id: result.project_id,
        project_api_key: result.project_api_key,
        personal_api_key: result.personal_api_key!,
        user_uuid: result.user_uuid,
        email: result.email,
        console_password: result.console_password,
      },
      {
        interactive: process.stdout.isTTY === true,
        file: path.resolve(root, config.credentialsFile ?? path.join('.sett', 'credentials.json')),
      },
    );
    for (const line of lines) say(line);
  } else {
    for (const line of existingStackLines(result)) say(line);
  }
  say('Press Ctrl-C to stop.');
}

main().catch((err) => {
  say(`start failed: ${(err as Error).message}`);
  void shutdown(1);
});
