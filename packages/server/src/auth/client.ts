// Per-call options for client-node 1.x API calls: an abort signal (the caller's, bounded by a timeout).
import type { ConfigurationOptions } from '@kubernetes/client-node';
import { apiCallOptions } from '@kubelet-ts/core';

/** Options that abort the call on signal or after timeoutMs. */
export function withSignal(signal: AbortSignal | undefined, timeoutMs: number): ConfigurationOptions {
  return apiCallOptions({ signal, timeoutMs });
}
