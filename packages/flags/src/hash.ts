// PostHog's bucketing hash: the first 15 hex digits of sha1("<flag key>.<id><salt>") as a
// fraction of 0xFFFFFFFFFFFFFFF. Must agree bit for bit with PostHog's server and SDKs, or a
// person lands in a different bucket here than there.
import { createHash } from 'crypto';

// PostHog divides by float(0xFFFFFFFFFFFFFFF) (Python `__LONG_SCALE__`, Rust `LONG_SCALE as
// f64`, the posthog-node literal): 2^60 - 1 is not representable as a double and rounds to
// exactly 2^60, so that is the divisor written out. The 60-bit numerator is likewise rounded to
// the nearest double (parseInt in a power-of-two radix is exact before rounding), so the result
// is round(n) / 2^60 in every implementation.
const LONG_SCALE = 2 ** 60;

export function flagHash(flagKey: string, id: string, salt = ''): number {
  const digest = createHash('sha1').update(`${flagKey}.${id}${salt}`, 'utf8').digest('hex');
  return parseInt(digest.slice(0, 15), 16) / LONG_SCALE;
}
