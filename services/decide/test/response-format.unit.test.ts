import type { FlagResult } from '@sett/flags';
import { evaluateFlags } from '@sett/flags';
import {
  formatResponse,
  formatResponseJson,
  responseShape,
  type EvaluationOutcome,
  type ResponseMeta,
  type ResponseShape,
} from '../src/decide/response-format';

const meta: ResponseMeta = { requestId: '0b7f7c4e-4a53-4a3e-9d0c-6d1f2f8a2b11', evaluatedAt: 1763824000123 };
const tail = { requestId: meta.requestId, evaluatedAt: meta.evaluatedAt };

const on: FlagResult = {
  key: 'on',
  enabled: true,
  reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
  metadata: { id: 1, version: 2, payload: '{"a":1}' },
};
const variant: FlagResult = {
  key: 'mv',
  enabled: true,
  variant: 'test',
  reason: { code: 'condition_match', condition_index: 1, description: 'Matched condition set 2' },
  metadata: { id: 2, version: 1, description: 'Multi' },
};
const off: FlagResult = {
  key: 'off',
  enabled: false,
  reason: { code: 'out_of_rollout_bound', condition_index: 0, description: 'Out of rollout bound' },
  metadata: { id: 3, version: 1 },
};
const outcome: EvaluationOutcome = {
  flags: { on, mv: variant, off },
  errorsWhileComputingFlags: false,
  quotaLimited: false,
};
const envelope = {
  config: { enable_collect_everything: true },
  toolbarParams: {},
  errorsWhileComputingFlags: false,
  isAuthenticated: false,
  supportedCompression: ['gzip', 'lz64'],
};

describe('responseShape', () => {
  it.each([
    ['decide', '4', 'v4'],
    ['decide', '5', 'v4'],
    ['decide', '3', 'v3'],
    ['decide', '2', 'v2'],
    ['decide', undefined, 'v1'],
    ['decide', '1', 'v1'],
    ['decide', 'abc', 'v1'],
    ['flags', '2', 'v4'],
    ['flags', '1', 'v3'],
    ['flags', undefined, 'v3'],
  ] as const)('%s?v=%s answers %s', (endpoint, v, shape) => {
    expect(responseShape(endpoint, v)).toBe(shape);
  });
});

describe('formatResponse', () => {
  it('v4: flags keyed by key with reason and metadata, variant null when none', () => {
    expect(formatResponse('v4', outcome, meta)).toEqual({
      ...envelope,
      flags: {
        on: {
          key: 'on',
          enabled: true,
          variant: null,
          reason: on.reason,
          metadata: { id: 1, version: 2, description: null, payload: '{"a":1}' },
        },
        mv: {
          key: 'mv',
          enabled: true,
          variant: 'test',
          reason: variant.reason,
          metadata: { id: 2, version: 1, description: 'Multi' },
        },
        off: {
          key: 'off',
          enabled: false,
          variant: null,
          reason: off.reason,
          metadata: { id: 3, version: 1, description: null },
        },
      },
      ...tail,
    });
  });

  it('v3: every flag as value, payloads of enabled flags', () => {
    expect(formatResponse('v3', outcome, meta)).toEqual({
      ...envelope,
      featureFlags: { on: true, mv: 'test', off: false },
      featureFlagPayloads: { on: '{"a":1}' },
      ...tail,
    });
  });

  it('v2: enabled flags only; v1: list of enabled keys', () => {
    expect(formatResponse('v2', outcome, meta)).toEqual({
      ...envelope,
      featureFlags: { on: true, mv: 'test' },
      ...tail,
    });
    expect(formatResponse('v1', outcome, meta)).toEqual({ ...envelope, featureFlags: ['on', 'mv'], ...tail });
  });

  it('adds quotaLimited only when limited', () => {
    const limited = formatResponse(
      'v4',
      { flags: {}, errorsWhileComputingFlags: false, quotaLimited: true },
      meta,
    );
    expect(limited).toEqual({ ...envelope, flags: {}, quotaLimited: ['feature_flags'], ...tail });
    expect(formatResponse('v4', outcome, meta)).not.toHaveProperty('quotaLimited');
  });

  it('config=true: remote config fields at the top level, replacing shared ones in place', () => {
    const remoteConfig = { token: 'phc_x', supportedCompression: ['gzip', 'gzip-js'], hasFeatureFlags: true };
    const body = formatResponse('v4', outcome, { ...meta, remoteConfig });
    expect(body).toMatchObject({
      config: { enable_collect_everything: true },
      toolbarParams: {},
      isAuthenticated: false,
      token: 'phc_x',
      hasFeatureFlags: true,
      supportedCompression: ['gzip', 'gzip-js'],
      requestId: meta.requestId,
    });
    expect(Object.keys(body).indexOf('supportedCompression')).toBe(4);
  });
});

describe('formatResponseJson', () => {
  const shapes: ResponseShape[] = ['v1', 'v2', 'v3', 'v4'];
  const odd: FlagResult = {
    key: '12',
    enabled: true,
    variant: 'v "quoted" \u2028 ü',
    reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
    metadata: {
      id: 9,
      version: 3,
      payload: '{"emoji":"\ud83d\ude00","nl":"a\nb"}',
      description: 'Naïve "name"',
    },
  };
  const outcomes: EvaluationOutcome[] = [
    outcome,
    { ...outcome, errorsWhileComputingFlags: true },
    { flags: {}, errorsWhileComputingFlags: false, quotaLimited: true },
    { flags: {}, errorsWhileComputingFlags: false, quotaLimited: false },
    {
      flags: {
        on,
        '12': odd,
        'key with "quotes"': { ...off, key: 'key with "quotes"' },
        '3': { ...off, key: '3' },
      },
      errorsWhileComputingFlags: false,
      quotaLimited: false,
    },
    // The same reason and metadata objects with another outcome: not the cached fragment.
    {
      flags: { on: { ...on, variant: 'changed' }, off: { ...on, key: 'off', enabled: false } },
      errorsWhileComputingFlags: false,
      quotaLimited: false,
    },
  ];

  it.each(shapes)('%s: the same bytes as JSON.stringify of the object form', (shape) => {
    for (const o of outcomes) {
      // Twice: the second run answers from the per-object fragment caches.
      expect(formatResponseJson(shape, o, meta)).toBe(JSON.stringify(formatResponse(shape, o, meta)));
      expect(formatResponseJson(shape, o, meta)).toBe(JSON.stringify(formatResponse(shape, o, meta)));
      const withConfig = { ...meta, remoteConfig: { token: 't', sessionRecording: false } };
      expect(formatResponseJson(shape, o, withConfig)).toBe(
        JSON.stringify(formatResponse(shape, o, withConfig)),
      );
    }
  });

  it('v4: the same bytes for real evaluation results (shared reason and metadata objects)', () => {
    const flags = [
      { key: 'a', groups: [{ properties: [], rollout_percentage: 50 }] },
      { key: 'b', groups: [{ properties: [{ key: 'plan', value: 'pro' }], rollout_percentage: 100 }] },
    ].map(({ key, groups }, i) => ({
      id: i + 1,
      team_id: 1,
      key,
      name: i ? 'B flag' : '',
      filters: {
        groups,
        multivariate: {
          variants: [
            { key: 'x', rollout_percentage: 50 },
            { key: 'y', rollout_percentage: 50 },
          ],
        },
        payloads: { x: '{"p":"x"}', y: '[1,2]' },
      },
      active: true,
      deleted: false,
      ensure_experience_continuity: false,
      version: 1,
    }));
    for (let i = 0; i < 50; i++) {
      const result = evaluateFlags(flags, {
        distinctId: `id-${i}`,
        personProperties: { plan: i % 2 ? 'pro' : 'free' },
        groups: {},
        groupProperties: {},
        groupTypeMapping: {},
      });
      const o = { flags: result.flags, errorsWhileComputingFlags: false, quotaLimited: false };
      expect(formatResponseJson('v4', o, meta)).toBe(JSON.stringify(formatResponse('v4', o, meta)));
    }
  });
});
