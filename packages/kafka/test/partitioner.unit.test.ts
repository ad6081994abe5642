// Our partitioner must place every key exactly where kafkajs's DefaultPartitioner (and so the
// Java client) does, or a key's events would split across partitions between producers.
import { randomBytes } from 'node:crypto';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { murmur2, partitionForKey, SettPartitioner } from '../src';

// kafkajs's own 64-bit Long implementation, the reference.
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2') as (
  key: string | Buffer,
) => number;

const meta = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, i) => ({
    partitionErrorCode: 0,
    partitionId: i,
    leader: leaderless.includes(i) ? -1 : 1,
    replicas: [1],
    isr: [1],
  }));

const keys = [
  '',
  'a',
  'ab',
  'abc',
  'abcd',
  'abcde',
  'phc_abc:user-1',
  'phc_x:ünïcødé-👋',
  'phc_x:日本語のユーザー',
  ...Array.from({ length: 2000 }, (_, i) => `phc_${randomBytes(8).toString('hex')}:user-${i * 7919}`),
  ...Array.from({ length: 300 }, () => randomBytes(1 + Math.floor(Math.random() * 60)).toString('latin1')),
];

it('computes the same murmur2 as kafkajs for ASCII, Unicode and binary keys', () => {
  for (const key of keys) expect([key, murmur2(key)]).toEqual([key, kafkajsMurmur2(key)]);
  for (let i = 0; i < 300; i++) {
    const buf = randomBytes(i % 70);
    expect(murmur2(buf)).toBe(kafkajsMurmur2(buf));
  }
});

it('places keyed messages on the same partition as kafkajs DefaultPartitioner', () => {
  const ours = SettPartitioner();
  const theirs = Partitioners.DefaultPartitioner();
  for (const partitions of [1, 3, 16, 64]) {
    const partitionMetadata = meta(partitions);
    for (const key of keys) {
      const expected = theirs({ topic: 't', partitionMetadata, message: { key, value: 'v' } });
      expect(ours({ topic: 't', partitionMetadata, message: { key, value: 'v' } })).toBe(expected);
      expect(ours({ topic: 't', partitionMetadata, message: { key: Buffer.from(key), value: 'v' } })).toBe(
        expected,
      );
      expect(partitionForKey(key, partitions)).toBe(expected);
    }
  }
});

it('honours an explicit partition and spreads keyless messages over partitions with a leader', () => {
  const partitioner = SettPartitioner();
  const partitionMetadata = meta(6, [1, 4]);
  expect(
    partitioner({ topic: 't', partitionMetadata, message: { key: 'k', value: 'v', partition: 5 } }),
  ).toBe(5);
  const seen = new Map<number, number>();
  for (let i = 0; i < 400; i++) {
    const p = partitioner({ topic: 't', partitionMetadata, message: { key: null, value: 'v' } });
    seen.set(p, (seen.get(p) ?? 0) + 1);
  }
  expect([...seen.keys()].sort()).toEqual([0, 2, 3, 5]);
  for (const count of seen.values()) expect(count).toBe(100);
  // No partition has a leader: still a valid partition.
  const none = partitioner({
    topic: 'u',
    partitionMetadata: meta(3, [0, 1, 2]),
    message: { key: null, value: 'v' },
  });
  expect(none).toBeGreaterThanOrEqual(0);
  expect(none).toBeLessThan(3);
});
