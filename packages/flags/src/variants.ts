// Multivariate bucketing: variants own consecutive ranges [lower, upper) of the "variant"-salted
// hash, in the order they are listed, sized by their rollout percentages.
import { flagHash } from './hash';
import type { FlagVariant } from './types';

export interface VariantRange {
  key: string;
  lower: number;
  upper: number;
}

export function variantLookupTable(variants: FlagVariant[]): VariantRange[] {
  // Accumulated exactly as PostHog does (sum of percentage/100 in order), so the float edges,
  // and therefore the bucket of a hash sitting on an edge, are the same.
  const table: VariantRange[] = [];
  let lower = 0;
  for (const variant of variants) {
    const upper = lower + variant.rollout_percentage / 100;
    table.push({ key: variant.key, lower, upper });
    lower = upper;
  }
  return table;
}

/** The variant whose range holds the hash, or undefined when percentages sum below 100. */
export function matchingVariant(
  flagKey: string,
  hashId: string,
  variants: FlagVariant[],
): string | undefined {
  return variantForHash(flagHash(flagKey, hashId, 'variant'), variants);
}

/** The variant owning a given variant-hash value: lower bound inclusive, upper exclusive. */
export function variantForHash(value: number, variants: FlagVariant[]): string | undefined {
  return variantLookupTable(variants).find((range) => value >= range.lower && value < range.upper)?.key;
}
