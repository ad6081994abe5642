import {
  PASSWORD_SCRYPT,
  PasswordHashingBusyError,
  checkPassword,
  createPasswordHasher,
  hashPassword,
  verifyPassword,
  type ScryptFn,
} from '../src';

const OLD = { N: 2 ** 14, r: 8, p: 1 };

describe('password hashing', () => {
  it('hashes new passwords with the OWASP scrypt parameters (N=2^17, r=8, p=1)', async () => {
    expect(PASSWORD_SCRYPT).toEqual({ N: 131072, r: 8, p: 1 });
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    await expect(checkPassword('correct horse', stored)).resolves.toEqual({
      valid: true,
      needsRehash: false,
    });
    await expect(checkPassword('wrong', stored)).resolves.toEqual({ valid: false, needsRehash: false });
  });

  it('verifies an old N=2^14 hash and reports that it needs a rehash (only when correct)', async () => {
    const old = await createPasswordHasher({ params: OLD }).hash('correct horse');
    expect(old).toMatch(/^scrypt\$16384\$8\$1\$/);
    await expect(checkPassword('correct horse', old)).resolves.toEqual({ valid: true, needsRehash: true });
    await expect(checkPassword('wrong', old)).resolves.toEqual({ valid: false, needsRehash: false });
    await expect(verifyPassword('correct horse', old)).resolves.toBe(true);
  });

  it('refuses malformed hashes and parameters that would allocate too much, without hashing', async () => {
    let calls = 0;
    const scrypt: ScryptFn = async () => {
      calls++;
      return Buffer.alloc(32);
    };
    const hasher = createPasswordHasher({ scrypt });
    const salt = Buffer.alloc(16).toString('base64');
    const hash = Buffer.alloc(32).toString('base64');
    for (const stored of [
      null,
      '',
      'plain',
      `scrypt$${2 ** 24}$8$1$${salt}$${hash}`, // 2 GiB
      `scrypt$1000$8$1$${salt}$${hash}`, // not a power of two
      `scrypt$16384$64$1$${salt}$${hash}`,
      `scrypt$16384$8$x$${salt}$${hash}`,
      `bcrypt$16384$8$1$${salt}$${hash}`,
    ]) {
      await expect(hasher.check('pw', stored)).resolves.toEqual({ valid: false, needsRehash: false });
    }
    expect(calls).toBe(0);
  });

  it('runs at most `concurrency` hashes at once and refuses beyond the queue bound', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const pending: (() => void)[] = [];
    const started: number[] = [];
    let onStart: (() => void) | undefined;
    const scrypt: ScryptFn = (_pw, _salt, keylen) =>
      new Promise((resolve) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        started.push(inFlight);
        pending.push(() => {
          inFlight--;
          resolve(Buffer.alloc(keylen));
        });
        onStart?.();
      });
    const hasher = createPasswordHasher({ scrypt, concurrency: 2, maxQueued: 3 });
    const waitForStarts = (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => started.length >= n && resolve();
        onStart = check;
        check();
      });
    const results = Array.from({ length: 5 }, (_, i) => hasher.hash(`pw${i}`));
    await waitForStarts(2);
    // Two running, three waiting: a sixth is refused at once instead of piling up.
    await expect(hasher.hash('pw6')).rejects.toBeInstanceOf(PasswordHashingBusyError);
    expect(started.length).toBe(2);
    for (let done = 0; done < 5; done++) {
      await waitForStarts(Math.min(done + 2, 5));
      pending.shift()!();
    }
    await expect(Promise.all(results)).resolves.toHaveLength(5);
    expect(maxInFlight).toBe(2);
    // The queue drained: hashing works again.
    const again = hasher.hash('pw7');
    await waitForStarts(6);
    pending.shift()!();
    await expect(again).resolves.toMatch(/^scrypt\$/);
  });
});
