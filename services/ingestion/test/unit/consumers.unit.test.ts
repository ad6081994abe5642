import { TOPICS } from '@sett/kafka';
import { consumerPlans } from '../../src/kafka/consumers';

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
