import { TOPICS } from '@sett/kafka';
import { consumerPlans } from '../../src/kafka/consumers';
import { isDataError } from '../../src/kafka/batch-handler';

describe('consumerPlans', () => {
  it('runs live topics in one group and historical in another, as configured', () => {
    expect(consumerPlans(['main', 'overflow', 'historical'])).toEqual([
      { name: 'live', groupId: 'sett-ingestion', topics: [TOPICS.main, TOPICS.overflow] },
      { name: 'historical', groupId: 'sett-ingestion-historical', topics: [TOPICS.historical] },
    ]);
    expect(consumerPlans(['historical']).map((p) => p.groupId)).toEqual(['sett-ingestion-historical']);
    expect(consumerPlans(['overflow'])).toEqual([
      { name: 'live', groupId: 'sett-ingestion', topics: [TOPICS.overflow] },
    ]);
  });
});

describe('isDataError', () => {
  it('separates rejected data from unavailable infrastructure', () => {
    expect(isDataError({ code: '22P02' })).toBe(true);
    expect(isDataError({ code: '54000' })).toBe(true);
    expect(isDataError({ code: '40P01' })).toBe(false); // deadlock: retry
    expect(isDataError({ code: '57P01' })).toBe(false); // admin shutdown: retry
    expect(isDataError(new Error('connect ECONNREFUSED'))).toBe(false);
  });
});
