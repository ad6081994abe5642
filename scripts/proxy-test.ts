// Conformance test of the generated proxy configs against real nginx and Caddy binaries:
// `tsx scripts/proxy-test.ts nginx [path/to/nginx]` or `... caddy [path/to/caddy]` (deploy/validate.sh
// runs both when it finds the binaries; packages/edge-config's integration test too).
//
// It starts three stand-in services on 127.0.0.1 (each answers with its name, the path and
// header fields it got and the body size), rewrites a temporary copy of deploy/nginx/nginx.conf
// or deploy/caddy/Caddyfile to point at them and to listen on a free loopback port, starts the
// proxy, and sends every probe of the edge routing (@sett/http's edgeProbes over the generated
// table: each exact path in both slash forms, a path under each subtree, the /api/ fallback, near
// misses that must be the edge's 404), then checks the forwarded header fields, request ids, body
// limits and the answer when a service is down. It stops its proxy and servers before returning.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { edgeProbes, type EdgeService } from '@sett/http';
import { EDGE_ROUTING } from '../packages/devstack/src/edge-routes';

export type ProxyKind = 'nginx' | 'caddy';

interface Reply {
  status: number;
  text: string;
  json: Record<string, unknown> | undefined;
  headers: http.IncomingHttpHeaders;
}

const root = path.resolve(__dirname, '..');
const MiB = 1024 * 1024;
const SERVICES: EdgeService[] = ['capture', 'decide', 'management'];

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function standIn(name: EdgeService): http.Server {
  return http.createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ upstream: name, url: req.url, headers: req.headers, bytes }));
    });
  });
}

function request(
  port: number,
  method: string,
  url: string,
  opts: { body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: url, headers: { host: 'sett.test', ...opts.headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let json: Record<string, unknown> | undefined;
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, text, json, headers: res.headers });
        });
      },
    );
    // A proxy answers 413 before reading a too-large body and may close mid-upload.
    req.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err),
    );
    req.end(opts.body);
  });
}

async function waitForPort(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await request(port, 'GET', '/_health');
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function freePort(): Promise<number> {
  const probe = http.createServer();
  const port = await listen(probe);
  await new Promise((r) => probe.close(r));
  return port;
}

/** A copy of the shipped config pointed at the stand-ins and at `port`, and how to run it. */
function prepare(
  kind: ProxyKind,
  bin: string,
  dir: string,
  port: number,
  ports: Record<EdgeService, number>,
) {
  if (kind === 'nginx') {
    let conf = fs.readFileSync(path.join(root, 'deploy/nginx/nginx.conf'), 'utf8');
    for (const s of SERVICES) {
      const re = new RegExp(`set \\$${s}_addr ${s}:\\d+;`);
      if (!re.test(conf)) throw new Error(`nginx.conf has no "set $${s}_addr ${s}:<port>;" line`);
      conf = conf.replace(re, `set $${s}_addr 127.0.0.1:${ports[s]};`);
    }
    conf = conf
      .replace('listen 8000 default_server;', `listen 127.0.0.1:${port} default_server;`)
      // Logs to files: /dev/std* may not be openable here (e.g. when they are sockets).
      .replace('error_log /dev/stderr warn;', `error_log ${dir}/error.log warn;`)
      .replace('access_log /dev/stdout edge;', `access_log ${dir}/access.log edge;`)
      .replace('http {', `http {\n    client_body_temp_path ${dir}/body;\n    proxy_temp_path ${dir}/proxy;`);
    const file = path.join(dir, 'nginx.conf');
    fs.writeFileSync(file, conf);
    const args = ['-p', dir, '-e', `${dir}/error.log`, '-c', file, '-g', `pid ${dir}/nginx.pid; daemon off;`];
    return { test: [bin, '-t', '-q', ...args], run: [bin, ...args] };
  }
  let conf = fs.readFileSync(path.join(root, 'deploy/caddy/Caddyfile'), 'utf8');
  conf = conf
    .replace('admin localhost:2019', `admin off\n\tauto_https off\n\tstorage file_system ${dir}/data`)
    .replace('{$SETT_DOMAIN:localhost} {', `http://:${port} {\n\tbind 127.0.0.1`)
    .replace(/output stdout/, `output file ${dir}/access.log`);
  for (const s of SERVICES) {
    const re = new RegExp(`reverse_proxy ${s}:\\d+`);
    if (!re.test(conf)) throw new Error(`Caddyfile has no "reverse_proxy ${s}:<port>"`);
    conf = conf.replace(re, `reverse_proxy 127.0.0.1:${ports[s]}`);
  }
  const file = path.join(dir, 'Caddyfile');
  fs.writeFileSync(file, conf);
  const args = ['--config', file, '--adapter', 'caddyfile'];
  return { test: [bin, 'validate', ...args], run: [bin, 'run', ...args] };
}

/** Runs every check; returns the failures (empty when the proxy conforms). Logs one line per check. */
export async function runProxyTest(
  kind: ProxyKind,
  bin: string,
  log: (line: string) => void = () => undefined,
) {
  const failures: string[] = [];
  const check = (label: string, ok: boolean, detail: unknown) => {
    log(`${ok ? 'ok  ' : 'FAIL'} ${label}${ok ? '' : ` -- ${String(detail).trim().slice(0, 300)}`}`);
    if (!ok) failures.push(`${label}: ${String(detail).trim().slice(0, 300)}`);
  };
  const servers = Object.fromEntries(SERVICES.map((s) => [s, standIn(s)])) as Record<
    EdgeService,
    http.Server
  >;
  const ports = {} as Record<EdgeService, number>;
  for (const s of SERVICES) ports[s] = await listen(servers[s]);
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sett-${kind}-`));
  let proxy: ChildProcess | undefined;
  try {
    const { test, run } = prepare(kind, bin, dir, port, ports);
    const tested = spawnSync(test[0]!, test.slice(1), {
      encoding: 'utf8',
      env: { ...process.env, HOME: dir },
    });
    check(`${kind} accepts the config`, tested.status === 0, tested.stderr || tested.stdout);
    if (tested.status !== 0) return failures;
    proxy = spawn(run[0]!, run.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, HOME: dir },
    });
    let stderr = '';
    proxy.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    await waitForPort(port, 10_000).catch((err: Error) => {
      throw new Error(`${kind} did not start: ${err.message} ${stderr}`);
    });

    const health = await request(port, 'GET', '/_health');
    check(
      'GET /_health answered by the edge',
      health.status === 200 && health.json?.status === 'ok',
      health.text,
    );

    for (const probe of edgeProbes(EDGE_ROUTING)) {
      const method = probe.path.startsWith('/array') || probe.path.startsWith('/static') ? 'GET' : 'POST';
      const res = await request(port, method, probe.path, { body: method === 'POST' ? '{}' : undefined });
      if (probe.service === null)
        check(
          `${method} ${probe.path} -> the edge's 404`,
          res.status === 404 && res.json?.code === 'not_found',
          `${res.status} ${res.text}`,
        );
      else
        check(
          `${method} ${probe.path} -> ${probe.service}, path unchanged`,
          res.json?.upstream === probe.service && res.json?.url === probe.path,
          `${res.status} ${res.text}`,
        );
    }

    const fwd = await request(port, 'POST', '/batch/', {
      body: '{}',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    });
    const h = (fwd.json?.headers ?? {}) as Record<string, string>;
    const entries = (h['x-forwarded-for'] ?? '').split(',').map((s) => s.trim());
    // nginx appends the client's address to what came, Caddy replaces what an untrusted client
    // sent: either way the last entry is the address the edge saw, which is what the services
    // trust with one proxy hop.
    check(
      'X-Forwarded-For ends with the client address',
      entries[entries.length - 1] === '127.0.0.1',
      h['x-forwarded-for'],
    );
    check('X-Forwarded-Proto set', h['x-forwarded-proto'] === 'http', h['x-forwarded-proto']);
    check(
      'X-Forwarded-Host set',
      (h['x-forwarded-host'] ?? '').startsWith('sett.test'),
      h['x-forwarded-host'],
    );
    check('Host passed through', (h.host ?? '').startsWith('sett.test'), h.host);

    const given = await request(port, 'POST', '/flags/?v=2', {
      body: '{}',
      headers: { 'x-request-id': 'sdk-req-42' },
    });
    check(
      "X-Request-Id: the caller's id is forwarded",
      (given.json?.headers as Record<string, string>)?.['x-request-id'] === 'sdk-req-42',
      given.text,
    );
    const fresh = await request(port, 'POST', '/flags/?v=2', { body: '{}' });
    const freshId = (fresh.json?.headers as Record<string, string>)?.['x-request-id'] ?? '';
    check('X-Request-Id: made up at the edge when absent', /^[0-9a-f-]{32,36}$/.test(freshId), fresh.text);
    const unsafe = await request(port, 'POST', '/flags/?v=2', {
      body: '{}',
      headers: { 'x-request-id': 'has spaces and "quotes"' },
    });
    const unsafeId = (unsafe.json?.headers as Record<string, string>)?.['x-request-id'] ?? '';
    check(
      'X-Request-Id: an id the services would refuse is replaced',
      /^[0-9a-f-]{32,36}$/.test(unsafeId),
      unsafe.text,
    );
    const own404 = await request(port, 'GET', '/nope', { headers: { 'x-request-id': 'r-404' } });
    check(
      "X-Request-Id on the edge's own answers",
      own404.headers['x-request-id'] === 'r-404',
      JSON.stringify(own404.headers),
    );

    const big = await request(port, 'POST', '/batch/', { body: Buffer.alloc(19 * MiB, 0x61) });
    check(
      '19 MiB body reaches capture whole',
      big.json?.upstream === 'capture' && big.json?.bytes === 19 * MiB,
      `${big.status} ${String(big.json?.bytes)}`,
    );
    const tooBig = await request(port, 'POST', '/batch/', { body: Buffer.alloc(20 * MiB + 1, 0x61) });
    check(
      '20 MiB + 1 byte to capture -> 413 JSON',
      tooBig.status === 413 && tooBig.json?.code === 'payload_too_large',
      `${tooBig.status} ${tooBig.text.slice(0, 200)}`,
    );
    const decideBig = await request(port, 'POST', '/decide/?v=4', { body: Buffer.alloc(2 * MiB, 0x61) });
    check('2 MiB to decide -> 413 (1 MiB off the capture paths)', decideBig.status === 413, decideBig.status);

    await new Promise((r) => servers.decide.close(r));
    const down = await request(port, 'POST', '/decide/?v=4', { body: '{}' });
    check(
      'a service that is down -> 503 JSON',
      down.status === 503 && down.json?.code === 'unavailable',
      `${down.status} ${down.text}`,
    );
  } catch (err) {
    check(`${kind} conformance run`, false, err instanceof Error ? err.message : String(err));
  } finally {
    if (proxy && proxy.exitCode === null) {
      const exited = new Promise((r) => proxy!.once('exit', r));
      proxy.kill(kind === 'nginx' ? 'SIGQUIT' : 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (proxy.exitCode === null) proxy.kill('SIGKILL');
    }
    for (const server of Object.values(servers)) {
      server.closeAllConnections();
      server.close();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return failures;
}

if (require.main === module) {
  const kind = process.argv[2] as ProxyKind;
  if (kind !== 'nginx' && kind !== 'caddy') {
    process.stderr.write('usage: tsx scripts/proxy-test.ts nginx|caddy [binary]\n');
    process.exit(2);
  }
  void runProxyTest(kind, process.argv[3] ?? kind, (l) => process.stdout.write(`${l}\n`)).then((failures) => {
    process.stdout.write(
      failures.length === 0
        ? `${kind}: all checks passed\n`
        : `${kind}: ${failures.length} check(s) failed\n`,
    );
    process.exit(failures.length === 0 ? 0 : 1);
  });
}
