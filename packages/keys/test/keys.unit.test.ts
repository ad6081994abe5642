import { createHash } from 'node:crypto';
import {
  generatePersonalApiKey,
  generateProjectToken,
  hashPassword,
  hashPersonalApiKey,
  hasScope,
  isScope,
  maskKey,
  verifyPassword,
} from '../src';

describe('credentials', () => {
  it('generates distinct, well-formed keys', () => {
    const tokens = new Set(Array.from({ length: 200 }, generateProjectToken));
    expect(tokens.size).toBe(200);
    for (const t of tokens) expect(t).toMatch(/^phc_[A-Za-z0-9]{43}$/);
    expect(generatePersonalApiKey()).toMatch(/^phx_[A-Za-z0-9]{47}$/);
  });

  it('hashes personal keys with sha256 and never keeps the value', () => {
    const key = 'phx_example';
    expect(hashPersonalApiKey(key)).toBe(`sha256$${createHash('sha256').update(key).digest('hex')}`);
    expect(hashPersonalApiKey(key)).not.toContain('example');
    expect(maskKey('phx_abcdefghijkl')).toBe('phx_...ijkl');
  });

  it('verifies scrypt password hashes and rejects wrong passwords', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$/);
    expect(stored).not.toContain('correct horse');
    await expect(verifyPassword('correct horse', stored)).resolves.toBe(true);
    await expect(verifyPassword('wrong', stored)).resolves.toBe(false);
    await expect(verifyPassword('x', null)).resolves.toBe(false);
    await expect(verifyPassword('x', 'plain')).resolves.toBe(false);
    expect(await hashPassword('correct horse')).not.toBe(stored);
  });

  it('checks scopes: exact, write implies read, wildcard', () => {
    expect(hasScope(['user:read'], 'user:read')).toBe(true);
    expect(hasScope(['user:read'], 'user:write')).toBe(false);
    expect(hasScope(['user:write'], 'user:read')).toBe(true);
    expect(hasScope(['*'], 'feature_flag:write')).toBe(true);
    expect(hasScope(['early_access_feature:read'], 'user:read')).toBe(false);
    expect(isScope('user:read')).toBe(true);
    expect(isScope('user:admin')).toBe(false);
  });
});
