// Waiting in tests for a signal (a row, an offset, a status, a metric) instead of sleeping: poll
// `check` until it returns something other than undefined, null or false, or the deadline
// passes; the timeout error names what was awaited. A check that throws fails the wait at once
// (an assertion inside it, or a process that exited, should not be waited out).

export interface WaitForOptions {
  /** Default 10 s. */
  timeoutMs?: number;
  /** Pause between checks (default 50 ms; 0 checks again on the next turn of the event loop). */
  intervalMs?: number;
}

/** Resolves with the first value of `check` that is not undefined, null or false. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  opts: WaitForOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
