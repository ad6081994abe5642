import { decodeFlagList, decodeProjectRef, encodeFlagList, encodeProjectRef } from '../src';

describe('cache value formats', () => {
  it('round-trips project refs and distinguishes unknown tokens from misses', () => {
    const ref = { teamId: 3, organizationId: '0190-org' };
    expect(decodeProjectRef(encodeProjectRef(ref))).toEqual(ref);
    expect(decodeProjectRef(encodeProjectRef(null))).toBeNull();
    expect(decodeProjectRef(null)).toBeUndefined();
    expect(decodeProjectRef('{corrupt')).toBeUndefined();
    expect(decodeProjectRef('{"team_id":"3"}')).toBeUndefined();
  });

  it('round-trips flag lists', () => {
    const list = { teamId: 9, updatedAt: 123, flags: [{ key: 'a' }] };
    expect(decodeFlagList(encodeFlagList(list))).toEqual(list);
    expect(decodeFlagList('[]')).toBeUndefined();
  });
});
