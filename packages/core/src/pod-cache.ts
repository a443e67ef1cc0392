import { abortReason, realClock, type Clock } from './clock.js';
import { emptyPodStatus, type PodStatus } from './runtime-model.js';

export interface PodCacheEntry {
  status: PodStatus | undefined;
  error: Error | undefined;
  /** The timestamp the entry was set with: when the runtime was asked, not when set() ran. */
  modified: number;
}

export interface PodCacheResult {
  status: PodStatus;
  error?: Error;
}

interface Subscriber {
  minTime: number;
  resolve(result: PodCacheResult): void;
}

/**
 * The runtime's pod statuses as last seen by the PLEG (Go: pkg/kubelet/container/cache.go).
 * Every entry is at least as fresh as the global timestamp set by updateTime(); a pod without
 * an entry has an empty status (the runtime knows nothing of it).
 *
 * Unlike Go, "newer than" is strict everywhere: Go's notify also wakes a waiter whose minTime
 * equals the new timestamp while its subscribe check is strict, which makes the outcome depend on
 * who came first.
 */
export class PodCache {
  private readonly entries = new Map<string, PodCacheEntry>();
  private readonly subscribers = new Map<string, Subscriber[]>();
  /** Undefined until the first full relist: before that nothing is known to be fresh. */
  private globalTimestamp: number | undefined;
  readonly clock: Clock;

  constructor(opts: { clock?: Clock } = {}) {
    this.clock = opts.clock ?? realClock;
  }

  /** The cached status, or an empty one with only the id when the pod has none. */
  get(uid: string): PodCacheResult {
    return this.result(uid);
  }

  /** Every cached status (entries stored with an error and no status are skipped). */
  getAll(): PodStatus[] {
    const statuses: PodStatus[] = [];
    for (const entry of this.entries.values()) if (entry.status) statuses.push(entry.status);
    return statuses;
  }

  /** The raw entry, for tests and debugging. */
  getEntry(uid: string): PodCacheEntry | undefined {
    return this.entries.get(uid);
  }

  /**
   * Resolves with the pod's status once it is newer than minTime: its entry was modified after
   * minTime, or a relist after minTime (updateTime) covered it. Rejects with signal.reason on abort.
   */
  getNewerThan(uid: string, minTime: number, signal?: AbortSignal): Promise<PodCacheResult> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.isNewerThan(uid, minTime)) return Promise.resolve(this.result(uid));
    return new Promise<PodCacheResult>((resolve, reject) => {
      const subscriber: Subscriber = {
        minTime,
        resolve: (result) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(result);
        },
      };
      const onAbort = (): void => {
        this.unsubscribe(uid, subscriber);
        reject(abortReason(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const list = this.subscribers.get(uid);
      if (list) list.push(subscriber);
      else this.subscribers.set(uid, [subscriber]);
    });
  }

  /**
   * Stores the status observed at timestamp and wakes waiters it satisfies. Returns false and
   * changes nothing when the existing entry is newer, so a slow inspection cannot overwrite a
   * fresher one (Go does this check for the evented PLEG).
   */
  set(uid: string, status: PodStatus | undefined, error: Error | undefined, timestamp: number): boolean {
    const existing = this.entries.get(uid);
    if (existing && existing.modified > timestamp) return false;
    this.entries.set(uid, { status, error, modified: timestamp });
    this.notify(uid);
    return true;
  }

  delete(uid: string): void {
    this.entries.delete(uid);
  }

  /** After a full relist at timestamp every pod is at least that fresh: wakes waiters it satisfies. */
  updateTime(timestamp: number): void {
    this.globalTimestamp = timestamp;
    for (const uid of [...this.subscribers.keys()]) this.notify(uid);
  }

  /** The global timestamp, undefined before the first updateTime(). */
  timestamp(): number | undefined {
    return this.globalTimestamp;
  }

  /** Number of getNewerThan calls still waiting, for tests and health checks. */
  pendingWaiters(): number {
    let count = 0;
    for (const list of this.subscribers.values()) count += list.length;
    return count;
  }

  private result(uid: string): PodCacheResult {
    const entry = this.entries.get(uid);
    const status = entry?.status ?? emptyPodStatus(uid);
    return entry?.error ? { status, error: entry.error } : { status };
  }

  /** Whether getNewerThan(uid, minTime) would resolve at once. */
  isNewerThan(uid: string, minTime: number): boolean {
    if (this.globalTimestamp !== undefined && this.globalTimestamp > minTime) return true;
    const entry = this.entries.get(uid);
    return entry !== undefined && entry.modified > minTime;
  }

  private notify(uid: string): void {
    const list = this.subscribers.get(uid);
    if (!list) return;
    const stillWaiting: Subscriber[] = [];
    for (const subscriber of list) {
      if (this.isNewerThan(uid, subscriber.minTime)) subscriber.resolve(this.result(uid));
      else stillWaiting.push(subscriber);
    }
    if (stillWaiting.length > 0) this.subscribers.set(uid, stillWaiting);
    else this.subscribers.delete(uid);
  }

  private unsubscribe(uid: string, subscriber: Subscriber): void {
    const list = this.subscribers.get(uid);
    if (!list) return;
    const remaining = list.filter((s) => s !== subscriber);
    if (remaining.length > 0) this.subscribers.set(uid, remaining);
    else this.subscribers.delete(uid);
  }
}
