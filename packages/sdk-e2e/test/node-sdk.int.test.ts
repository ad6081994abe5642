// posthog-node, unmodified, against the edge that `pnpm start` brings up: the current release
// (5.70.0, local evaluation through GET /flags/definitions) and the 4.11 line (local evaluation
// through GET /api/feature_flag/local_evaluation/). With a personal API key, every flag of
// every kind evaluated locally for hundreds of distinct ids must equal the remote answer of
// /flags for the same inputs, the local pass must make no /flags call, and no request may fail.
// Events captured with the SDK must reach Postgres.
import { PostHog } from 'posthog-node';
import { PostHog as PostHog4 } from 'posthog-node-4';
import {
  GROUP_TYPE,
  addCohortMembers,
  cohortSubjects,
  createCohortCatalogue,
  createFlag,
  createPersonCatalogue,
  createRecorder,
  describeRequest,
  api,
  flagValue,
  getCohort,
  groupFlag,
  inPayingCohort,
  payingFilters,
  remoteAnswer,
  removeCohortMember,
  startSettStack,
  storedEvents,
  subjects,
  waitFor,
  type Catalogue,
  type CohortCatalogue,
  type CohortSubject,
  type Recorder,
  type SettStack,
  type Subject,
} from '../src';

jest.setTimeout(240_000);

type Value = string | boolean | undefined;
/** The calls both SDK majors have in common, as this test uses them. */
interface NodeClient {
  getFeatureFlag(key: string, distinctId: string, options?: Record<string, unknown>): Promise<unknown>;
  getAllFlagsAndPayloads(
    distinctId: string,
    options?: Record<string, unknown>,
  ): Promise<{ featureFlags: Record<string, unknown>; featureFlagPayloads: Record<string, unknown> }>;
  shutdown(timeoutMs?: number): Promise<void>;
}

const DEFINITIONS = /^\/flags\/definitions\/?$|^\/api\/feature_flag\/local_evaluation\/?$/;
const REMOTE_FLAGS = /^\/(flags|decide)\/?$/;

/** Failed requests for flag definitions, described in full. */
function definitionFailures(rec: Recorder): string[] {
  return rec
    .failures()
    .filter((r) => DEFINITIONS.test(r.path))
    .map(describeRequest);
}

async function inChunks<T>(items: T[], size: number, run: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}

function optionsFor(s: Subject, onlyEvaluateLocally: boolean): Record<string, unknown> {
  return {
    personProperties: s.personProperties,
    groups: s.groups,
    groupProperties: s.groupProperties,
    onlyEvaluateLocally,
    sendFeatureFlagEvents: false,
  };
}

/**
 * Whether a local answer agrees with the remote one. Two differences are the SDKs' own, and each
 * must look exactly as described:
 * - /flags leaves an inactive flag out (remote: undefined), the definitions list it (local: false);
 * - posthog-node evaluates no `super_groups` (early access enrolment), neither 4.x nor 5.x: the
 *   definitions carry them as PostHog's do, so an enrolled person is true remotely and false
 *   locally, with PostHog as with Sett (PostHog/posthog#20040).
 */
function agree(key: string, local: unknown, remote: unknown, subject: Subject, betaKey: string): boolean {
  if (key.endsWith('-inactive')) return local === false && (remote === false || remote === undefined);
  if (key === betaKey && subject.personProperties[`$feature_enrollment/${betaKey}`] === 'true')
    return local === false && remote === true;
  return local !== undefined && local === remote;
}

/** Disagreements grouped by call and flag: how many ids, and the first few examples. */
class Mismatches {
  private byWhat = new Map<string, string[]>();
  add(what: string, example: string) {
    const list = this.byWhat.get(what) ?? [];
    list.push(example);
    this.byWhat.set(what, list);
  }
  summary(): string[] {
    return [...this.byWhat].map(
      ([what, list]) => `${what}: ${list.length} ids differ, e.g. ${list.slice(0, 3).join('; ')}`,
    );
  }
}

/**
 * Local (personal key, onlyEvaluateLocally) and remote (no personal key: /flags only) answers for
 * every subject and key; returns the disagreements and the local values seen per key.
 */
async function compare(
  local: NodeClient,
  remote: NodeClient,
  keys: string[],
  people: Subject[],
  localRecorder: Recorder,
  betaKey: string,
): Promise<{ mismatches: string[]; seen: Map<string, Set<string>>; localFlagsCalls: number }> {
  const mismatches = new Mismatches();
  const seen = new Map<string, Set<string>>(keys.map((k) => [k, new Set<string>()]));
  const localAnswers = new Map<string, Value[]>();
  const localAll = new Map<string, Awaited<ReturnType<NodeClient['getAllFlagsAndPayloads']>>>();
  const flagsBefore = localRecorder.count(REMOTE_FLAGS);
  // The local pass first, on its own, so any /flags request it makes is its own.
  await inChunks(people, 20, async (s) => {
    const values: Value[] = [];
    for (const key of keys)
      values.push((await local.getFeatureFlag(key, s.distinctId, optionsFor(s, true))) as Value);
    localAnswers.set(s.distinctId, values);
    localAll.set(
      s.distinctId,
      await (local as unknown as NodeClient).getAllFlagsAndPayloads(s.distinctId, optionsFor(s, true)),
    );
  });
  const localFlagsCalls = localRecorder.count(REMOTE_FLAGS) - flagsBefore;
  await inChunks(people, 10, async (s) => {
    const values = localAnswers.get(s.distinctId)!;
    for (const [i, key] of keys.entries()) {
      const l = values[i];
      const r = (await remote.getFeatureFlag(key, s.distinctId, optionsFor(s, false))) as Value;
      seen.get(key)!.add(String(l));
      if (!agree(key, l, r, s, betaKey))
        mismatches.add(`getFeatureFlag ${key}`, `${s.distinctId} local=${l} remote=${r}`);
    }
    const la = localAll.get(s.distinctId)!;
    const ra = await (remote as unknown as NodeClient).getAllFlagsAndPayloads(
      s.distinctId,
      optionsFor(s, false),
    );
    for (const key of keys) {
      const [l, r] = [la.featureFlags[key], ra.featureFlags[key]];
      if (!agree(key, l, r, s, betaKey))
        mismatches.add(`getAllFlags ${key}`, `${s.distinctId} local=${l} remote=${r}`);
      const lp = JSON.stringify(la.featureFlagPayloads[key]);
      const rp = JSON.stringify(ra.featureFlagPayloads[key]);
      if (lp !== rp) mismatches.add(`payload ${key}`, `${s.distinctId} local=${lp} remote=${rp}`);
    }
  });
  return { mismatches: mismatches.summary(), seen, localFlagsCalls };
}

describe('posthog-node against the edge of `pnpm start`', () => {
  let stack: SettStack;
  let catalogue: Catalogue;
  let keys: string[];

  beforeAll(async () => {
    // posthog-node 5 warns on every getFeatureFlag/getAllFlags call that they are deprecated in
    // favour of evaluateFlags; the old calls are what most code uses, so they are what is tested.
    const warn = console.warn.bind(console);
    jest.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
      if (typeof args[0] === 'string' && / is deprecated and will be removed/.test(args[0])) return;
      warn(...args);
    });
    stack = await startSettStack();
    // The group type comes from an event, as in a real project: a $groupidentify sent by the SDK.
    const setup = new PostHog(stack.projectKey, { host: stack.edgeUrl, flushAt: 1, flushInterval: 0 });
    setup.groupIdentify({ groupType: GROUP_TYPE, groupKey: 'company-0', properties: { tier: 'premium' } });
    await setup.shutdown(10_000);
    await waitFor(
      `group type "${GROUP_TYPE}" created by ingestion`,
      async () =>
        (
          await stack.pool.query('SELECT 1 FROM group_type_mappings WHERE team_id = $1 AND group_type = $2', [
            stack.projectId,
            GROUP_TYPE,
          ])
        ).rowCount === 1,
      30_000,
      () => stack.output(),
    );
    catalogue = await createPersonCatalogue(stack, 'e2e');
    keys = [...catalogue.keys, (await createFlag(stack, groupFlag('e2e'))).key];
  });

  afterAll(async () => {
    await stack?.stop();
  });

  describe('posthog-node 5.70.0 (current)', () => {
    it('captures, identifies and group-identifies into Postgres', async () => {
      const rec = createRecorder();
      const client = new PostHog(stack.projectKey, {
        host: stack.edgeUrl,
        fetch: rec.fetch,
        flushAt: 50,
        flushInterval: 0,
      });
      client.capture({ distinctId: 'node5-a', event: 'node signup', properties: { plan: 'pro' } });
      client.capture({
        distinctId: 'node5-a',
        event: 'node purchase',
        properties: { amount: 12 },
        groups: { [GROUP_TYPE]: 'company-1' },
      });
      client.identify({ distinctId: 'node5-a', properties: { email: 'a@corp.example' } });
      client.groupIdentify({ groupType: GROUP_TYPE, groupKey: 'company-1', properties: { tier: 'basic' } });
      await client.shutdown(10_000);
      const rows = await waitFor(
        'the posthog-node 5 events in Postgres',
        async () => {
          const r = await storedEvents(stack, ['node5-a'], ['node signup', 'node purchase', '$identify']);
          return r.length >= 3 ? r : undefined;
        },
        30_000,
      );
      expect(rows.map((r) => r.event).sort()).toEqual(['$identify', 'node purchase', 'node signup']);
      const grouped = await stack.pool.query<{ group_0: string | null }>(
        `SELECT group_0 FROM events WHERE team_id = $1 AND event = 'node purchase'`,
        [stack.projectId],
      );
      expect(grouped.rows).toEqual([{ group_0: 'company-1' }]);
      expect(rows.find((r) => r.event === 'node signup')!.properties).toMatchObject({
        plan: 'pro',
        $lib: 'posthog-node',
      });
      expect(rec.failures().map(describeRequest)).toEqual([]);
    });
  });

  describe('posthog-node 5.70.0 (current), local evaluation with a personal API key', () => {
    const localRec = createRecorder();
    const remoteRec = createRecorder();
    let local: PostHog;
    let remote: PostHog;
    let people: Subject[];

    beforeAll(() => {
      local = new PostHog(stack.projectKey, {
        host: stack.edgeUrl,
        personalApiKey: stack.personalKey,
        // Short, so the test also sees the conditional re-polls (If-None-Match -> 304).
        featureFlagsPollingInterval: 1000,
        fetch: localRec.fetch,
        flushInterval: 0,
      });
      // No personal key: every answer comes from /flags.
      remote = new PostHog(stack.projectKey, {
        host: stack.edgeUrl,
        fetch: remoteRec.fetch,
        flushInterval: 0,
      });
      people = subjects('n5', 300, catalogue.betaKey);
    });

    afterAll(async () => {
      await local?.shutdown(5000);
      await remote?.shutdown(5000);
    });

    it('loads the definitions from GET /flags/definitions', async () => {
      const ready = await local.waitForLocalEvaluationReady(15_000);
      expect({ ready, failed: definitionFailures(localRec) }).toEqual({ ready: true, failed: [] });
      expect(localRec.count(/^\/flags\/definitions\/?$/)).toBeGreaterThanOrEqual(1);
    });

    it('getFeatureFlag / getAllFlagsAndPayloads: local equals /flags for 300 ids, no /flags call', async () => {
      const result = await compare(
        local as unknown as NodeClient,
        remote as unknown as NodeClient,
        keys,
        people,
        localRec,
        catalogue.betaKey,
      );
      expect(result.mismatches).toEqual([]);
      expect(result.localFlagsCalls).toBe(0);
      // The comparison means something only if the answers vary.
      const seen = (key: string) => [...result.seen.get(key)!].sort();
      expect(seen('e2e-rollout')).toEqual(['false', 'true']);
      expect(seen('e2e-multivariate')).toEqual(['control', 'false', 'other', 'test']);
      expect(seen('e2e-person')).toEqual(['false', 'true']);
      expect(seen('e2e-override')).toEqual(['alpha', 'beta', 'false']);
      expect(seen('e2e-group')).toEqual(['false', 'true']);
      // Locally always false (no super_groups in the SDK); agree() checks remote is true when enrolled.
      expect(seen(catalogue.betaKey)).toEqual(['false']);
      expect(seen('e2e-inactive')).toEqual(['false']);
    });

    it('evaluateFlags: the local snapshot equals the remote one, no /flags call', async () => {
      const mismatches = new Mismatches();
      const before = localRec.count(REMOTE_FLAGS);
      await inChunks(people, 10, async (s) => {
        const l = await local.evaluateFlags(s.distinctId, optionsFor(s, true));
        const r = await remote.evaluateFlags(s.distinctId, optionsFor(s, false));
        for (const key of keys) {
          const [lv, rv] = [
            l.getFlag(key, { sendFeatureFlagEvents: false }),
            r.getFlag(key, { sendFeatureFlagEvents: false }),
          ];
          if (!agree(key, lv, rv, s, catalogue.betaKey))
            mismatches.add(`getFlag ${key}`, `${s.distinctId} local=${lv} remote=${rv}`);
          const [lp, rp] = [JSON.stringify(l.getFlagPayload(key)), JSON.stringify(r.getFlagPayload(key))];
          if (lp !== rp) mismatches.add(`getFlagPayload ${key}`, `${s.distinctId} local=${lp} remote=${rp}`);
        }
      });
      expect(mismatches.summary()).toEqual([]);
      expect(localRec.count(REMOTE_FLAGS) - before).toBe(0);
    });

    it('re-polls the definitions with If-None-Match and gets 304 while nothing changed', async () => {
      await waitFor(
        'a 304 answer to a definitions poll',
        async () => localRec.requests.some((r) => DEFINITIONS.test(r.path) && r.status === 304),
        10_000,
        () =>
          localRec.requests
            .filter((r) => DEFINITIONS.test(r.path))
            .map((r) => `${r.method} ${r.url} => ${r.status}`)
            .join('\n'),
      );
    });

    it('made no failed request', () => {
      expect(localRec.failures().map(describeRequest)).toEqual([]);
      expect(remoteRec.failures().map(describeRequest)).toEqual([]);
      expect(remoteRec.count(REMOTE_FLAGS)).toBeGreaterThan(300);
    });
  });

  describe('posthog-node 4.11.7', () => {
    it('captures into Postgres and evaluates locally as /flags does (60 ids)', async () => {
      const localRec = createRecorder();
      const remoteRec = createRecorder();
      const local = new PostHog4(stack.projectKey, {
        host: stack.edgeUrl,
        personalApiKey: stack.personalKey,
        featureFlagsPollingInterval: 60_000,
        fetch: localRec.fetch,
        flushAt: 50,
        flushInterval: 0,
      });
      const remote = new PostHog4(stack.projectKey, {
        host: stack.edgeUrl,
        fetch: remoteRec.fetch,
        flushInterval: 0,
      });
      try {
        local.capture({ distinctId: 'node4-a', event: 'node4 event', properties: { v: 4 } });
        await local.flush();
        await local.reloadFeatureFlags();
        expect(localRec.count(/^\/api\/feature_flag\/local_evaluation\/?$/)).toBeGreaterThanOrEqual(1);
        expect(definitionFailures(localRec)).toEqual([]);
        const people = subjects('n4', 60, catalogue.betaKey);
        const result = await compare(
          local as unknown as NodeClient,
          remote as unknown as NodeClient,
          keys,
          people,
          localRec,
          catalogue.betaKey,
        );
        expect(result.mismatches).toEqual([]);
        expect(result.localFlagsCalls).toBe(0);
        expect([...result.seen.get('e2e-multivariate')!].sort()).toEqual([
          'control',
          'false',
          'other',
          'test',
        ]);
        // posthog-node 4 queues capture() asynchronously, so the flush() above can run before
        // the event is queued; shutdown() sends whatever is left.
        await local.shutdown(5000);
        await waitFor(
          'the posthog-node 4 event in Postgres',
          async () => (await storedEvents(stack, ['node4-a'], ['node4 event'])).length === 1,
          30_000,
          async () =>
            localRec.requests
              .filter((r) => !DEFINITIONS.test(r.path))
              .map((r) => `${r.method} ${r.url} => ${r.status}`)
              .join('\n'),
        );
      } finally {
        await local.shutdown(5000);
        await remote.shutdown(5000);
      }
      expect(localRec.failures().map(describeRequest)).toEqual([]);
      expect(remoteRec.failures().map(describeRequest)).toEqual([]);
    });
  });
  describe('posthog-node 5.70.0 (current): cohorts and flag dependencies', () => {
    const localRec = createRecorder();
    const remoteRec = createRecorder();
    /** The bodies of the /flags requests the local client sent (posthog-node's remote fallback). */
    const localFlagsBodies: Array<Record<string, unknown>> = [];
    let local: PostHog;
    let remote: PostHog;
    let cc: CohortCatalogue;
    let people: CohortSubject[];
    const SUBJECTS = 300;

    const opts = (s: CohortSubject, onlyEvaluateLocally: boolean) => ({
      personProperties: s.personProperties,
      onlyEvaluateLocally,
      sendFeatureFlagEvents: false,
    });

    beforeAll(async () => {
      people = cohortSubjects('c5', SUBJECTS);
      // every 7th subject is listed in the static cohort
      const members = people.filter((s) => s.index % 7 === 0).map((s) => s.distinctId);
      cc = await createCohortCatalogue(stack, 'c5', members);
      local = new PostHog(stack.projectKey, {
        host: stack.edgeUrl,
        personalApiKey: stack.personalKey,
        featureFlagsPollingInterval: 60_000,
        fetch: (url: string, options: RequestInit & { body?: unknown }) => {
          if (/^\/flags\/?$/.test(new URL(url).pathname) && typeof options.body === 'string')
            localFlagsBodies.push(JSON.parse(options.body) as Record<string, unknown>);
          return localRec.fetch(url, options);
        },
        flushInterval: 0,
      });
      remote = new PostHog(stack.projectKey, {
        host: stack.edgeUrl,
        fetch: remoteRec.fetch,
        flushInterval: 0,
      });
      expect(await local.waitForLocalEvaluationReady(15_000)).toBe(true);
    });

    afterAll(async () => {
      await local?.shutdown(5000);
      await remote?.shutdown(5000);
    });

    it('the static cohort counts its members', async () => {
      expect(cc.listed.is_static).toBe(true);
      expect((await getCohort(stack, cc.listed.id)).count).toBe(cc.staticMembers.length);
    });

    it('the definitions carry the property cohorts (not the static one) and dependency chains', async () => {
      const res = await fetch(`${stack.edgeUrl}/flags/definitions?token=${stack.projectKey}&send_cohorts`, {
        headers: { authorization: `Bearer ${stack.personalKey}` },
      });
      const text = await res.text();
      expect({ status: res.status, text: res.status === 200 ? '' : text }).toEqual({ status: 200, text: '' });
      const body = JSON.parse(text) as {
        flags: Array<{
          key: string;
          filters: { groups: Array<{ properties: Array<Record<string, unknown>> }> };
        }>;
        cohorts: Record<string, unknown>;
      };
      expect(Object.keys(body.cohorts).sort()).toEqual(
        expect.arrayContaining([String(cc.paying.id), String(cc.payingInGbUs.id)]),
      );
      expect(body.cohorts[String(cc.listed.id)]).toBeUndefined();
      const byKey = new Map(body.flags.map((f) => [f.key, f]));
      const onVariant = byKey.get(cc.flag.dependsOnVariant)!.filters.groups[0]!.properties[0]!;
      expect(onVariant).toMatchObject({ type: 'flag', key: cc.flag.multivariate, value: 'test' });
      expect(onVariant.dependency_chain).toEqual(expect.arrayContaining([cc.flag.multivariate]));
      const chained = byKey.get(cc.flag.dependsOnBoolean)!.filters.groups[1]!.properties[0]!;
      expect(chained).toMatchObject({ type: 'flag', key: cc.flag.dependsOnVariant, value: false });
      expect(chained.dependency_chain).toEqual(
        expect.arrayContaining([cc.flag.multivariate, cc.flag.dependsOnVariant]),
      );
      // the static cohort's flag is served as stored: the SDK finds no such cohort and asks /flags
      expect(byKey.get(cc.flag.static)!.filters.groups[0]!.properties[0]).toMatchObject({
        type: 'cohort',
        value: cc.listed.id,
      });
    });

    it(`local evaluation equals /flags, /decide?v=4 and posthog-node's remote answer for ${SUBJECTS} ids`, async () => {
      const mismatches = new Mismatches();
      const seen = new Map<string, Set<string>>(cc.localKeys.map((k) => [k, new Set<string>()]));
      const before = localRec.count(REMOTE_FLAGS);
      const localValues = new Map<string, Value[]>();
      await inChunks(people, 20, async (s) => {
        const values: Value[] = [];
        for (const key of cc.localKeys)
          values.push((await local.getFeatureFlag(key, s.distinctId, opts(s, true))) as Value);
        localValues.set(s.distinctId, values);
      });
      expect(localRec.count(REMOTE_FLAGS) - before).toBe(0);
      const allKeys = [...cc.localKeys, cc.staticKey];
      await inChunks(people, 10, async (s) => {
        const body = { distinct_id: s.distinctId, person_properties: s.personProperties };
        const [flags, decide] = await Promise.all([
          remoteAnswer(stack, '/flags/?v=2', body),
          remoteAnswer(stack, '/decide/?v=4', body),
        ]);
        for (const [name, r] of [
          ['/flags', flags],
          ['/decide', decide],
        ] as const) {
          if (r.status !== 200 || r.answer.errorsWhileComputingFlags)
            mismatches.add(`${name} answer`, `${s.distinctId} ${r.status} ${r.text.slice(0, 300)}`);
          const missing = allKeys.filter((k) => !(k in r.answer.flags));
          if (missing.length) mismatches.add(`${name} leaves out`, `${s.distinctId}: ${missing.join(',')}`);
        }
        for (const [i, key] of cc.localKeys.entries()) {
          const l = localValues.get(s.distinctId)![i];
          const r = (await remote.getFeatureFlag(key, s.distinctId, opts(s, false))) as Value;
          const f = flagValue(flags.answer, key);
          const d = flagValue(decide.answer, key);
          seen.get(key)!.add(String(l));
          if (l === undefined || l !== r || l !== f || l !== d)
            mismatches.add(key, `${s.distinctId} local=${l} sdk-remote=${r} /flags=${f} /decide=${d}`);
        }
        // the oracle: PostHog's meaning of the cohort, computed here
        const expected = inPayingCohort(s.personProperties);
        if (flagValue(flags.answer, cc.flag.cohort) !== expected)
          mismatches.add('cohort oracle', `${s.distinctId} expected ${expected}`);
        if (flagValue(flags.answer, cc.flag.notIn) !== !expected)
          mismatches.add('not_in oracle', `${s.distinctId} expected ${!expected}`);
        const mv = flagValue(flags.answer, cc.flag.multivariate);
        if (flagValue(flags.answer, cc.flag.dependsOnVariant) !== (mv === 'test'))
          mismatches.add('variant dependency oracle', `${s.distinctId} mv=${mv}`);
      });
      expect(mismatches.summary()).toEqual([]);
      const values = (key: string) => [...seen.get(key)!].sort();
      for (const key of [
        cc.flag.cohort,
        cc.flag.nested,
        cc.flag.notIn,
        cc.flag.dependsOnVariant,
        cc.flag.dependsOnBoolean,
      ])
        expect([key, values(key)]).toEqual([key, ['false', 'true']]);
      expect(values(cc.flag.multivariate)).toEqual(['control', 'false', 'other', 'test']);
    });

    it('the static-cohort flag: not answered locally; with remote fallback one /flags call for that flag only', async () => {
      const mismatches = new Mismatches();
      const before = localRec.count(REMOTE_FLAGS);
      await inChunks(people, 20, async (s) => {
        const l = await local.getFeatureFlag(cc.staticKey, s.distinctId, opts(s, true));
        if (l !== undefined) mismatches.add('onlyEvaluateLocally', `${s.distinctId} local=${String(l)}`);
      });
      expect(localRec.count(REMOTE_FLAGS) - before).toBe(0);

      localFlagsBodies.splice(0);
      const fallbackBefore = localRec.count(REMOTE_FLAGS);
      const seen = new Set<string>();
      await inChunks(people, 10, async (s) => {
        // the other cohort flags stay local even without onlyEvaluateLocally
        for (const key of cc.localKeys) await local.getFeatureFlag(key, s.distinctId, opts(s, false));
        const l = await local.getFeatureFlag(cc.staticKey, s.distinctId, opts(s, false));
        const r = await remote.getFeatureFlag(cc.staticKey, s.distinctId, opts(s, false));
        const listed = s.index % 7 === 0;
        seen.add(String(l));
        if (l !== r || l !== listed)
          mismatches.add(
            'fallback',
            `${s.distinctId} local=${String(l)} remote=${String(r)} listed=${listed}`,
          );
        const lp = await local.getFeatureFlagPayload(cc.staticKey, s.distinctId, undefined, opts(s, false));
        const rp = await remote.getFeatureFlagPayload(cc.staticKey, s.distinctId, undefined, opts(s, false));
        if (JSON.stringify(lp) !== JSON.stringify(rp))
          mismatches.add(
            'payload',
            `${s.distinctId} local=${JSON.stringify(lp)} remote=${JSON.stringify(rp)}`,
          );
      });
      expect(mismatches.summary()).toEqual([]);
      expect([...seen].sort()).toEqual(['false', 'true']);
      // one /flags call per getFeatureFlag and per getFeatureFlagPayload of the static flag, none for the others
      expect(localRec.count(REMOTE_FLAGS) - fallbackBefore).toBe(2 * SUBJECTS);
      const asked = new Set(localFlagsBodies.map((b) => JSON.stringify(b.flag_keys_to_evaluate)));
      expect([...asked]).toEqual([JSON.stringify([cc.staticKey])]);
    });

    it('getAllFlagsAndPayloads: locally without the static flag; with fallback, one /flags call equal to remote', async () => {
      const mismatches = new Mismatches();
      const sample = people.slice(0, 60);
      const before = localRec.count(REMOTE_FLAGS);
      await inChunks(sample, 10, async (s) => {
        const l = await (local as unknown as NodeClient).getAllFlagsAndPayloads(s.distinctId, opts(s, true));
        const r = await (remote as unknown as NodeClient).getAllFlagsAndPayloads(
          s.distinctId,
          opts(s, false),
        );
        if (cc.staticKey in l.featureFlags)
          mismatches.add('local static', `${s.distinctId} ${String(l.featureFlags[cc.staticKey])}`);
        for (const key of cc.localKeys)
          if (l.featureFlags[key] !== r.featureFlags[key])
            mismatches.add(
              `local ${key}`,
              `${s.distinctId} local=${String(l.featureFlags[key])} remote=${String(r.featureFlags[key])}`,
            );
      });
      expect(localRec.count(REMOTE_FLAGS) - before).toBe(0);
      const fallbackBefore = localRec.count(REMOTE_FLAGS);
      await inChunks(sample, 10, async (s) => {
        const l = await (local as unknown as NodeClient).getAllFlagsAndPayloads(s.distinctId, opts(s, false));
        const r = await (remote as unknown as NodeClient).getAllFlagsAndPayloads(
          s.distinctId,
          opts(s, false),
        );
        for (const key of [...cc.localKeys, cc.staticKey]) {
          if (l.featureFlags[key] !== r.featureFlags[key])
            mismatches.add(
              `fallback ${key}`,
              `${s.distinctId} local=${String(l.featureFlags[key])} remote=${String(r.featureFlags[key])}`,
            );
          const [lp, rp] = [
            JSON.stringify(l.featureFlagPayloads[key]),
            JSON.stringify(r.featureFlagPayloads[key]),
          ];
          if (lp !== rp)
            mismatches.add(`fallback payload ${key}`, `${s.distinctId} local=${lp} remote=${rp}`);
        }
        if (l.featureFlags[cc.staticKey] !== (s.index % 7 === 0))
          mismatches.add('static membership', `${s.distinctId} ${String(l.featureFlags[cc.staticKey])}`);
      });
      expect(mismatches.summary()).toEqual([]);
      // posthog-node asks /flags once per call when any flag is unresolved locally
      expect(localRec.count(REMOTE_FLAGS) - fallbackBefore).toBe(sample.length);
    });

    // decide caches a distinct id's memberships as it caches stored persons (DECIDE_PERSON_CACHE_TTL_MS,
    // 5 s by default): a change shows within that, so the waits allow 20 s.
    it('membership changes reach decide: a member added, then removed', async () => {
      const s = people[1]!; // not a member (1 % 7 !== 0)
      const answer = async () => {
        const r = await remoteAnswer(stack, '/flags/?v=2', {
          distinct_id: s.distinctId,
          person_properties: s.personProperties,
        });
        return r.status === 200 && !r.answer.errorsWhileComputingFlags
          ? flagValue(r.answer, cc.staticKey)
          : 'error';
      };
      expect(await answer()).toBe(false);
      expect((await addCohortMembers(stack, cc.listed.id, [s.distinctId])).count).toBe(
        cc.staticMembers.length + 1,
      );
      await waitFor('the added member to get the static flag', async () => (await answer()) === true, 20_000);
      expect(await local.getFeatureFlag(cc.staticKey, s.distinctId, opts(s, false))).toBe(true);
      expect((await removeCohortMember(stack, cc.listed.id, s.distinctId)).count).toBe(
        cc.staticMembers.length,
      );
      await waitFor(
        'the removed member to lose the static flag',
        async () => (await answer()) === false,
        20_000,
      );
      expect(await local.getFeatureFlag(cc.staticKey, s.distinctId, opts(s, false))).toBe(false);
    });

    it('a property cohort edited: /flags and, after a re-poll, local evaluation follow it', async () => {
      await api(stack, 'PATCH', `/api/projects/${stack.projectId}/cohorts/${cc.paying.id}/`, {
        filters: payingFilters(40),
      });
      // a subject whose answer flips: 40 <= age < 70, neither paying nor a "3" address
      const s = people.find(
        (p) => !inPayingCohort(p.personProperties, 70) && inPayingCohort(p.personProperties, 40),
      )!;
      const remoteValue = async () =>
        flagValue(
          (
            await remoteAnswer(stack, '/flags/?v=2', {
              distinct_id: s.distinctId,
              person_properties: s.personProperties,
            })
          ).answer,
          cc.flag.cohort,
        );
      await waitFor('/flags to follow the edited cohort', async () => (await remoteValue()) === true, 10_000);
      await waitFor(
        'local evaluation to follow the edited cohort',
        async () => {
          await local.reloadFeatureFlags();
          return (await local.getFeatureFlag(cc.flag.cohort, s.distinctId, opts(s, true))) === true;
        },
        10_000,
      );
      const mismatches = new Mismatches();
      await inChunks(people, 10, async (p) => {
        const r = await remoteAnswer(stack, '/flags/?v=2', {
          distinct_id: p.distinctId,
          person_properties: p.personProperties,
        });
        for (const key of cc.localKeys) {
          const l = (await local.getFeatureFlag(key, p.distinctId, opts(p, true))) as Value;
          if (l !== flagValue(r.answer, key))
            mismatches.add(key, `${p.distinctId} local=${l} /flags=${flagValue(r.answer, key)}`);
        }
        if (flagValue(r.answer, cc.flag.cohort) !== inPayingCohort(p.personProperties, 40))
          mismatches.add('cohort oracle (age >= 40)', p.distinctId);
      });
      expect(mismatches.summary()).toEqual([]);
    });

    it('made no failed request', () => {
      expect(localRec.failures().map(describeRequest)).toEqual([]);
      expect(remoteRec.failures().map(describeRequest)).toEqual([]);
    });
  });
});
