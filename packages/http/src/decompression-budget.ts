// How many decompressed bytes one process holds for request bodies at once. A gzip or lz64 body
// of a few kilobytes can name up to the decompressed cap (tens of megabytes), and parsing it
// costs several times that in memory; a per-request cap alone lets forty such requests at once
// take gigabytes. Body decoding reserves a body's decompressed size here before it inflates it,
// and answers 503 with Retry-After when the reservation does not fit.
//
// Two shares, so that a flood of large bodies cannot starve ordinary traffic: bodies up to
// SMALL_BODY_BYTES decompressed (every SDK batch) share a quarter of the budget, larger ones the
// other three quarters. A share with nothing reserved takes any one body (up to the
// decompressed cap, which may exceed the share), so the budget never makes a valid body
// impossible, only makes it wait its turn. Held memory is therefore at most
// max(budget / 4, one small body) + max(budget * 3 / 4, one body at the cap).

/** Decompressed bodies up to this size count against the small share. */
export const SMALL_BODY_BYTES = 1024 * 1024;

export interface DecompressionBudget {
  /** Reserves `bytes`; the release function, or undefined when they do not fit now. */
  reserve(bytes: number): (() => void) | undefined;
  /** The largest reservation that would succeed now (Infinity when a share is empty). */
  room(): number;
  /** Bytes reserved now, for metrics and tests. */
  inFlight(): number;
}

export function createDecompressionBudget(maxBytes: number): DecompressionBudget {
  const shares = {
    small: { limit: Math.floor(maxBytes / 4), used: 0 },
    large: { limit: maxBytes - Math.floor(maxBytes / 4), used: 0 },
  };
  const shareOf = (bytes: number) => (bytes <= SMALL_BODY_BYTES ? shares.small : shares.large);
  const fits = (share: { limit: number; used: number }, bytes: number) =>
    share.used === 0 || share.used + bytes <= share.limit;

  return {
    reserve(bytes) {
      const share = shareOf(bytes);
      if (!fits(share, bytes)) return undefined;
      share.used += bytes;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        share.used -= bytes;
      };
    },
    room() {
      if (shares.large.used === 0) return Infinity;
      const large = shares.large.limit - shares.large.used;
      if (large > SMALL_BODY_BYTES) return large;
      // Only the small share can take something; its room, but never more than a small body.
      if (shares.small.used === 0) return SMALL_BODY_BYTES;
      return Math.min(SMALL_BODY_BYTES, Math.max(shares.small.limit - shares.small.used, 0));
    },
    inFlight() {
      return shares.small.used + shares.large.used;
    },
  };
}
