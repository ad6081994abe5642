// The id of the request being served, carried through its async work so that every log line
// written while serving it names it, without handing a per-request logger down every call.
// The HTTP layer (@sett/http) opens the context; the logger reads it when it formats a line.
import { AsyncLocalStorage } from 'node:async_hooks';

interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` (and everything it starts) as part of the request `requestId`. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

/** The id of the request being served, or undefined outside of one. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
