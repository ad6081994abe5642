// Every public path reaches the service that owns it through the real local edge: three
// stand-in upstreams on loopback answer with their own name and the path they received, so a
// path sent to the wrong service, or rewritten on the way, fails here.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEdge, type Edge, type EdgeTarget } from '../src/edge';

const names: EdgeTarget[] = ['management', 'capture', 'decide'];
const upstreams: http.Server[] = [];
let edge: Edge;
let base: string;

beforeAll(async () => {
  const ports = {} as Record<EdgeTarget, { host: string; port: number }>;
  for (const name of names) {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ service: name, url: req.url })),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    upstreams.push(server);
    ports[name] = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
  }
  edge = await startEdge({ host: '127.0.0.1', port: 0, upstreams: ports });
  base = `http://127.0.0.1:${edge.port}`;
});

afterAll(async () => {
  await edge.stop();
  for (const server of upstreams) {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

it.each([
  ['GET', '/decide/?v=4', 'decide'],
  ['POST', '/flags/?v=2', 'decide'],
  ['GET', '/flags/definitions?token=phc_x&send_cohorts', 'decide'],
  ['GET', '/array/phc_x/config', 'decide'],
  ['GET', '/array/phc_x/config.js', 'decide'],
  ['GET', '/static/array.js', 'decide'],
  ['GET', '/static/lazy-recorder.js?v=1.449.2', 'decide'],
  ['GET', '/api/feature_flag/local_evaluation/?token=phc_x', 'decide'],
  ['GET', '/api/feature_flag/local_evaluation?token=phc_x', 'decide'],
  ['GET', '/api/early_access_features/?token=phc_x&stage=beta', 'decide'],
  ['GET', '/api/surveys/?token=phc_x', 'decide'],
  ['GET', '/api/web_experiments/?token=phc_x', 'decide'],
  ['GET', '/api/product_tours/?token=phc_x', 'decide'],
  ['OPTIONS', '/api/early_access_features/', 'decide'],
  ['GET', '/api/users/@me/', 'management'],
  ['GET', '/api/projects/1/early_access_feature/', 'management'],
  ['GET', '/api/projects/@current/feature_flags/k/remote_config?token=phc_x', 'management'],
  ['GET', '/api/surveys/1/', 'management'],
  ['POST', '/i/v0/e/', 'capture'],
  ['POST', '/batch', 'capture'],
  ['POST', '/e/?ip=1', 'capture'],
])('%s %s -> %s, path unchanged', async (method, path, service) => {
  const res = await fetch(base + path, { method, body: method === 'POST' ? '{}' : undefined });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ service, url: path });
});

it.each(['/array', '/static', '/nope', '/flags/other'])('%s is the edge’s 404', async (path) => {
  const res = await fetch(base + path);
  expect(res.status).toBe(404);
  expect(await res.json()).toMatchObject({ code: 'not_found' });
});
