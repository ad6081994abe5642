import { randomBytes } from 'node:crypto';
import {
  SecretDecryptionError,
  decryptFlagPayload,
  decryptFlagPayloads,
  deriveCredentialKeys,
  deriveFlagPayloadKey,
  encryptFlagPayloads,
} from '../src';

const master = randomBytes(32);
const key = deriveFlagPayloadKey(master);

describe('flag payload encryption', () => {
  it('round-trips each payload value and never stores the plaintext', () => {
    const stored = encryptFlagPayloads({ true: '{"secret":"s3cr3t-value"}' }, key, 7);
    expect(stored.true).toMatch(/^v1:/);
    expect(JSON.stringify(stored)).not.toContain('s3cr3t-value');
    expect(decryptFlagPayloads(stored, key, 7)).toEqual({ true: '{"secret":"s3cr3t-value"}' });
  });

  it('stores a non-string payload as its JSON text', () => {
    const stored = encryptFlagPayloads({ a: { n: 1 } }, key, 7);
    expect(decryptFlagPayload(stored.a, key, 7)).toBe('{"n":1}');
  });

  it('is bound to its project and to its own purpose key', () => {
    const stored = encryptFlagPayloads({ true: '"x"' }, key, 7);
    expect(() => decryptFlagPayload(stored.true, key, 8)).toThrow(SecretDecryptionError);
    expect(() => decryptFlagPayload(stored.true, deriveCredentialKeys(master).totpSecret, 7)).toThrow(
      SecretDecryptionError,
    );
    expect(() => decryptFlagPayload('"plain"', key, 7)).toThrow(SecretDecryptionError);
    expect(() => decryptFlagPayload(42, key, 7)).toThrow(SecretDecryptionError);
  });
});
