// Per-call options for client-node 1.x API calls: an abort signal (the caller's, bounded by a
// timeout) set through a request middleware, as client-node offers no other hook for it.
import { Observable, type ConfigurationOptions, type RequestContext, type ResponseContext } from '@kubernetes/client-node';

export function withSignal(signal: AbortSignal | undefined, timeoutMs: number): ConfigurationOptions {
  const signals: AbortSignal[] = [];
  if (signal) signals.push(signal);
  if (timeoutMs > 0) signals.push(AbortSignal.timeout(timeoutMs));
  if (signals.length === 0) return {};
  const combined = signals.length === 1 ? (signals[0] as AbortSignal) : AbortSignal.any(signals);
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(combined);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
