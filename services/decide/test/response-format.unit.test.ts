import type { FlagResult } from '@sett/flags';
import { formatResponse, responseShape, type EvaluationOutcome } from '../src/decide/response-format';

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
    expect(formatResponse('v4', outcome)).toEqual({
      ...envelope,
      flags: {
        on: {
          key: 'on',
          enabled: true,
          variant: null,
          reason: on.reason,
          metadata: { id: 1, version: 2, payload: '{"a":1}' },
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
          metadata: { id: 3, version: 1 },
        },
      },
    });
  });

  it('v3: every flag as value, payloads of enabled flags', () => {
    expect(formatResponse('v3', outcome)).toEqual({
      ...envelope,
      featureFlags: { on: true, mv: 'test', off: false },
      featureFlagPayloads: { on: '{"a":1}' },
    });
  });

  it('v2: enabled flags only; v1: list of enabled keys', () => {
    expect(formatResponse('v2', outcome)).toEqual({ ...envelope, featureFlags: { on: true, mv: 'test' } });
    expect(formatResponse('v1', outcome)).toEqual({ ...envelope, featureFlags: ['on', 'mv'] });
  });

  it('adds quotaLimited only when limited', () => {
    const limited = formatResponse('v4', { flags: {}, errorsWhileComputingFlags: false, quotaLimited: true });
    expect(limited).toEqual({ ...envelope, flags: {}, quotaLimited: ['feature_flags'] });
    expect(formatResponse('v4', outcome)).not.toHaveProperty('quotaLimited');
  });
});
