// PostHog's bucketing hash: the first 15 hex digits of sha1("<flag key>.<id><salt>") as a
// fraction of 0xFFFFFFFFFFFFFFF. Must agree bit for bit with PostHog's server and SDKs, or a
// person lands in a different bucket here than there.
import crypto from 'crypto';

// PostHog divides by float(0xFFFFFFFFFFFFFFF) (Python `__LONG_SCALE__`, Rust `LONG_SCALE as
// f64`, the posthog-node literal): 2^60 - 1 is not representable as a double and rounds to
// exactly 2^60, so that is the divisor written out. The 60-bit numerator is likewise rounded to
// the nearest double (parseInt in a power-of-two radix is exact before rounding), so the result
// is round(n) / 2^60 in every implementation.
const LONG_SCALE = 2 ** 60;

export function flagHash(flagKey: string, id: string, salt = ''): number {
  const digest = sha1Hex(`${flagKey}.${id}${salt}`);
  return parseInt(digest.slice(0, 15), 16) / LONG_SCALE;
}

// One-shot crypto.hash (Node >= 20.12) costs under half of a createHash object per call, and
// decide hashes once or twice per flag per request.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
function sha1Hex(text: string): string {
  return oneShot
    ? oneShot('sha1', text, 'hex')
    : crypto.createHash('sha1').update(text, 'utf8').digest('hex');
}
