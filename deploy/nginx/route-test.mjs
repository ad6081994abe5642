// Route test for deploy/nginx/nginx.conf, run by deploy/validate.sh when an nginx binary is
// installed: `node deploy/nginx/route-test.mjs [path/to/nginx]`.
//
// It starts three stand-in upstreams on 127.0.0.1 (each answers with its name, the URL and
// headers it got and the body size), rewrites a temporary copy of the config to point at them
// (the compose hostnames do not resolve here: each `set $<service>_addr <host>:<port>;` becomes
// 127.0.0.1 and a stand-in's port), checks it with `nginx -t`, runs that copy on a free
// loopback port, sends the requests below, and stops its nginx and servers before exiting.
// Exit code 0 when every check passes.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { URL } from 'node:url';

const NGINX = process.argv[2] ?? 'nginx';
const CONF = new URL('./nginx.conf', import.meta.url);
const MiB = 1024 * 1024;

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

function upstream(name) {
  return http.createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk) => (bytes += chunk.length));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ upstream: name, url: req.url, headers: req.headers, bytes }));
    });
  });
}

function request(port, method, url, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: url, headers: { host: 'sett.test', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, json, text, headers: res.headers });
        });
      },
    );
    // nginx answers 413 before reading a too-large body and may close the socket mid-upload.
    req.on('error', (err) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    req.end(body);
  });
}

async function waitForPort(port, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await request(port, 'GET', '/_health');
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const servers = {
  management: upstream('management'),
  capture: upstream('capture'),
  decide: upstream('decide'),
};
const ports = {};
for (const [name, server] of Object.entries(servers)) ports[name] = await listen(server);
const probe = http.createServer();
const edgePort = await listen(probe);
await new Promise((r) => probe.close(r));

const dir = mkdtempSync(path.join(tmpdir(), 'sett-edge-'));
let conf = readFileSync(CONF, 'utf8');
for (const [name, port] of Object.entries(ports)) {
  const re = new RegExp(`set \\$${name}_addr ${name}:\\d+;`);
  if (!re.test(conf)) throw new Error(`nginx.conf has no "set $${name}_addr ${name}:<port>;" line`);
  conf = conf.replace(re, `set $${name}_addr 127.0.0.1:${port};`);
}
if (!/listen 8000 default_server;/.test(conf)) throw new Error('nginx.conf does not listen on 8000');
conf = conf
  .replace('listen 8000 default_server;', `listen 127.0.0.1:${edgePort} default_server;`)
  // Logs to files: /dev/std* may not be openable here (e.g. when they are sockets).
  .replace('error_log /dev/stderr warn;', `error_log ${dir}/error.log warn;`)
  .replace('access_log /dev/stdout edge;', `access_log ${dir}/access.log edge;`)
  .replace('http {', `http {\n    client_body_temp_path ${dir}/body;\n    proxy_temp_path ${dir}/proxy;`);
const confPath = path.join(dir, 'nginx.conf');
writeFileSync(confPath, conf);
const globals = `pid ${dir}/nginx.pid; daemon off;`;

let nginx;
let failures = 0;
function check(label, ok, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}${ok ? '' : ` -- ${String(detail).trim()}`}`);
  if (!ok) failures++;
}

try {
  const test = spawnSync(NGINX, ['-t', '-q', '-p', dir, '-c', confPath, '-g', globals], { encoding: 'utf8' });
  check('nginx -t on the rewritten config', test.status === 0, test.stderr.trim());
  if (test.status !== 0) throw new Error('config test failed');

  nginx = spawn(NGINX, ['-p', dir, '-c', confPath, '-g', globals], { stdio: ['ignore', 'ignore', 'pipe'] });
  let nginxErr = '';
  nginx.stderr.on('data', (c) => (nginxErr += c));
  const health = await waitForPort(edgePort, 5000).catch((err) => {
    throw new Error(`edge did not start: ${err.message} ${nginxErr}`);
  });
  check(
    'GET /_health answered by the edge',
    health.status === 200 && health.json?.status === 'ok',
    health.text,
  );

  const routes = [
    ['GET', '/api/projects/1/feature_flags/?limit=10', 'management'],
    ['POST', '/api/users/', 'management'],
    ['GET', '/api', 'management'],
    ['POST', '/i/v0/e/', 'capture'],
    ['POST', '/i/v0/e', 'capture'],
    ['POST', '/e/?ip=1&_=1700000000000&ver=1.200.0&compression=gzip-js', 'capture'],
    ['POST', '/e', 'capture'],
    ['GET', '/e/?data=eyJldmVudCI6IngifQ%3D%3D', 'capture'],
    ['POST', '/capture/', 'capture'],
    ['POST', '/capture', 'capture'],
    ['POST', '/track/', 'capture'],
    ['POST', '/track', 'capture'],
    ['POST', '/batch/', 'capture'],
    ['POST', '/batch', 'capture'],
    ['POST', '/engage/', 'capture'],
    ['POST', '/engage?ip=1', 'capture'],
    ['POST', '/decide/?v=4', 'decide'],
    ['POST', '/decide?v=3', 'decide'],
    ['POST', '/flags/?v=2', 'decide'],
    ['POST', '/flags', 'decide'],
    ['GET', '/flags/definitions?token=phc_x&send_cohorts', 'decide'],
    ['GET', '/flags/definitions/', 'decide'],
    ['GET', '/array/phc_x/config', 'decide'],
    ['GET', '/array/phc_x/config.js', 'decide'],
    ['GET', '/static/array.js', 'decide'],
    ['GET', '/static/lazy-recorder.js?v=1.449.2', 'decide'],
    ['GET', '/api/feature_flag/local_evaluation/?token=phc_x&send_cohorts', 'decide'],
    ['GET', '/api/feature_flag/local_evaluation?token=phc_x', 'decide'],
    ['GET', '/api/early_access_features/?token=phc_x&stage=beta', 'decide'],
    ['GET', '/api/early_access_features?token=phc_x', 'decide'],
    ['GET', '/api/surveys/?token=phc_x', 'decide'],
    ['GET', '/api/web_experiments/?token=phc_x', 'decide'],
    ['GET', '/api/product_tours/?token=phc_x', 'decide'],
    ['OPTIONS', '/api/early_access_features/', 'decide'],
    // Their neighbours under /api/ stay with management.
    ['GET', '/api/surveys/1/', 'management'],
    ['GET', '/api/feature_flag/', 'management'],
    ['GET', '/api/projects/@current/feature_flags/k/remote_config?token=phc_x', 'management'],
    ['GET', '/api/projects/1/early_access_feature/', 'management'],
  ];
  for (const [method, url, want] of routes) {
    const res = await request(edgePort, method, url, { body: method === 'POST' ? '{}' : undefined });
    check(
      `${method} ${url} -> ${want}`,
      res.json?.upstream === want && res.json?.url === url,
      `${res.status} ${res.text}`,
    );
  }
  for (const url of ['/', '/e/extra', '/decidex', '/capture/foo', '/apix', '/flags/x', '/staticx']) {
    const res = await request(edgePort, 'POST', url, { body: '{}' });
    check(
      `POST ${url} -> 404 at the edge`,
      res.status === 404 && res.json?.code === 'not_found',
      `${res.status} ${res.text}`,
    );
  }

  const hdr = await request(edgePort, 'POST', '/batch/', {
    body: '{}',
    headers: { 'x-forwarded-for': '203.0.113.9' },
  });
  const h = hdr.json?.headers ?? {};
  check(
    'X-Forwarded-For appends the client address',
    h['x-forwarded-for'] === '203.0.113.9, 127.0.0.1',
    h['x-forwarded-for'],
  );
  check('X-Forwarded-Proto set', h['x-forwarded-proto'] === 'http', h['x-forwarded-proto']);
  check('Host passed through', h.host === 'sett.test', h.host);
  const proto = await request(edgePort, 'POST', '/decide?v=4', {
    body: '{}',
    headers: { 'x-forwarded-proto': 'https' },
  });
  check(
    'X-Forwarded-Proto from a TLS front kept',
    proto.json?.headers?.['x-forwarded-proto'] === 'https',
    JSON.stringify(proto.json?.headers),
  );

  const given = await request(edgePort, 'POST', '/flags/?v=2', {
    body: '{}',
    headers: { 'x-request-id': 'sdk-req-42' },
  });
  check(
    "X-Request-Id: the caller's id is forwarded",
    given.json?.headers?.['x-request-id'] === 'sdk-req-42',
    JSON.stringify(given.json?.headers),
  );
  const fresh = await request(edgePort, 'POST', '/flags/?v=2', { body: '{}' });
  check(
    'X-Request-Id: generated at the edge when absent',
    /^[0-9a-f]{32}$/.test(fresh.json?.headers?.['x-request-id'] ?? ''),
    JSON.stringify(fresh.json?.headers),
  );
  const unsafe = await request(edgePort, 'POST', '/flags/?v=2', {
    body: '{}',
    headers: { 'x-request-id': 'has spaces and "quotes"' },
  });
  check(
    'X-Request-Id: an id the services would refuse is replaced',
    /^[0-9a-f]{32}$/.test(unsafe.json?.headers?.['x-request-id'] ?? ''),
    JSON.stringify(unsafe.json?.headers),
  );
  const edge404 = await request(edgePort, 'GET', '/nope', { headers: { 'x-request-id': 'r-404' } });
  check(
    "X-Request-Id on the edge's own answers",
    edge404.headers?.['x-request-id'] === 'r-404',
    JSON.stringify(edge404.headers),
  );

  const big = await request(edgePort, 'POST', '/batch/', { body: Buffer.alloc(19 * MiB, 0x61) });
  check(
    '19 MiB body reaches capture whole',
    big.json?.upstream === 'capture' && big.json?.bytes === 19 * MiB,
    `${big.status} ${big.json?.bytes}`,
  );
  const tooBig = await request(edgePort, 'POST', '/batch/', { body: Buffer.alloc(20 * MiB + 1, 0x61) });
  check(
    '20 MiB + 1 byte to capture -> 413 JSON',
    tooBig.status === 413 && tooBig.json?.code === 'payload_too_large',
    `${tooBig.status} ${tooBig.text.slice(0, 200)}`,
  );
  const decideBig = await request(edgePort, 'POST', '/decide?v=4', { body: Buffer.alloc(2 * MiB, 0x61) });
  check(
    '2 MiB to decide -> 413 (1 MiB limit off capture paths)',
    decideBig.status === 413,
    `${decideBig.status}`,
  );

  await new Promise((r) => servers.decide.close(r));
  const down = await request(edgePort, 'POST', '/decide?v=4', { body: '{}' });
  check(
    'upstream down -> 503 JSON',
    down.status === 503 && down.json?.code === 'unavailable',
    `${down.status} ${down.text}`,
  );
} catch (err) {
  console.log(`FAIL ${err instanceof Error ? err.message : String(err)}`);
  failures++;
} finally {
  if (nginx && nginx.exitCode === null) {
    const exited = new Promise((r) => nginx.once('exit', r));
    nginx.kill('SIGQUIT'); // graceful stop of the nginx this script started
    await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
    if (nginx.exitCode === null) nginx.kill('SIGKILL');
  }
  for (const server of Object.values(servers)) server.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(failures === 0 ? 'edge routes: all checks passed' : `edge routes: ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
