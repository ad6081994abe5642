// A real API client published for PostHog (@posthog/agent-toolkit, the tools behind PostHog's
// MCP server), pointed at Sett unmodified: it learns the key's scopes and projects, offers the
// tools those scopes allow, and each tool a dashboard builder uses works end to end over HTTP:
// organizations and projects, event and property discovery, flags (created with the description
// field PostHog ignores), a trends query, a saved insight, a dashboard with it on, and deletes.
import { randomUUID } from 'node:crypto';
import { PostHogAgentToolkit, type Context } from '@posthog/agent-toolkit';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;

const SCOPES = [
  'user:read',
  'organization:read',
  'project:read',
  'event_definition:read',
  'property_definition:read',
  'feature_flag:write',
  'query:read',
  'insight:write',
  'dashboard:write',
];

type KitTool = Awaited<ReturnType<PostHogAgentToolkit['getTools']>>[number];

interface Toolkit {
  context: Context;
  tools: Map<string, KitTool>;
  /** Runs a tool as an agent would: its params through its own schema, then its handler; the
   * parsed JSON it answers, as loosely typed as the tests read it. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  run(name: string, params?: Record<string, unknown>): Promise<any>;
}

async function toolkitFor(key: string): Promise<Toolkit> {
  const kit = new PostHogAgentToolkit({ posthogApiToken: key, posthogApiBaseUrl: h.url });
  const context = kit.getContext();
  const tools = new Map((await kit.getTools()).map((t) => [t.name, t]));
  return {
    context,
    tools,
    async run(name, params = {}) {
      const tool = tools.get(name);
      if (!tool) throw new Error(`the toolkit does not offer ${name}`);
      const answer = await tool.handler(context, tool.schema.parse(params));
      const text = answer.content[0].text as string;
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    },
  };
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  const at = (hour: number) => new Date(Date.now() - hour * 3_600_000).toISOString();
  for (const [did, event, hour, props] of [
    ['u1', '$pageview', 30, { $browser: 'Chrome' }],
    ['u1', 'signed_up', 29, { plan: 'pro' }],
    ['u2', '$pageview', 5, { $browser: 'Safari' }],
    ['u3', '$pageview', 2, { $browser: 'Chrome' }],
  ] as const)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, $4, $5, $6)`,
      [randomUUID(), f.teamA.id, event, did, at(hour), JSON.stringify(props)],
    );
  // What ingestion records as events arrive (services/ingestion/src/definitions).
  await h.pool.query(
    `INSERT INTO event_definitions (id, team_id, name, created_at, last_seen_at)
     VALUES (gen_random_uuid(), $1, '$pageview', now(), now()), (gen_random_uuid(), $1, 'signed_up', now(), now())`,
    [f.teamA.id],
  );
  await h.pool.query(
    `INSERT INTO property_definitions (id, team_id, name, type, property_type, is_numerical)
     VALUES (gen_random_uuid(), $1, '$browser', 1, 'String', false), (gen_random_uuid(), $1, 'plan', 1, 'String', false)`,
    [f.teamA.id],
  );
  await h.pool.query(
    `INSERT INTO event_properties (team_id, event, property) VALUES ($1, 'signed_up', 'plan'), ($1, '$pageview', '$browser')`,
    [f.teamA.id],
  );
});
afterAll(() => h.stop());

describe('a key limited to one project', () => {
  let kit: Toolkit;

  beforeAll(async () => {
    kit = await toolkitFor(await createKey(h.prisma, f.alice.id, SCOPES, { teams: [f.teamA.id] }));
  });

  it('is offered exactly the tools its scopes allow', () => {
    for (const name of [
      'create-feature-flag',
      'feature-flag-get-all',
      'update-feature-flag',
      'delete-feature-flag',
      'event-definitions-list',
      'properties-list',
      'query-run',
      'insight-create-from-query',
      'insights-get-all',
      'insight-get',
      'dashboard-create',
      'dashboard-get',
      'add-insight-to-dashboard',
      'projects-get',
    ])
      expect(kit.tools.has(name)).toBe(true);
    // Scopes the key lacks (and Sett does not serve): not offered.
    for (const name of ['experiment-get-all', 'list-errors', 'surveys-get-all'])
      expect(kit.tools.has(name)).toBe(false);
  });

  it('works in the project the key is limited to', async () => {
    expect(await kit.context.stateManager.getProjectId()).toBe(String(f.teamA.id));
  });

  it('discovers events and their properties', async () => {
    const events = await kit.run('event-definitions-list', {});
    expect(events.map((e: { name: string }) => e.name).sort()).toEqual(['$pageview', 'signed_up']);
    const props = await kit.run('properties-list', { type: 'event', eventName: 'signed_up' });
    expect(props.map((p: { name: string }) => p.name)).toEqual(['plan']);
  });

  it('creates, lists, updates and deletes a flag', async () => {
    const created = await kit.run('create-feature-flag', {
      name: 'New checkout',
      key: 'new-checkout',
      description: 'the redesigned checkout',
      filters: { groups: [{ properties: [], rollout_percentage: 50 }] },
      active: true,
      tags: [],
    });
    expect(created).toMatchObject({ key: 'new-checkout', active: true });
    const all = await kit.run('feature-flag-get-all');
    expect(all.map((flag: { key: string }) => flag.key)).toContain('new-checkout');
    const updated = await kit.run('update-feature-flag', {
      flagKey: 'new-checkout',
      data: { active: false },
    });
    expect(updated.active).toBe(false);
    expect(await kit.run('delete-feature-flag', { flagKey: 'new-checkout' })).toMatchObject({
      success: true,
    });
    const flags = await call(h, 'GET', `/api/projects/${f.teamA.id}/feature_flags/`, await openKey());
    expect(flags.body.results.map((flag: { key: string }) => flag.key)).not.toContain('new-checkout');
  });

  it('runs a trend and a funnel, saves both as insights on a new dashboard, and reads it back with results', async () => {
    const source = {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: '$pageview', math: 'total', custom_name: 'Pageviews' }],
      dateRange: { date_from: '-7d' },
      interval: 'day',
      trendsFilter: { display: 'ActionsLineGraph' },
    };
    const results = await kit.run('query-run', { query: { kind: 'InsightVizNode', source } });
    expect(results[0].count).toBe(3);
    const funnelQuery = {
      kind: 'InsightVizNode',
      source: {
        kind: 'FunnelsQuery',
        series: [
          { kind: 'EventsNode', event: '$pageview', custom_name: 'Viewed' },
          { kind: 'EventsNode', event: 'signed_up', custom_name: 'Signed up' },
        ],
        dateRange: { date_from: '-7d' },
        funnelsFilter: {},
      },
    };
    const funnel = await kit.run('query-run', { query: funnelQuery });
    expect(funnel.map((step: { count: number }) => step.count)).toEqual([3, 1]);

    const insight = await kit.run('insight-create-from-query', {
      data: { name: 'Pageviews', query: { kind: 'InsightVizNode', source }, favorited: false },
    });
    expect(insight.short_id).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(await kit.run('insight-get', { insightId: insight.short_id })).toMatchObject({
      id: insight.id,
      name: 'Pageviews',
    });
    const funnelInsight = await kit.run('insight-create-from-query', {
      data: { name: 'Signup funnel', query: funnelQuery, favorited: true },
    });
    const listed = await kit.run('insights-get-all', {});
    expect(listed.map((i: { id: number }) => i.id)).toEqual(
      expect.arrayContaining([insight.id, funnelInsight.id]),
    );

    const dashboard = await kit.run('dashboard-create', { data: { name: 'Traffic', pinned: true } });
    expect(dashboard).toMatchObject({ name: 'Traffic' });
    for (const saved of [insight, funnelInsight])
      await kit.run('add-insight-to-dashboard', {
        data: { insightId: String(saved.id), dashboardId: dashboard.id },
      });
    // Read back as the client reads it (no refresh). The tool keeps only some fields of each
    // tile; the answer on the wire has each insight with its result, from the cache its save
    // warmed.
    const got = await kit.run('dashboard-get', { dashboardId: dashboard.id });
    expect(got.tiles).toHaveLength(2);
    expect(got.tiles[0].insight).toMatchObject({ short_id: insight.short_id, name: 'Pageviews' });
    expect(got.tiles[1].insight.name).toBe('Signup funnel');
    const wire = await call(
      h,
      'GET',
      `/api/projects/${f.teamA.id}/dashboards/${dashboard.id}/`,
      await openKey(),
    );
    expect(wire.body.tiles[0].insight.result[0].count).toBe(3);
    expect(wire.body.tiles[1].insight.result.map((step: { count: number }) => step.count)).toEqual([3, 1]);
    expect(wire.body.tiles.map((t: { is_cached: boolean }) => t.is_cached)).toEqual([true, true]);

    expect(await kit.run('insight-delete', { insightId: String(insight.id) })).toMatchObject({
      success: true,
    });
    expect(await kit.run('dashboard-delete', { dashboardId: dashboard.id })).toMatchObject({
      success: true,
    });
    const gone = await call(
      h,
      'GET',
      `/api/projects/${f.teamA.id}/dashboards/${dashboard.id}/`,
      await openKey(),
    );
    expect(gone.status).toBe(404);
  });

  it('cannot reach another project, whatever the client asks', async () => {
    await kit.context.cache.set('projectId', String(f.teamA2.id));
    try {
      await expect(kit.run('feature-flag-get-all')).rejects.toThrow(/Forbidden/);
    } finally {
      await kit.context.cache.set('projectId', String(f.teamA.id));
    }
  });
});

describe('a key for the whole organization', () => {
  it("lists the organization's projects and switches between them", async () => {
    const kit = await toolkitFor(await createKey(h.prisma, f.alice.id, SCOPES));
    const projects = await kit.run('projects-get');
    expect(projects.map((p: { id: number }) => p.id).sort()).toEqual([f.teamA.id, f.teamA2.id].sort());
    const orgs = await kit.run('organizations-get');
    expect(orgs.map((o: { id: string }) => o.id)).toContain(f.orgA.id);
    await kit.run('switch-project', { projectId: f.teamA2.id });
    expect(await kit.run('feature-flag-get-all')).toEqual([]);
  });
});

describe('what Sett does not serve', () => {
  it("answers 404 naming PostHog's endpoint, and 405 for a hard delete PostHog refuses too", async () => {
    const key = await openKey();
    const r = await call(h, 'GET', `/api/projects/${f.teamA.id}/experiments/`, key);
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ type: 'invalid_request', code: 'not_found' });
    expect(r.body.detail).toMatch(
      /^GET \/api\/projects\/\{project_id\}\/experiments\/… is PostHog's "Experiments"/,
    );
    const unknown = await call(h, 'GET', `/api/projects/${f.teamA.id}/no_such_thing/`, key);
    expect(unknown.body.detail).toBe('Not found.');
    const hard = await call(h, 'DELETE', `/api/projects/${f.teamA.id}/insights/1/`, key);
    expect(hard.status).toBe(405);
  });
});

describe('a key without the scopes', () => {
  it('is offered no tools that need them', async () => {
    const kit = await toolkitFor(await createKey(h.prisma, f.alice.id, ['feature_flag:read']));
    expect([...kit.tools.keys()].sort()).toEqual(['feature-flag-get-all', 'feature-flag-get-definition']);
  });
});

let open: string | undefined;
async function openKey() {
  open ??= await createKey(h.prisma, f.alice.id, ['feature_flag:read', 'dashboard:read']);
  return open;
}
