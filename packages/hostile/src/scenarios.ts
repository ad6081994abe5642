// Abuse scenarios: what one request cannot show. Each is a named sequence of requests against
// the running services with a claim about the whole (who got 429, what a list links to, how far
// capture's memory went), run after the single-request corpus. They keep the defects of the
// abuse-resistance review fixed: throttles that a spoofed X-Forwarded-For could dodge or aim at
// a victim, unknown keys costing a query each, flag keys named like Object.prototype members,
// scopes of the person and event lists, page links built from Host, credentialed CORS, gzip
// bombs in parallel, and one tenant's regular expressions stalling every tenant.
//
// Requests are sent from chosen loopback addresses (127.0.0.x) so each scenario's client has an
// address of its own, whatever the corpus did from 127.0.0.1 before.
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM } from '@sett/flags';
import { UNKNOWN_KEY_LIMIT } from '@sett/keys';
import type { CaseClass } from './corpus';
import { buildHogqlScenarios } from './hogql-scenarios';
import { buildQueryScenarios } from './query-scenarios';
import { bearer, check, json, p99, parse, send, unknownKey, type Answer } from './scenario-kit';

export interface ScenarioContext {
  urls: { capture: string; decide: string; management: string };
  capturePid: number;
  /** The services' database: scenarios that need a volume of events write them directly. */
  databaseUrl: string;
  /** Tenant A: an organization's owner (personal key with every scope), its project and token. */
  personalKey: string;
  organizationId: string;
  /** Tenant B: another organization, its owner's key, its project and token. */
  otherPersonalKey: string;
  otherProjectId: number;
  otherToken: string;
  /** Tenant C: a third organization's owner key and project (the bystander of the query scenarios). */
  thirdPersonalKey: string;
  thirdProjectId: number;
}

export interface Scenario {
  name: string;
  cls: CaseClass;
  /** Throws an Error saying what went wrong. */
  run(ctx: ScenarioContext): Promise<void>;
}

/** A project of tenant A's organization with its token, for a scenario to fill. */
export async function newProject(ctx: ScenarioContext, name: string): Promise<{ id: number; token: string }> {
  const res = await send(ctx.urls.management, {
    method: 'POST',
    path: '/api/projects/',
    headers: { ...json, ...bearer(ctx.personalKey) },
    body: JSON.stringify({ name, organization: ctx.organizationId }),
  });
  check(res.status === 201, `creating a project: ${res.status} ${res.body.slice(0, 200)}`);
  const project = parse(res) as { id: number; api_token: string };
  return { id: project.id, token: project.api_token };
}

async function createFlag(
  ctx: ScenarioContext,
  projectId: number,
  key: string,
  filters: unknown,
): Promise<Answer> {
  return send(ctx.urls.management, {
    method: 'POST',
    path: `/api/projects/${projectId}/feature_flags/`,
    headers: { ...json, ...bearer(ctx.personalKey) },
    body: JSON.stringify({ key, filters }),
  });
}

const everyone = { groups: [{ properties: [], rollout_percentage: 100 }] };

// ---- unknown keys and the trusted-proxy rule ----------------------------------------------------

const localEvaluation = (token: string) => `/api/feature_flag/local_evaluation/?token=${token}`;

const throttleDodge: Scenario = {
  name: 'auth decide: rotating X-Forwarded-For does not dodge the unknown-key throttle',
  cls: 'auth',
  async run(ctx) {
    const statuses: number[] = [];
    for (let i = 0; i < UNKNOWN_KEY_LIMIT + 5; i++) {
      const res = await send(ctx.urls.decide, {
        path: localEvaluation(ctx.otherToken),
        headers: { ...bearer(unknownKey()), 'x-forwarded-for': `198.51.100.${i}` },
        from: '127.0.0.21',
      });
      statuses.push(res.status);
    }
    check(
      statuses.slice(UNKNOWN_KEY_LIMIT).every((s) => s === 429),
      `past ${UNKNOWN_KEY_LIMIT} unknown keys from one address, got ${statuses.slice(UNKNOWN_KEY_LIMIT)} instead of 429s`,
    );
  },
};

const spoofedLockout: Scenario = {
  name: "auth decide: unknown keys 'from' a spoofed address do not lock that address's valid key out",
  cls: 'auth',
  async run(ctx) {
    for (let i = 0; i <= UNKNOWN_KEY_LIMIT; i++)
      await send(ctx.urls.decide, {
        path: localEvaluation(ctx.otherToken),
        headers: { ...bearer(unknownKey()), 'x-forwarded-for': '203.0.113.77' },
        from: '127.0.0.22',
      });
    const victim = await send(ctx.urls.decide, {
      path: localEvaluation(ctx.otherToken),
      headers: { ...bearer(ctx.otherPersonalKey), 'x-forwarded-for': '203.0.113.77' },
      from: '127.0.0.23',
    });
    check(victim.status === 200, `the victim's valid key got ${victim.status}: ${victim.body.slice(0, 200)}`);
  },
};

const validKeyOnProbation: Scenario = {
  name: 'auth decide: a valid key is served from an address over the unknown-key limit',
  cls: 'auth',
  async run(ctx) {
    for (let i = 0; i <= UNKNOWN_KEY_LIMIT; i++)
      await send(ctx.urls.decide, {
        path: localEvaluation(ctx.otherToken),
        headers: bearer(unknownKey()),
        from: '127.0.0.24',
      });
    const guess = await send(ctx.urls.decide, {
      path: localEvaluation(ctx.otherToken),
      headers: bearer(unknownKey()),
      from: '127.0.0.24',
    });
    check(
      guess.status === 429 && /^\d+$/.test(String(guess.headers['retry-after'])),
      `a guess got ${guess.status}`,
    );
    const valid = await send(ctx.urls.decide, {
      path: localEvaluation(ctx.otherToken),
      headers: bearer(ctx.otherPersonalKey),
      from: '127.0.0.24',
    });
    check(valid.status === 200, `the valid key got ${valid.status}: ${valid.body.slice(0, 200)}`);
  },
};

const managementUnknownKeys: Scenario = {
  name: 'auth management: unknown personal keys are throttled per address, never a valid key',
  cls: 'auth',
  async run(ctx) {
    const statuses: number[] = [];
    for (let i = 0; i < UNKNOWN_KEY_LIMIT + 5; i++) {
      const res = await send(ctx.urls.management, {
        path: '/api/projects/',
        headers: { ...bearer(unknownKey()), 'x-forwarded-for': `198.51.100.${i}` },
        from: '127.0.0.25',
      });
      statuses.push(res.status);
    }
    check(
      statuses.slice(0, UNKNOWN_KEY_LIMIT).every((s) => s === 401) &&
        statuses.slice(UNKNOWN_KEY_LIMIT).every((s) => s === 429),
      `expected ${UNKNOWN_KEY_LIMIT} x 401 then 429s, got ${statuses}`,
    );
    const valid = await send(ctx.urls.management, {
      path: '/api/users/@me/',
      headers: bearer(ctx.otherPersonalKey),
      from: '127.0.0.25',
    });
    check(valid.status === 200, `the valid key from the throttled address got ${valid.status}`);
    const other = await send(ctx.urls.management, {
      path: '/api/projects/',
      headers: { ...bearer(unknownKey()), 'x-forwarded-for': '127.0.0.25' },
      from: '127.0.0.26',
    });
    check(other.status === 401, `another address got ${other.status} for an unknown key`);
  },
};

// ---- keys named like Object.prototype members ---------------------------------------------------

const PROTO_KEYS = ['__proto__', 'constructor', 'toString'];

const protoFlags: Scenario = {
  name: 'flags: flags keyed __proto__, constructor, toString are served by /flags, /decide and local evaluation',
  cls: 'flags',
  async run(ctx) {
    const project = await newProject(ctx, 'hostile proto flags');
    for (const key of [...PROTO_KEYS, 'ordinary']) {
      const res = await createFlag(ctx, project.id, key, everyone);
      check(res.status === 201, `creating flag ${key}: ${res.status} ${res.body.slice(0, 200)}`);
    }
    const expected = [...PROTO_KEYS, 'ordinary'].sort();
    const keysOf = (o: unknown) => Object.keys(o as object).sort();
    const body = JSON.stringify({ api_key: project.token, distinct_id: 'proto-user' });
    const flags = parse(
      await send(ctx.urls.decide, { method: 'POST', path: '/flags/?v=2', headers: json, body }),
    );
    check(
      JSON.stringify(keysOf(flags.flags)) === JSON.stringify(expected),
      `/flags?v=2 served ${keysOf(flags.flags)}`,
    );
    const v3 = parse(
      await send(ctx.urls.decide, { method: 'POST', path: '/decide/?v=3', headers: json, body }),
    );
    check(
      JSON.stringify(keysOf(v3.featureFlags)) === JSON.stringify(expected),
      `/decide?v=3 served ${keysOf(v3.featureFlags)}`,
    );
    const local = parse(
      await send(ctx.urls.decide, { path: localEvaluation(project.token), headers: bearer(ctx.personalKey) }),
    ) as { flags: { key: string }[] };
    check(
      JSON.stringify(local.flags.map((f) => f.key).sort()) === JSON.stringify(expected),
      `local evaluation listed ${local.flags.map((f) => f.key)}`,
    );
  },
};

const protoHedgehog: Scenario = {
  name: 'types management: a hedgehog_config PATCH answers what it stored, without a __proto__ key',
  cls: 'types',
  async run(ctx) {
    const res = await send(ctx.urls.management, {
      method: 'PATCH',
      path: '/api/users/@me/hedgehog_config/',
      headers: { ...json, ...bearer(ctx.otherPersonalKey) },
      body: '{"color":"blue","__proto__":{"polluted":true}}',
    });
    check(res.status === 200, `PATCH got ${res.status}`);
    const stored = await send(ctx.urls.management, {
      path: '/api/users/@me/hedgehog_config/',
      headers: bearer(ctx.otherPersonalKey),
    });
    check(!res.body.includes('__proto__'), `the answer echoes __proto__: ${res.body.slice(0, 200)}`);
    check(
      JSON.stringify(parse(res)) === JSON.stringify(parse(stored)),
      `answered ${res.body.slice(0, 200)} but stored ${stored.body.slice(0, 200)}`,
    );
  },
};

// ---- scopes, page links, CORS -------------------------------------------------------------------

const listScopes: Scenario = {
  name: 'auth management: a project:read key cannot list persons or events',
  cls: 'auth',
  async run(ctx) {
    const created = await send(ctx.urls.management, {
      method: 'POST',
      path: '/api/personal_api_keys/',
      headers: { ...json, ...bearer(ctx.otherPersonalKey) },
      body: JSON.stringify({ label: 'metadata only', scopes: ['project:read'] }),
    });
    check(created.status === 201, `creating a project:read key: ${created.status}`);
    const key = String(parse(created).value);
    for (const [path, scope] of [
      [`/api/projects/${ctx.otherProjectId}/persons/`, 'person:read'],
      [`/api/projects/${ctx.otherProjectId}/events/`, 'query:read'],
    ] as const) {
      const res = await send(ctx.urls.management, { path, headers: bearer(key) });
      check(
        res.status === 403 && res.body.includes(scope),
        `${path} with project:read: ${res.status} ${res.body}`,
      );
    }
    const project = await send(ctx.urls.management, {
      path: `/api/projects/${ctx.otherProjectId}/`,
      headers: bearer(key),
    });
    check(project.status === 200, `the project itself with project:read: ${project.status}`);
  },
};

const pageLinks: Scenario = {
  name: 'paths management: page links are not built from Host or X-Forwarded-Host',
  cls: 'paths',
  async run(ctx) {
    const spoof = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
    for (const path of ['/api/users/?limit=1', `/api/projects/?limit=1`, '/api/schema/']) {
      const res = await send(ctx.urls.management, {
        path,
        headers: { ...spoof, ...bearer(ctx.personalKey) },
      });
      check(res.status === 200, `${path}: ${res.status}`);
      check(!res.body.includes('evil.example'), `${path} answered with a link to evil.example`);
    }
  },
};

const cors: Scenario = {
  name: 'paths: capture and decide allow any origin without credentials; local evaluation sends no CORS',
  cls: 'paths',
  async run(ctx) {
    const origin = { origin: 'https://evil.example' };
    const event = JSON.stringify({ api_key: ctx.otherToken, event: 'cors', distinct_id: 'cors-user' });
    const answers = {
      'capture POST': await send(ctx.urls.capture, {
        method: 'POST',
        path: '/e/',
        headers: { ...json, ...origin },
        body: event,
      }),
      'capture preflight': await send(ctx.urls.capture, {
        method: 'OPTIONS',
        path: '/e/',
        headers: { ...origin, 'access-control-request-method': 'POST' },
      }),
      'decide POST': await send(ctx.urls.decide, {
        method: 'POST',
        path: '/flags/?v=2',
        headers: { ...json, ...origin },
        body: JSON.stringify({ api_key: ctx.otherToken, distinct_id: 'cors-user' }),
      }),
      'decide preflight': await send(ctx.urls.decide, {
        method: 'OPTIONS',
        path: '/flags/?v=2',
        headers: { ...origin, 'access-control-request-method': 'POST' },
      }),
    };
    for (const [what, res] of Object.entries(answers)) {
      check(
        res.headers['access-control-allow-origin'] === 'https://evil.example',
        `${what}: no Allow-Origin`,
      );
      check(res.headers['access-control-allow-credentials'] === undefined, `${what} allows credentials`);
    }
    for (const key of [ctx.otherPersonalKey, unknownKey()]) {
      const res = await send(ctx.urls.decide, {
        path: localEvaluation(ctx.otherToken),
        headers: { ...origin, ...bearer(key) },
        from: '127.0.0.27',
      });
      const corsHeaders = Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));
      check(corsHeaders.length === 0, `local evaluation ${res.status} carries ${corsHeaders}`);
    }
  },
};

// ---- decompression ------------------------------------------------------------------------------

const BOMBS = 40;
const MB = 1024 * 1024;

/** Peak resident memory of a process since the last reset, in kB; resets it first when asked. */
function peakRssKb(pid: number, reset = false): number {
  if (reset) writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

const gzipBombs: Scenario = {
  name: `bomb capture: ${BOMBS} concurrent gzip bombs at the decompressed cap keep RSS under 1 GB, events flowing`,
  cls: 'bomb',
  async run(ctx) {
    // 20 MB of valid JSON (capture's default decompressed cap), about 20 KB of gzip.
    const head = `{"api_key":${JSON.stringify(ctx.otherToken)},"event":"bomb","distinct_id":"b","properties":{"p":"`;
    const tail = '"}}';
    const bomb = gzipSync(
      Buffer.concat([
        Buffer.from(head),
        Buffer.alloc(20 * MB - head.length - tail.length, 'a'),
        Buffer.from(tail),
      ]),
      { level: 9 },
    );
    peakRssKb(ctx.capturePid, true);
    let done = false;
    const bombs = Promise.all(
      Array.from({ length: BOMBS }, () =>
        send(ctx.urls.capture, {
          method: 'POST',
          path: '/e/',
          headers: { 'content-encoding': 'gzip' },
          body: bomb,
        }),
      ),
    ).finally(() => (done = true));
    const ordinary: Answer[] = [];
    while (!done || ordinary.length < 5) {
      ordinary.push(
        await send(ctx.urls.capture, {
          method: 'POST',
          path: '/e/',
          headers: json,
          body: JSON.stringify({ api_key: ctx.otherToken, event: 'ordinary', distinct_id: randomUUID() }),
        }),
      );
    }
    const answers = await bombs;
    const peak = peakRssKb(ctx.capturePid);
    const statuses = answers.map((a) => a.status);
    check(
      statuses.every((s) => s === 413 || s === 503),
      `bombs got ${statuses}`,
    );
    check(statuses.includes(503), `no bomb was turned away by the budget: ${statuses}`);
    check(
      ordinary.every((o) => o.status === 200),
      `ordinary events got ${ordinary.map((o) => o.status)}`,
    );
    check(peak < 1024 * 1024, `capture's RSS peaked at ${Math.round(peak / 1024)} MB`);
  },
};

// ---- regular expressions of one tenant, latency of another ---------------------------------------

/** Distinct patterns at the limits, each as costly to compile or run as the limits allow. */
function largestPatterns(tag: string): string[] {
  const words: string[] = [];
  while (words.join('|').length < MAX_REGEX_LENGTH - 40) words.push(`${tag}w${words.length}\\.example\\.com`);
  const alternation = `@(?:${words.slice(0, -1).join('|')})$`;
  const literal = `(?i)${tag}${'x'.repeat(MAX_REGEX_PROGRAM - 16 - tag.length)}`;
  // No literal prefix: the matcher cannot skip ahead, every position of the value runs it.
  const repeats = `${'.{999}'.repeat(Math.floor((MAX_REGEX_PROGRAM - 60) / 1000))}${tag}`;
  // Each Unicode property class is costly to build: as many as the estimate lets through.
  const properties = `${tag}${'\\pL'.repeat(Math.floor((2 * MAX_REGEX_PROGRAM - 100) / 65))}`;
  return [alternation, literal, repeats, properties];
}

const regexTenants: Scenario = {
  name: "flags: one tenant's largest regexes add under 50 ms to another tenant's p99; a 749 KB regex is refused",
  cls: 'flags',
  async run(ctx) {
    const project = await newProject(ctx, 'hostile regex tenant');
    const huge = await createFlag(ctx, project.id, 'huge-regex', {
      groups: [
        {
          properties: [
            { key: 'email', type: 'person', operator: 'regex', value: 'abcdefghij'.repeat(76_700) },
          ],
        },
      ],
    });
    check(
      huge.status === 400 && parse(huge).attr === 'filters' && huge.body.includes('email'),
      `a 749 KB regex got ${huge.status}: ${huge.body.slice(0, 200)}`,
    );

    // Tenant B: its own reads, one after another, timed: alone (the machine's own p99), while
    // tenant A does the same work with small patterns (the cost of saving and evaluating flags
    // at all), and while tenant A works with the largest patterns (the claim).
    const tenantB = async (phase: (() => Promise<void>) | number): Promise<number[]> => {
      const latencies: number[] = [];
      let done = false;
      const flagsBody = JSON.stringify({ api_key: ctx.otherToken, distinct_id: 'tenant-b' });
      const reads = (async () => {
        while (typeof phase === 'number' ? latencies.length < phase : !done) {
          const me = await send(ctx.urls.management, {
            path: '/api/users/@me/',
            headers: bearer(ctx.otherPersonalKey),
          });
          const flags = await send(ctx.urls.decide, {
            method: 'POST',
            path: '/flags/?v=2',
            headers: json,
            body: flagsBody,
          });
          check(me.status === 200 && flags.status === 200, `tenant B got ${me.status} and ${flags.status}`);
          latencies.push(me.ms, flags.ms);
        }
      })();
      if (typeof phase !== 'number')
        await phase().finally(() => {
          done = true;
        });
      await reads;
      return latencies;
    };

    // Tenant A: saves flags with four new patterns per round and evaluates them against
    // kilobyte values, three rounds.
    const tenantA = (patternsOf: (tag: string) => string[], label: string) => async () => {
      for (let round = 0; round < 3; round++) {
        const patterns = patternsOf(`r${round}t${randomUUID().slice(0, 6)}`);
        for (const [i, pattern] of patterns.entries()) {
          const res = await createFlag(ctx, project.id, `${label}-${round}-${i}`, {
            groups: [
              {
                properties: [{ key: 'email', type: 'person', operator: 'regex', value: pattern }],
                rollout_percentage: 100,
              },
            ],
          });
          check(res.status === 201, `pattern ${i} was refused: ${res.status} ${res.body.slice(0, 300)}`);
        }
        for (let k = 0; k < 10; k++) {
          const res = await send(ctx.urls.decide, {
            method: 'POST',
            path: '/flags/?v=2',
            headers: json,
            body: JSON.stringify({
              api_key: project.token,
              distinct_id: `tenant-a-${k}`,
              person_properties: { email: `${'é'.repeat(500)}${'a'.repeat(500)}@example.com` },
            }),
          });
          check(res.status === 200, `tenant A's evaluation got ${res.status}`);
        }
      }
    };
    const small = (tag: string) => [0, 1, 2, 3].map((i) => `^${tag}${i}[a-z.]+@example\\.com$`);

    // The longest event-loop stall of decide and management over a phase (prom-client's
    // nodejs_eventloop_lag_max_seconds, reset by every scrape), to tell their stalls from the
    // machine's own noise.
    const stalls = async (): Promise<string> => {
      const parts: string[] = [];
      for (const [name, url] of [
        ['decide', ctx.urls.decide],
        ['management', ctx.urls.management],
      ] as const) {
        const metrics = (await send(url, { path: '/_metrics' })).body;
        const max = /^nodejs_eventloop_lag_max_seconds\S* ([\d.e+-]+)$/m.exec(metrics)?.[1];
        parts.push(`${name} ${max === undefined ? '?' : (Number(max) * 1000).toFixed(0)} ms`);
      }
      return parts.join(', ');
    };

    const alone = p99(await tenantB(100));
    await stalls();
    const attempt = async (n: number) => {
      const control = p99(await tenantB(tenantA(small, `small${n}`)));
      const controlStalls = await stalls();
      const during = await tenantB(tenantA(largestPatterns, `largest${n}`));
      const duringStalls = await stalls();
      return { control, controlStalls, during, duringStalls, worst: p99(during) };
    };
    const describe = (a: Awaited<ReturnType<typeof attempt>>) =>
      `tenant B's p99 was ${a.worst.toFixed(1)} ms over ${a.during.length} requests (alone ${alone.toFixed(1)} ms, ` +
      `with small patterns ${a.control.toFixed(1)} ms); longest stalls ${a.duringStalls} ` +
      `(with small patterns ${a.controlStalls})`;
    // The claim is the cost to tenant B of A's largest patterns: its p99 over what the same work
    // with small patterns gives, on this machine at this moment (a loaded machine slows both
    // phases alike). A p99 of about a hundred requests is their worst one or two, so one stall of
    // a neighbour process in one phase and not the other decides it: a miss is measured once
    // more, with new patterns, and both measurements are printed if that one misses too.
    const attempts = [await attempt(1)];
    if (attempts[0]!.worst - attempts[0]!.control >= 50) attempts.push(await attempt(2));
    const last = attempts[attempts.length - 1]!;
    check(last.during.length >= 20, `tenant B made only ${last.during.length} requests`);
    check(last.worst - last.control < 50, attempts.map(describe).join('; measured again: '));
  },
};

export function buildScenarios(): Scenario[] {
  return [
    throttleDodge,
    spoofedLockout,
    validKeyOnProbation,
    managementUnknownKeys,
    protoFlags,
    protoHedgehog,
    listScopes,
    pageLinks,
    cors,
    regexTenants,
    gzipBombs,
    ...buildQueryScenarios(),
    ...buildHogqlScenarios(),
  ];
}
