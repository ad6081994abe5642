// The funnel of one person, pure: given their events in time order (each with the steps it
// matches and the exclusions it matches), which attempt counts and how far it got. An attempt
// starts at an event matching the first step (unordered: any step); the steps after it are taken
// in order (ordered: later events, any others allowed between; strict: the very next events;
// unordered: the other steps in any order), all within the conversion window from the start. The attempt that counts is the
// one that reaches the furthest step; of those, the earliest. An attempt in which an exclusion
// event falls between its exclusion's from-step and to-step does not count. A person whose
// every attempt is excluded is not in the funnel at all.

export type FunnelOrder = 'ordered' | 'strict' | 'unordered';

export interface PersonEvent {
  /** Epoch milliseconds. */
  t: number;
  /** Bit k set: the event matches step k. */
  steps: number;
  /** Bit j set: the event matches exclusion j. */
  exclusions: number;
  /** The event's breakdown value (first-touch attribution reads the first step's). */
  breakdown?: string | null;
}

export interface Exclusion {
  fromStep: number;
  toStep: number;
}

export interface Attempt {
  /** Steps reached (0: none; the first step counts as 1). */
  reached: number;
  /** Time each reached step happened (for unordered: the times distinct steps were completed, sorted). */
  times: number[];
  /** The breakdown value of the attempt's first event. */
  breakdown: string | null | undefined;
  start: number;
}

/** The end of a conversion window that starts at `start`. */
export type WindowEnd = (start: number) => number;

function excluded(
  times: number[],
  events: PersonEvent[],
  exclusions: Exclusion[],
  windowEnd: number,
): boolean {
  for (const [j, x] of exclusions.entries()) {
    const from = times[x.fromStep];
    if (from === undefined) continue;
    const to = times[x.toStep] ?? windowEnd;
    for (const e of events) if (e.exclusions & (1 << j) && e.t > from && e.t < to) return true;
  }
  return false;
}

/** The attempt starting at events[i] (which matches step 0). */
function attemptFrom(
  events: PersonEvent[],
  i: number,
  stepCount: number,
  order: FunnelOrder,
  end: number,
): Attempt {
  const start = events[i]!;
  const times = [start.t];
  if (order === 'unordered') {
    // The start completes one of the steps it matches; then each other step's first occurrence
    // from the start on, within the window (an event completes one step only).
    let first = 0;
    while (!(start.steps & (1 << first))) first++;
    const done = new Set<number>([first]);
    const used = new Set<number>([i]);
    for (let k = 0; k < stepCount; k++) {
      if (done.has(k)) continue;
      for (let m = i; m < events.length && events[m]!.t <= end; m++) {
        if (used.has(m) || !(events[m]!.steps & (1 << k))) continue;
        done.add(k);
        used.add(m);
        times.push(events[m]!.t);
        break;
      }
    }
    times.sort((a, b) => a - b);
    return { reached: done.size, times, breakdown: start.breakdown, start: start.t };
  }
  let step = 1;
  for (let m = i + 1; m < events.length && step < stepCount; m++) {
    const e = events[m]!;
    if (e.t > end) break;
    if (e.steps & (1 << step)) {
      times.push(e.t);
      step++;
    } else if (order === 'strict') break;
  }
  return { reached: step, times, breakdown: start.breakdown, start: start.t };
}

/**
 * The attempt that counts for one person, or undefined when they are not in the funnel (no
 * first step in range, or every attempt excluded). `inRange` says whether an event may start an
 * attempt (its first step is within the query's dates).
 */
export function bestAttempt(
  events: PersonEvent[],
  stepCount: number,
  order: FunnelOrder,
  windowEnd: WindowEnd,
  exclusions: Exclusion[] = [],
  inRange: (t: number) => boolean = () => true,
): Attempt | undefined {
  let best: Attempt | undefined;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    // Ordered and strict attempts start at the first step; unordered ones at any step.
    const starts = order === 'unordered' ? e.steps & ((1 << stepCount) - 1) : e.steps & 1;
    if (!starts || !inRange(e.t)) continue;
    const end = windowEnd(e.t);
    const attempt = attemptFrom(events, i, stepCount, order, end);
    if (exclusions.length > 0 && excluded(attempt.times, events, exclusions, end)) continue;
    if (!best || attempt.reached > best.reached) best = attempt;
    if (best.reached === stepCount) break;
  }
  return best;
}
