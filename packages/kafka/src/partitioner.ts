// Which partition a keyed message goes to: Kafka's Java-compatible murmur2 (the same function
// as kafkajs's DefaultPartitioner and the Java client, so every producer puts a key on the same
// partition), computed with 32-bit integer math instead of kafkajs's 64-bit Long emulation,
// which was ~15% of capture's CPU. Keyless messages go round robin over the partitions that
// have a leader, as in kafkajs.
import { randomInt } from 'node:crypto';
import type { ICustomPartitioner } from 'kafkajs';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

function murmur2Bytes(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length & 3;
  if (rest === 3) h ^= data[length4 + 2]! << 16;
  if (rest >= 2) h ^= data[length4 + 1]! << 8;
  if (rest >= 1) h = Math.imul(h ^ data[length4]!, M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The same hashing over an ASCII string's char codes (its UTF-8 bytes), without a Buffer. */
function murmur2Ascii(s: string): number {
  const length = s.length;
  let h = SEED ^ length;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k =
      s.charCodeAt(i) |
      (s.charCodeAt(i + 1) << 8) |
      (s.charCodeAt(i + 2) << 16) |
      (s.charCodeAt(i + 3) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length & 3;
  if (rest === 3) h ^= s.charCodeAt(length4 + 2) << 16;
  if (rest >= 2) h ^= s.charCodeAt(length4 + 1) << 8;
  if (rest >= 1) h = Math.imul(h ^ s.charCodeAt(length4), M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;

/** Kafka's murmur2 of a key's UTF-8 bytes, as a signed 32-bit integer (Java's Utils.murmur2). */
export function murmur2(key: string | Buffer): number {
  if (typeof key !== 'string') return murmur2Bytes(key);
  return NON_ASCII.test(key) ? murmur2Bytes(Buffer.from(key, 'utf8')) : murmur2Ascii(key);
}

/** The partition of a keyed message among `numPartitions` (Java's DefaultPartitioner). */
export function partitionForKey(key: string | Buffer, numPartitions: number): number {
  return (murmur2(key) & 0x7fffffff) % numPartitions;
}

/**
 * A kafkajs partitioner with the same placement as kafkajs's DefaultPartitioner: an explicit
 * partition wins, a key hashes with murmur2, no key goes round robin over partitions that have
 * a leader. Unlike kafkajs it does not allocate per message.
 */
export const SettPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const numPartitions = partitionMetadata.length;
    const key = message.key;
    if (key !== null && key !== undefined) return partitionForKey(key, numPartitions);
    const next = ((counters.get(topic) ?? randomInt(0x7fffffff)) + 1) & 0x7fffffff;
    counters.set(topic, next);
    let available = 0;
    for (const p of partitionMetadata) if (p.leader >= 0) available++;
    if (available === 0) return next % numPartitions;
    let nth = next % available;
    for (const p of partitionMetadata) if (p.leader >= 0 && nth-- === 0) return p.partitionId;
    return next % numPartitions;
  };
};
