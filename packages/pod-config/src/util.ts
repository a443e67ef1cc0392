import { raceAbort } from '@kubelet-ts/core';

/** Resolves with p, or as soon as signal aborts (the sink may wait on a consumer that is gone). */
export function abortable(p: Promise<void>, signal: AbortSignal): Promise<void> {
  return raceAbort(p, signal, undefined);
}
