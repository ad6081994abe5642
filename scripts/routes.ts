// `pnpm routes`: every file derived from the services' route tables, written from them.
// `pnpm routes --check` writes nothing and exits 1 naming the files that are stale (CI runs it).
//
// From the tables (`services/<name>/src/routes.ts`): the edge's routing (@sett/http's
// deriveEdgeRouting, which refuses conflicts), then the dev edge's table, the routing and limits of
// deploy/nginx/nginx.conf (its generated blocks), deploy/caddy/Caddyfile, deploy/k8s/ingress.yaml,
// docs/openapi.json, docs/compatibility.md and the endpoint table of docs/interface.md; and from
// @sett/config, the settings table of docs/configuration.md. Limits and deadlines come from the services'
// configuration defaults (@sett/config), so the proxies hold what the services hold.
import { SCOPES } from '@sett/keys';
import fs from 'node:fs';
import path from 'node:path';
import prettier from 'prettier';
import { loadConfig, renderSettingsTable } from '@sett/config';
import {
  buildOpenApi,
  deriveEdgeRouting,
  type AnyRoute,
  type EdgeService,
  type RouteTable,
} from '@sett/http';
import {
  nginxLimits,
  nginxRoutes,
  POSTHOG_ENDPOINTS,
  renderCaddyfile,
  renderCompatibility,
  renderScopes,
  renderMetrics,
  scanMetrics,
  renderDevEdgeTable,
  renderIngress,
  renderInterfaceTable,
  replaceBlock,
  type CompatRoute,
  type EdgeSettings,
} from '@sett/edge-config';

const root = path.resolve(__dirname, '..');
const SERVICES: EdgeService[] = ['capture', 'decide', 'management'];

interface Loaded {
  table: RouteTable<unknown>;
}

function isRouteTable(value: unknown): value is RouteTable<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RouteTable).service === 'string' &&
    Array.isArray((value as RouteTable).routes)
  );
}

async function loadTable(service: EdgeService): Promise<Loaded> {
  const file = path.join(root, 'services', service, 'src', 'routes.ts');
  if (!fs.existsSync(file)) throw new Error(`${service} has no route table (${path.relative(root, file)})`);
  const mod = (await import(file)) as Record<string, unknown>;
  const table = Object.values(mod).find(isRouteTable);
  if (!table) throw new Error(`${path.relative(root, file)} exports no route table`);
  if (table.service !== service)
    throw new Error(`${path.relative(root, file)} declares service ${table.service}`);
  return { table };
}

function settingsFor(tables: Record<EdgeService, Loaded>): EdgeSettings {
  const config = loadConfig({});
  const largestRoute = (s: EdgeService) =>
    Math.max(0, ...tables[s].table.routes.map((r: AnyRoute<unknown>) => r.bodyLimit ?? 0));
  const service = (name: EdgeService, port: number, ingress: string, limit: number, stream: boolean) => ({
    composeAddress: `${name}:${port}`,
    k8sService: { name: `sett-${name}`, port },
    ingress,
    maxBodyBytes: Math.max(limit, largestRoute(name)),
    streamBodies: stream,
  });
  return {
    services: {
      capture: service('capture', config.ports.capture, 'sett-capture', config.capture.maxBodyBytes, true),
      decide: service('decide', config.ports.decide, 'sett', config.decide.maxBodyBytes, false),
      // The route mechanism's JSON body limit (@sett/http createRouteApp).
      management: service('management', config.ports.management, 'sett', 1024 * 1024, false),
    },
    timeouts: {
      headersMs: config.http.headersTimeoutMs,
      requestMs: config.http.requestTimeoutMs,
      keepAliveMs: config.http.keepAliveTimeoutMs,
      connectMs: 5_000,
      lingerMs: 30_000,
    },
  };
}

/** Every metric declared in the services' and packages' sources (docs/metrics.md). */
function metricDeclarations() {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!['node_modules', 'test', 'generated', 'dist'].includes(entry.name)) walk(rel);
      } else if (entry.name.endsWith('.ts')) files.push(rel);
    }
  };
  for (const top of ['services', 'packages']) walk(top);
  return files.flatMap((f) =>
    scanMetrics(f.split(path.sep).join('/'), fs.readFileSync(path.join(root, f), 'utf8')),
  );
}

async function format(file: string, text: string): Promise<string> {
  const info = await prettier.getFileInfo(file, { ignorePath: path.join(root, '.prettierignore') });
  if (info.ignored || !info.inferredParser) return text;
  const options = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(text, { ...options, filepath: file });
}

async function main() {
  const check = process.argv.includes('--check');
  const loaded = {} as Record<EdgeService, Loaded>;
  for (const s of SERVICES) loaded[s] = await loadTable(s);
  const tables = SERVICES.map((s) => loaded[s].table);
  const routing = deriveEdgeRouting(tables);
  const settings = settingsFor(loaded);

  const read = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');
  let nginx = read('deploy/nginx/nginx.conf');
  nginx = replaceBlock(nginx, 'limits', nginxLimits(settings));
  nginx = replaceBlock(nginx, 'routes', nginxRoutes(routing, settings));

  const compatRoutes: CompatRoute[] = tables.flatMap((t) =>
    t.routes
      .filter((r) => !r.hidden)
      .flatMap((r) =>
        [r.url, ...(r.aliases ?? [])].map((url) => ({
          service: t.service,
          method: r.method,
          url,
          summary: r.summary,
          compat: r.compat,
        })),
      ),
  );
  const openapi = buildOpenApi(tables, {
    title: 'Sett API',
    version: (JSON.parse(read('package.json')) as { version: string }).version,
    description:
      "PostHog-compatible API of Sett: capture and decide for SDKs (project API key), management for dashboards and servers (personal API keys). Generated from the services' route tables.",
  });

  // docs/interface.md: its endpoint table, between markers in the hand-written page.
  const interfaceDoc = replaceBlock(
    read('docs/interface.md'),
    'ROUTES',
    renderInterfaceTable(tables),
    '<!--',
  );

  const outputs: Array<[string, string]> = [
    ['packages/devstack/src/edge-routes.ts', renderDevEdgeTable(routing)],
    ['deploy/nginx/nginx.conf', nginx],
    ['deploy/caddy/Caddyfile', renderCaddyfile(routing, settings)],
    ['deploy/k8s/ingress.yaml', renderIngress(routing, settings)],
    ['docs/openapi.json', `${JSON.stringify(openapi, null, 2)}\n`],
    ['docs/interface.md', interfaceDoc],
    ['docs/compatibility.md', renderCompatibility({ routes: compatRoutes, posthog: POSTHOG_ENDPOINTS })],
    ['docs/scopes.md', renderScopes(tables, SCOPES)],
    ['docs/metrics.md', renderMetrics(metricDeclarations())],
    [
      'docs/configuration.md',
      replaceBlock(
        read('docs/configuration.md'),
        'SETTINGS',
        renderSettingsTable(),
        '<!--',
        'packages/config',
      ),
    ],
  ];
  const stale: string[] = [];
  for (const [rel, raw] of outputs) {
    const file = path.join(root, rel);
    const text = await format(file, raw);
    const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
    if (current === text) continue;
    stale.push(rel);
    if (!check) fs.writeFileSync(file, text);
  }
  if (check) {
    if (stale.length > 0) {
      process.stderr.write(
        `pnpm routes --check: stale, regenerate with \`pnpm routes\` and commit:\n  ${stale.join('\n  ')}\n`,
      );
      process.exit(1);
    }
    process.stdout.write(`pnpm routes --check: ${outputs.length} generated files up to date\n`);
  } else {
    process.stdout.write(
      stale.length > 0 ? `pnpm routes: wrote ${stale.join(', ')}\n` : 'pnpm routes: everything up to date\n',
    );
  }
}

main().catch((err: Error) => {
  process.stderr.write(`pnpm routes: ${err.message}\n`);
  process.exit(1);
});
