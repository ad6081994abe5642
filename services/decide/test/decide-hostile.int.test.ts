// Hostile requests over real HTTP: the public key is in every web page, so any body may come.
// Malformed keys are refused before any Redis or Postgres lookup, odd distinct ids and
// properties never reach Postgres as they are, nothing is a 500, and a flag with a regex that is
// catastrophic for a backtracking engine costs other requests nothing.
import { createProject, insertFlag, insertPerson, post, startHarness, type Harness } from './support';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

const needsPlan = {
  groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro' }], rollout_percentage: 100 }],
};

function hasControlChar(args: unknown[]): boolean {
  return JSON.stringify(args).match(/\\u00[01][0-9a-f]|\\u007f/i) !== null;
}

describe('api_key shape', () => {
  it('refuses malformed keys with 401 invalid_api_key before any lookup', async () => {
    const p = await createProject(h);
    const redisGet = jest.spyOn(h.redis, 'get');
    const pgQuery = jest.spyOn(h.pool, 'query');
    try {
      for (const key of [
        `${p.token}\u0000`,
        'phc_\u0000abc',
        'phc_a\u0001b',
        'phc_a\u007fb',
        'phc_a b',
        `phc_${'a'.repeat(61)}`,
        'phc_é',
      ]) {
        const res = await post(h.url, '/decide/?v=4', { api_key: key, distinct_id: 'x' });
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ code: 'invalid_api_key', attr: null });
      }
      expect(redisGet).not.toHaveBeenCalled();
      expect(pgQuery).not.toHaveBeenCalled();
      // A non-string key is no key.
      const numeric = await post(h.url, '/flags/?v=2', { api_key: 12345, distinct_id: 'x' });
      expect(numeric.status).toBe(401);
      // The real key (64 characters at most, printable ASCII) still works.
      const ok = await post(h.url, '/decide/?v=4', { api_key: ` ${p.token} `, distinct_id: 'x' });
      expect(ok.status).toBe(200);
    } finally {
      redisGet.mockRestore();
      pgQuery.mockRestore();
    }
  });
});

describe('distinct ids and properties', () => {
  it('looks persons up by the id ingestion stored: NUL as U+FFFD, 200 characters at most', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, { key: 'needs-plan', filters: needsPlan });
    const long = `L${'x'.repeat(300_000)}`;
    await insertPerson(h.pool, p.teamId, ['nul\ufffdid'], { plan: 'pro' });
    await insertPerson(h.pool, p.teamId, [long.slice(0, 200)], { plan: 'pro' });
    const pgQuery = jest.spyOn(h.pool, 'query');
    try {
      for (const distinctId of ['nul\u0000id', long]) {
        const res = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: distinctId });
        expect(res.status).toBe(200);
        expect(res.body.errorsWhileComputingFlags).toBe(false);
        expect(res.body.flags['needs-plan'].enabled).toBe(true);
      }
      expect(pgQuery).toHaveBeenCalled();
      for (const call of pgQuery.mock.calls) expect(hasControlChar(call)).toBe(false);
      for (const call of pgQuery.mock.calls) expect(JSON.stringify(call).length).toBeLessThan(10_000);
    } finally {
      pgQuery.mockRestore();
    }
  });

  it('never answers 500, whatever the body', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, { key: 'needs-plan', filters: needsPlan });
    await insertFlag(h.pool, p.teamId, {
      key: 'company-flag',
      filters: {
        aggregation_group_type_index: 0,
        groups: [{ properties: [{ key: 'size', type: 'group', group_type_index: 0, value: 'big' }] }],
      },
    });
    await h.pool.query(
      "INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, 'company', 0)",
      [p.teamId],
    );
    // 10,000 levels: more than JSON.stringify can write, so sent as text.
    const deep = `${'{"d":'.repeat(10_000)}"leaf"${'}'.repeat(10_000)}`;
    const withRaw = (field: string, json: string) =>
      `{"api_key":"${p.token}","distinct_id":"hostile","${field}":${json}}`;
    let deepArray: unknown = [];
    for (let i = 0; i < 100; i++) deepArray = [deepArray];
    const base = { api_key: p.token, distinct_id: 'hostile' };
    const bodies: Array<[unknown, number[]]> = [
      [{ ...base, distinct_id: '\u0000' }, [200]],
      [{ ...base, distinct_id: 'a\ud800b' }, [200]],
      [{ ...base, distinct_id: 1e308 }, [200]],
      [{ ...base, distinct_id: {} }, [400]],
      [{ ...base, distinct_id: [] }, [400]],
      [{ ...base, distinct_id: true }, [400]],
      // String() of a deep array recurses through Array#join: it must be refused before.
      [withRaw('distinct_id', `${'['.repeat(100_000)}${']'.repeat(100_000)}`), [400]],
      [{ ...base, $anon_distinct_id: '\u0000' }, [200]],
      [{ ...base, $anon_distinct_id: { a: 1 } }, [400]],
      [{ ...base, person_properties: { plan: 'pro\u0000', '\u0000': '\u0000' } }, [200]],
      [withRaw('person_properties', `{"plan":${deep}}`), [400]],
      [{ ...base, person_properties: { plan: deepArray } }, [400]],
      [{ ...base, person_properties: 'pro' }, [400]],
      [{ ...base, person_properties: [] }, [400]],
      [{ ...base, groups: { company: '\u0000' } }, [200]],
      [{ ...base, groups: { company: 'x'.repeat(100_000) } }, [200]],
      [{ ...base, groups: { company: 7, other: -0 } }, [200]],
      [{ ...base, groups: { company: { key: 'a' } } }, [400]],
      [{ ...base, groups: { company: null } }, [400]],
      [{ ...base, groups: ['company'] }, [400]],
      [{ ...base, groups: 'company' }, [400]],
      [
        JSON.parse(`{"api_key":"${p.token}","distinct_id":"x","groups":{"__proto__":"a","constructor":"b"}}`),
        [200],
      ],
      [withRaw('group_properties', `{"company":${deep}}`), [400]],
      [{ ...base, group_properties: { company: 'big' } }, [400]],
      [{ ...base, group_properties: { __proto__: { size: 'big' } } }, [200]],
      [{ ...base, disable_flags: 'yes' }, [400]],
      [[base], [400, 401]],
      ['"just a string"', [400, 401]],
      ['null', [400, 401]],
      ['12', [400, 401]],
    ];
    for (const [body, allowed] of bodies) {
      const res = await post(h.url, '/decide/?v=4', body);
      if (!allowed.includes(res.status))
        throw new Error(`${res.status} for ${JSON.stringify(body).slice(0, 200)}`);
      if (res.status === 200) expect(res.body.errorsWhileComputingFlags).toBe(false);
    }
  });
});

describe('a catastrophic regex', () => {
  it('is evaluated in linear time: the answer is right and other projects are not held up', async () => {
    const slow = await createProject(h);
    await insertFlag(h.pool, slow.teamId, {
      key: 'redos',
      filters: {
        groups: [
          {
            properties: [{ key: 'email', type: 'person', operator: 'regex', value: '^(a+)+$' }],
            rollout_percentage: 100,
          },
        ],
      },
    });
    const other = await createProject(h);
    await insertFlag(h.pool, other.teamId, {
      key: 'everyone',
      filters: { groups: [{ rollout_percentage: 100 }] },
    });

    // A backtracking engine needs about a second at 27 characters and doubles per character.
    const almost = `${'a'.repeat(100_000)}!`;
    const [nearMiss, hit, ...others] = await Promise.all([
      post(h.url, '/decide/?v=4', {
        api_key: slow.token,
        distinct_id: 's',
        person_properties: { email: almost },
      }),
      post(h.url, '/decide/?v=4', {
        api_key: slow.token,
        distinct_id: 's',
        person_properties: { email: almost.slice(0, -1) },
      }),
      ...Array.from({ length: 20 }, (_, i) =>
        post(h.url, '/flags/?v=2', { api_key: other.token, distinct_id: `o${i}` }),
      ),
    ]);
    expect(nearMiss!.status).toBe(200);
    expect(nearMiss!.body).toMatchObject({
      errorsWhileComputingFlags: false,
      flags: { redos: { enabled: false } },
    });
    expect(hit!.body).toMatchObject({
      errorsWhileComputingFlags: false,
      flags: { redos: { enabled: true } },
    });
    for (const res of others) {
      expect(res.status).toBe(200);
      expect(res.body.flags.everyone.enabled).toBe(true);
    }
  });

  it('a stored pattern RE2 cannot run makes only its own flag "could not be computed"', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'lookahead',
      filters: {
        groups: [{ properties: [{ key: 'email', type: 'person', operator: 'regex', value: '^(?=a)a' }] }],
      },
    });
    await insertFlag(h.pool, p.teamId, { key: 'fine', filters: { groups: [{ rollout_percentage: 100 }] } });
    const res = await post(h.url, '/decide/?v=4', {
      api_key: p.token,
      distinct_id: 'x',
      person_properties: { email: 'a' },
    });
    expect(res.status).toBe(200);
    expect(res.body.errorsWhileComputingFlags).toBe(true);
    expect(Object.keys(res.body.flags)).toEqual(['fine']);
  });
});
