// Which consumer groups a worker runs: live traffic (main + overflow topics) in one group and
// historical migrations in another, so a backfill never queues in front of live events and
// operators can deploy and scale the two separately (INGESTION_TOPICS).
import { TOPICS } from '@sett/kafka';
import type { IngestionTopicChoice } from '@sett/config';

export const GROUP_IDS = { live: 'sett-ingestion', historical: 'sett-ingestion-historical' } as const;

export type ConsumerPlan = { name: 'live' | 'historical'; groupId: string; topics: string[] };

export function consumerPlans(
  choices: readonly IngestionTopicChoice[],
  groupIds: { live: string; historical: string } = GROUP_IDS,
): ConsumerPlan[] {
  const plans: ConsumerPlan[] = [];
  const live: string[] = [];
  if (choices.includes('main')) live.push(TOPICS.main);
  if (choices.includes('overflow')) live.push(TOPICS.overflow);
  if (live.length > 0) plans.push({ name: 'live', groupId: groupIds.live, topics: live });
  if (choices.includes('historical'))
    plans.push({ name: 'historical', groupId: groupIds.historical, topics: [TOPICS.historical] });
  return plans;
}
