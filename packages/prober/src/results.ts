// Probe results by container (Go: pkg/kubelet/prober/results).
import type { V1Pod } from '@kubernetes/client-node';

/** A stored probe result (Go: results.Result). Startup workers start at `unknown`. */
export type ProbeResult = 'success' | 'failure' | 'unknown';

/** A change of a container's result (Go: results.Update). */
export interface ResultUpdate {
  /** `type://id`, the form of V1ContainerStatus.containerID. */
  containerId: string;
  result: ProbeResult;
  podUID: string;
}

/**
 * The lookup `@kubelet-ts/runtime-manager` takes for liveness and startup results
 * (its ProbeResultLookup): undefined when there is no result yet or it is unknown.
 */
export type ProbeResultLookup = (containerId: string) => 'success' | 'failure' | undefined;

export interface ResultsManagerOptions {
  /** Updates buffered per `updates()` iterator before further ones are dropped and counted. Default 1000. */
  bufferSize?: number;
}

interface Subscriber {
  push(update: ResultUpdate): boolean;
  end(): void;
}

/**
 * Caches probe results by container id and reports changes (Go: results.Manager). `set` reports an
 * update only when the result changes. Updates reach every `updates()` iterator (each with its own
 * bounded buffer that drops and counts when full) and every `subscribe()` listener.
 */
export class ResultsManager {
  private readonly cache = new Map<string, ProbeResult>();
  private readonly subscribers = new Set<Subscriber>();
  private readonly listeners = new Set<(update: ResultUpdate) => void>();
  private readonly bufferSize: number;
  private dropped = 0;

  constructor(opts: ResultsManagerOptions = {}) {
    this.bufferSize = opts.bufferSize ?? 1000;
  }

  /** The cached result of a container (`type://id`), undefined when there is none. */
  get(containerId: string): ProbeResult | undefined {
    return this.cache.get(containerId);
  }

  /**
   * This manager as `@kubelet-ts/runtime-manager`'s ProbeResultLookup (bound; `unknown` reads as
   * undefined, "not probed yet"): `runtimeManager.setProbeResults({ liveness: prober.livenessManager.lookup })`.
   */
  readonly lookup: ProbeResultLookup = (containerId) => {
    const result = this.cache.get(containerId);
    return result === 'unknown' ? undefined : result;
  };

  /** Stores a result; reports an update when it differs from the cached one. */
  set(containerId: string, result: ProbeResult, pod: V1Pod | { uid: string }): void {
    if (this.cache.get(containerId) === result) return;
    this.cache.set(containerId, result);
    const podUID = 'uid' in pod ? pod.uid : (pod.metadata?.uid ?? '');
    this.publish({ containerId, result, podUID });
  }

  /** Forgets a container's result (no update). */
  remove(containerId: string): void {
    this.cache.delete(containerId);
  }

  /** Number of containers with a result. */
  get size(): number {
    return this.cache.size;
  }

  /** Updates dropped because an iterator's buffer was full. */
  get droppedUpdates(): number {
    return this.dropped;
  }

  /** Calls the listener synchronously for every later update; returns the unsubscribe function. */
  subscribe(listener: (update: ResultUpdate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every later update, until the signal aborts or close() is called. */
  updates(signal?: AbortSignal): AsyncIterable<ResultUpdate> {
    const queue: ResultUpdate[] = [];
    let waiting: ((r: IteratorResult<ResultUpdate>) => void) | undefined;
    let ended = false;
    const sub: Subscriber = {
      push: (update) => {
        if (ended) return true;
        if (waiting) {
          const w = waiting;
          waiting = undefined;
          w({ value: update, done: false });
          return true;
        }
        if (queue.length >= this.bufferSize) return false;
        queue.push(update);
        return true;
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.subscribers.delete(sub);
        signal?.removeEventListener('abort', sub.end);
        if (waiting) {
          const w = waiting;
          waiting = undefined;
          w({ value: undefined, done: true });
        }
      },
    };
    if (signal?.aborted) ended = true;
    else {
      this.subscribers.add(sub);
      signal?.addEventListener('abort', sub.end, { once: true });
    }
    const iterator: AsyncIterator<ResultUpdate> = {
      next: () => {
        if (queue.length > 0) return Promise.resolve({ value: queue.shift() as ResultUpdate, done: false });
        if (ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (waiting = resolve));
      },
      return: () => {
        sub.end();
        queue.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
    return { [Symbol.asyncIterator]: () => iterator };
  }

  /** Ends every updates() iterator. */
  close(): void {
    for (const sub of [...this.subscribers]) sub.end();
  }

  private publish(update: ResultUpdate): void {
    for (const sub of this.subscribers) if (!sub.push(update)) this.dropped++;
    for (const listener of this.listeners) {
      try {
        listener(update);
      } catch {
        // A listener's failure is its own; the probe workers go on.
      }
    }
  }
}
