// Writes a batch and, when the input itself is refused, finds the refused items by bisection:
// each failing range is split in halves and each half written again (left first, so event order
// is kept), until the refused items stand alone. k bad items among n cost about
// 1 + 2k*log2(n/k) writes instead of n. Other failures (infrastructure) propagate unchanged:
// the caller retries the whole batch without committing.

export type IsolateOutcome<T, R> = {
  /** Results of the writes that succeeded, in write order. */
  results: R[];
  /** Items refused on their own, with the error of their single-item write. */
  rejected: Array<{ item: T; error: Error }>;
  /** Write attempts made (the first full one included). */
  writes: number;
};

export async function writeIsolatingRejected<T, R>(
  items: readonly T[],
  write: (items: T[]) => Promise<R>,
  isRejection: (error: unknown) => boolean,
): Promise<IsolateOutcome<T, R>> {
  const results: R[] = [];
  const rejected: Array<{ item: T; error: Error }> = [];
  let writes = 0;
  // Ranges still to write, as [from, to); the top of the stack is the leftmost.
  const todo: Array<[number, number]> = items.length > 0 ? [[0, items.length]] : [];
  while (todo.length > 0) {
    const [from, to] = todo.pop()!;
    writes++;
    try {
      results.push(await write(items.slice(from, to)));
    } catch (error) {
      if (!isRejection(error)) throw error;
      if (to - from === 1) {
        rejected.push({ item: items[from] as T, error: error as Error });
        continue;
      }
      const mid = from + Math.ceil((to - from) / 2);
      todo.push([mid, to], [from, mid]);
    }
  }
  return { results, rejected, writes };
}
