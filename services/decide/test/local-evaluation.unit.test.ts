import { prepareProjectFlags } from '../src/flags/flag-definitions';
import type { Pool } from 'pg';
import { RateLimitedError } from '@sett/http';
import { hashProjectSecretKey, UNKNOWN_KEY_LIMIT } from '@sett/keys';
import { authorize, createKeyVerifier, parseKeyHeader } from '../src/local-evaluation/local-evaluation-auth';
import {
  buildLocalEvaluationBody,
  createLocalEvaluationBodies,
  etagMatches,
} from '../src/local-evaluation/local-evaluation-body';

const project = { teamId: 7, organizationId: 'org-1' };
const KEY = `phx_${'a'.repeat(40)}`;
const SECRET = `phs_${'b'.repeat(43)}`;

describe('parseKeyHeader', () => {
  it('tells personal from secret keys and refuses anything else with 401', () => {
    expect(parseKeyHeader(`Bearer ${KEY}`)).toEqual({ kind: 'personal', value: KEY });
    expect(parseKeyHeader(`bearer ${SECRET} `)).toEqual({ kind: 'secret', value: SECRET });
    for (const header of [
      undefined,
      '',
      KEY,
      `Basic ${KEY}`,
      'Bearer phc_abcdefghijklmnopqrstuvwxyz',
      'Bearer phx_short',
    ]) {
      expect(() => parseKeyHeader(header)).toThrow(expect.objectContaining({ status: 401 }));
    }
  });
});

describe('authorize', () => {
  it('needs feature_flag:read (or write, or *) and membership of the organization', () => {
    const personal = (scopes: string[], orgs = ['org-1']) => ({
      kind: 'personal' as const,
      scopes,
      organizationIds: new Set(orgs),
    });
    expect(() => authorize(personal(['feature_flag:read']), project)).not.toThrow();
    expect(() => authorize(personal(['feature_flag:write']), project)).not.toThrow();
    expect(() => authorize(personal(['*']), project)).not.toThrow();
    expect(() => authorize(personal(['project:read']), project)).toThrow(
      expect.objectContaining({ status: 403 }),
    );
    expect(() => authorize(personal(['*'], ['org-2']), project)).toThrow(
      expect.objectContaining({ status: 403 }),
    );
  });

  it('takes a secret key for its own project only', () => {
    expect(() => authorize({ kind: 'secret', teamId: 7 }, project)).not.toThrow();
    expect(() => authorize({ kind: 'secret', teamId: 8 }, project)).toThrow(
      expect.objectContaining({ status: 403 }),
    );
  });
});

describe('etagMatches', () => {
  it('compares weakly, in lists and with *', () => {
    expect(etagMatches('"a"', '"a"')).toBe(true);
    expect(etagMatches('W/"a"', '"a"')).toBe(true);
    expect(etagMatches('"b", W/"a"', '"a"')).toBe(true);
    expect(etagMatches('*', '"a"')).toBe(true);
    expect(etagMatches(undefined, '"a"')).toBe(false);
    expect(etagMatches('"b"', '"a"')).toBe(false);
    expect(etagMatches('a', '"a"')).toBe(false);
  });
});

describe('local evaluation body', () => {
  const raw = [
    { id: 1, team_id: 7, key: 'on', filters: { groups: [{ rollout_percentage: 100 }] } },
    { id: 2, team_id: 7, key: 'off', active: false, filters: { groups: [] } },
    { id: 3, team_id: 7, key: 'remote', is_remote_configuration: true, filters: { payloads: { true: '1' } } },
    {
      id: 4,
      team_id: 7,
      key: 'sealed',
      has_encrypted_payloads: true,
      filters: { payloads: { true: 'v1:x' } },
    },
    { id: 5, team_id: 7, key: 'gone', deleted: true, filters: {} },
  ];

  it('sends inactive flags, leaves out remote configuration and deleted ones, redacts encrypted payloads', () => {
    const flags = prepareProjectFlags(7, raw, { 0: 'company' });
    expect(flags.flags.map((f) => f.key)).toEqual(['on', 'sealed']);
    const body = JSON.parse(buildLocalEvaluationBody(flags, {}).bytes.toString());
    expect(body.flags.map((f: { key: string }) => f.key)).toEqual(['on', 'off', 'sealed']);
    expect(body.flags[2].filters.payloads).toEqual({ true: '"********* (encrypted)"' });
    expect(body.group_type_mapping).toEqual({ '0': 'company' });
    expect(body.cohorts).toEqual({});
  });

  it('is built once per flag list object and cohort mode; equal content, equal ETag', () => {
    let cohortLoads = 0;
    const bodies = createLocalEvaluationBodies(() => {
      cohortLoads++;
      return { '12': { type: 'OR', values: [] } };
    });
    const a = prepareProjectFlags(7, raw, {});
    expect(bodies(a, true)).toBe(bodies(a, true));
    expect(bodies(a, false)).toBe(bodies(a, false));
    expect(cohortLoads).toBe(1);
    expect(JSON.parse(bodies(a, true).bytes.toString()).cohorts).toEqual({
      '12': { type: 'OR', values: [] },
    });
    const b = prepareProjectFlags(7, raw, {});
    expect(bodies(b, false)).not.toBe(bodies(a, false));
    expect(bodies(b, false).etag).toBe(bodies(a, false).etag);
    const changed = prepareProjectFlags(7, [{ ...raw[0], version: 2 }], {});
    expect(bodies(changed, false).etag).not.toBe(bodies(a, false).etag);
  });
});

describe('key verifier', () => {
  // A stand-in for pg's Pool: knows one secret key hash, counts queries.
  function fakePool(knownHash: string) {
    let queries = 0;
    const pool = {
      query: async (_sql: string, params: unknown[]) => {
        queries++;
        return { rows: params[0] === knownHash ? [{ id: 7 }] : [] };
      },
    };
    return { pool: pool as unknown as Pool, queries: () => queries };
  }
  const race = <T>(p: Promise<T>) => p;
  const secret = (value: string) => ({ kind: 'secret' as const, value });

  it('refuses a client that keeps presenting unknown keys with 429, but never a valid key', async () => {
    const good = `phs_${'g'.repeat(43)}`;
    const fake = fakePool(hashProjectSecretKey(good));
    const verifier = createKeyVerifier({ pool: fake.pool, ttlMs: 60_000 });
    for (let i = 0; i < UNKNOWN_KEY_LIMIT; i++)
      expect(
        await verifier.verify(secret(`phs_${String(i).padStart(43, 'x')}`), race, '10.0.0.1'),
      ).toBeNull();
    await expect(verifier.verify(secret(`phs_${'z'.repeat(43)}`), race, '10.0.0.1')).rejects.toBeInstanceOf(
      RateLimitedError,
    );
    // A repeated unknown key costs no query (remembered), and answers 429 too.
    const before = fake.queries();
    await expect(verifier.verify(secret(`phs_${'z'.repeat(43)}`), race, '10.0.0.1')).rejects.toBeInstanceOf(
      RateLimitedError,
    );
    expect(fake.queries()).toBe(before);
    // A valid key never seen before is looked up and served; other clients are not affected.
    expect(await verifier.verify(secret(good), race, '10.0.0.1')).toEqual({ kind: 'secret', teamId: 7 });
    expect(await verifier.verify(secret(`phs_${'y'.repeat(43)}`), race, '10.0.0.2')).toBeNull();
  });
});
