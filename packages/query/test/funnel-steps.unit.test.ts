// Which attempt of one person counts in a funnel, and how far it got: ordered, strict and
// unordered steps, the window's edge, exclusions between steps, and the first of equal attempts.
import { bestAttempt, type PersonEvent } from '../src';

const H = 3_600_000;
const ev = (hour: number, steps: number, exclusions = 0, breakdown?: string): PersonEvent => ({
  t: hour * H,
  steps,
  exclusions,
  breakdown,
});
const window = (hours: number) => (start: number) => start + hours * H;

describe('ordered', () => {
  test('takes steps in order, with other events between', () => {
    const events = [ev(0, 0b001), ev(1, 0), ev(2, 0b010), ev(3, 0b100)];
    expect(bestAttempt(events, 3, 'ordered', window(24))).toMatchObject({
      reached: 3,
      times: [0, 2 * H, 3 * H],
    });
  });

  test('an event exactly at the window edge counts; one past it does not', () => {
    expect(bestAttempt([ev(0, 1), ev(24, 2)], 2, 'ordered', window(24))?.reached).toBe(2);
    expect(
      bestAttempt([ev(0, 1), { t: 24 * H + 1, steps: 2, exclusions: 0 }], 2, 'ordered', window(24))?.reached,
    ).toBe(1);
  });

  test('steps done in reverse do not convert', () => {
    expect(bestAttempt([ev(0, 0b10), ev(1, 0b01)], 2, 'ordered', window(24))?.reached).toBe(1);
  });

  test('the furthest attempt counts, the first of equal ones; its breakdown is its first step', () => {
    const events = [
      ev(0, 1, 0, 'first'),
      ev(30, 1, 0, 'second'),
      ev(31, 2),
      ev(40, 1, 0, 'third'),
      ev(41, 2),
    ];
    const best = bestAttempt(events, 2, 'ordered', window(24));
    expect(best).toMatchObject({ reached: 2, breakdown: 'second', start: 30 * H });
  });

  test('one event cannot complete two steps of the same event', () => {
    expect(bestAttempt([ev(0, 0b11)], 2, 'ordered', window(24))?.reached).toBe(1);
    expect(bestAttempt([ev(0, 0b11), ev(1, 0b11)], 2, 'ordered', window(24))?.reached).toBe(2);
  });
});

test('strict: any event between two steps breaks the attempt', () => {
  expect(bestAttempt([ev(0, 1), ev(1, 0), ev(2, 2)], 2, 'strict', window(24))?.reached).toBe(1);
  expect(bestAttempt([ev(0, 1), ev(2, 2)], 2, 'strict', window(24))?.reached).toBe(2);
});

test('unordered: steps in any order from whichever comes first, times sorted', () => {
  const events = [ev(0, 0b100), ev(1, 0b001), ev(2, 0b010), ev(5, 0b100)];
  // From the step-2 event at hour 0: step 0 at hour 1, step 1 at hour 2.
  expect(bestAttempt(events, 3, 'unordered', window(24))).toMatchObject({
    reached: 3,
    times: [0, 1 * H, 2 * H],
    start: 0,
  });
  // Done in reverse, a funnel of two steps converts unordered.
  expect(bestAttempt([ev(0, 0b10), ev(1, 0b01)], 2, 'unordered', window(24))?.reached).toBe(2);
});

test('an exclusion between its steps drops the attempt; the person is out when every attempt is', () => {
  const exclusions = [{ fromStep: 0, toStep: 1 }];
  expect(
    bestAttempt([ev(0, 1), ev(1, 0, 1), ev(2, 2)], 2, 'ordered', window(24), exclusions),
  ).toBeUndefined();
  // The exclusion after the second step does not matter; a later clean attempt counts.
  expect(bestAttempt([ev(0, 1), ev(2, 2), ev(3, 0, 1)], 2, 'ordered', window(24), exclusions)?.reached).toBe(
    2,
  );
  expect(
    bestAttempt(
      [ev(0, 1), ev(1, 0, 1), ev(2, 2), ev(10, 1), ev(11, 2)],
      2,
      'ordered',
      window(24),
      exclusions,
    ),
  ).toMatchObject({ reached: 2, start: 10 * H });
});

test('only attempts starting in range count', () => {
  const events = [ev(0, 1), ev(1, 2), ev(10, 1)];
  expect(bestAttempt(events, 2, 'ordered', window(24), [], (t) => t >= 5 * H)).toMatchObject({
    reached: 1,
    start: 10 * H,
  });
});
