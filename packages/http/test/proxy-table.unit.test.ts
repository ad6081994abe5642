// The edge's routing derived from route tables: exact paths, subtrees for paths with parameters,
// the /api/ fallback to management with decide's public paths winning over it, conflicts refused
// with the declarations named, and the matcher every dev edge request goes through.
import {
  deriveEdgeRouting,
  edgeProbes,
  matchEdgeRoute,
  RouteConflictError,
  type EdgeRouting,
} from '../src/routes/proxy-table';

type Service = 'capture' | 'decide' | 'management';

/** A table as the generators see it: declarations only (handlers are never called here). */
function table(service: Service, ...urls: Array<string | [string, string[]]>) {
  return {
    service,
    routes: urls.map((u) => {
      const [url, aliases] = typeof u === 'string' ? [u, undefined] : u;
      return {
        method: 'GET' as const,
        url,
        aliases,
        summary: '',
        tag: '',
        auth: { kind: 'none' as const },
        schema: {},
        handler: () => undefined,
      };
    }),
  };
}

// Sett's tables as they stand, reduced to their paths.
const tables = [
  table('capture', '/i/v0/e/', '/e/', '/capture/', '/track/', '/batch/', '/engage/'),
  table(
    'decide',
    '/decide/',
    '/flags/',
    '/flags/definitions',
    '/api/feature_flag/local_evaluation',
    '/api/early_access_features/',
    '/api/surveys/',
    '/api/web_experiments/',
    '/api/product_tours/',
    '/array/:token/config',
    '/array/:token/config.js',
    '/static/:name',
    '/static/:version/:name',
  ),
  table(
    'management',
    '/api/users/@me/',
    ['/api/projects/:project_id/query/', ['/api/environments/:project_id/query/']],
    '/api/projects/:project_id/feature_flags/:id/remote_config',
    '/api/surveys/:id/',
    '/api/organizations/',
  ),
];

describe('deriveEdgeRouting', () => {
  let routing: EdgeRouting;
  beforeAll(() => {
    routing = deriveEdgeRouting(tables);
  });

  it('lists exact paths without their slash, subtrees for paths with parameters, and no entry for what the fallback covers', () => {
    expect(routing.routes.map((r) => `${r.match} ${r.path} ${r.service}`)).toEqual([
      'exact /api/early_access_features decide',
      'exact /api/feature_flag/local_evaluation decide',
      'exact /api/product_tours decide',
      'exact /api/surveys decide',
      'exact /api/web_experiments decide',
      'exact /batch capture',
      'exact /capture capture',
      'exact /decide decide',
      'exact /e capture',
      'exact /engage capture',
      'exact /flags decide',
      'exact /flags/definitions decide',
      'exact /i/v0/e capture',
      'exact /track capture',
      'prefix /static/ decide',
      'prefix /array/ decide',
    ]);
    expect(routing.fallback).toEqual({ prefix: '/api/', service: 'management' });
    expect(routing.routes.find((r) => r.path === '/array/')!.from).toEqual([
      '/array/:token/config',
      '/array/:token/config.js',
    ]);
  });

  it.each([
    ['/decide', 'decide'],
    ['/decide/', 'decide'],
    ['/flags/definitions/', 'decide'],
    ['/i/v0/e/', 'capture'],
    ['/batch', 'capture'],
    ['/array/phc_x/config.js', 'decide'],
    ['/static/1.2.3/array.js', 'decide'],
    ['/api/surveys/', 'decide'],
    ['/api/feature_flag/local_evaluation', 'decide'],
    // Neighbours of decide's public paths under /api/ stay with management.
    ['/api/surveys/1/', 'management'],
    ['/api/feature_flag/', 'management'],
    ['/api/projects/1/feature_flags/', 'management'],
    ['/api/', 'management'],
    ['/api', 'management'],
    ['/apix', null],
    ['/array', null],
    ['/static', null],
    ['/flags/other', null],
    ['/batches/', null],
    ['/e/extra', null],
    ['/', null],
    // Case matters at the edge, as in nginx's locations.
    ['/DECIDE/', null],
  ])('%s -> %s', (path, service) => {
    expect(matchEdgeRoute(routing, path)).toBe(service);
  });

  it('probes every entry, the fallback and near misses, each with the service that must get it', () => {
    const probes = edgeProbes(routing);
    for (const p of probes) expect(matchEdgeRoute(routing, p.path.split('?')[0]!)).toBe(p.service);
    for (const r of routing.routes)
      expect(probes.some((p) => p.service === r.service && p.path.startsWith(r.path))).toBe(true);
    expect(probes).toContainEqual({ path: '/array', service: null });
    expect(probes).toContainEqual({ path: '/api', service: 'management' });
    expect(probes.filter((p) => p.service === null).length).toBeGreaterThan(10);
  });
});

describe('conflicts are refused, naming both declarations', () => {
  const refuse = (ts: Parameters<typeof deriveEdgeRouting>[0], pattern: RegExp) => {
    let error: unknown;
    try {
      deriveEdgeRouting(ts);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RouteConflictError);
    expect((error as Error).message).toMatch(pattern);
  };

  it('the same exact path in two services (trailing slash or not)', () => {
    refuse(
      [table('capture', '/e/'), table('decide', '/e')],
      /capture '\/e\/' and decide '\/e' claim the same path/,
    );
  });

  it('a path inside another service’s subtree', () => {
    refuse(
      [table('decide', '/array/:token/config'), table('capture', '/array/batch/')],
      /decide '\/array\/:token\/config' and capture '\/array\/batch\/' claim a path under \/array\//,
    );
  });

  it('an exact path whose slashed form is another service’s subtree', () => {
    refuse([table('decide', '/static/:name'), table('capture', '/static')], /claim a path under \/static\//);
  });

  it('nested subtrees of two services', () => {
    refuse([table('decide', '/a/:x'), table('capture', '/a/b/:y')], /claim nested subtrees/);
  });

  it('a management route the fallback covers, on a path another service serves', () => {
    refuse(
      [table('decide', '/api/surveys/'), table('management', '/api/:kind/')],
      /decide '\/api\/surveys\/' and management '\/api\/:kind\/' claim the same path/,
    );
    refuse(
      [table('decide', '/api/surveys/:id/config'), table('management', '/api/surveys/:id/')],
      /claim a path under \/api\/surveys\//,
    );
  });

  it('a subtree that would take the whole fallback, or a path that starts with a parameter', () => {
    refuse([table('decide', '/:anything/x')], /starts with a parameter/);
    refuse([table('decide', '/api/:x')], /would take all of \/api\/ from management/);
  });

  it('accepts management routes outside /api/ as entries of their own', () => {
    const routing = deriveEdgeRouting([table('management', '/api/users/', '/_console/:page')]);
    expect(routing.routes).toEqual([
      { match: 'prefix', path: '/_console/', service: 'management', from: ['/_console/:page'] },
    ]);
  });

  it('refuses a table of a service the edge does not route to', () => {
    expect(() => deriveEdgeRouting([{ service: 'ingestion', routes: [] }])).toThrow(
      /ingestion has no place at the edge/,
    );
  });
});
