// Every query kind the engine serves, in the order docs and errors list them.
import type { PlanBase, QueryKind } from '../engine';
import { eventsKind } from './events';
import { funnelsKind } from './funnels';
import { hogqlKind } from './hogql';
import { retentionKind } from './retention';
import { trendsKind } from './trends';

export const ALL_KINDS: ReadonlyArray<QueryKind<never, PlanBase>> = [
  trendsKind as unknown as QueryKind<never, PlanBase>,
  funnelsKind as unknown as QueryKind<never, PlanBase>,
  retentionKind as unknown as QueryKind<never, PlanBase>,
  eventsKind as unknown as QueryKind<never, PlanBase>,
  hogqlKind as unknown as QueryKind<never, PlanBase>,
];
