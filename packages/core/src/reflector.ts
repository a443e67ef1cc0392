// client-go's Reflector (tools/cache/reflector.go), narrowed to what the kubelet's caches need: list,
// then watch from the list's resourceVersion into a store keyed namespace/name. A watch that ends or
// breaks resumes from the last resourceVersion seen (bookmarks included) without a re-list; a 410 Gone
// lists again from the latest state; other errors back off (800 ms doubling to 30 s, jittered).
//
// core must not load @kubernetes/client-node, so only its types are imported here; the adapter for its
// Watch takes the instance as an argument.
import type { V1Status, Watch } from '@kubernetes/client-node';
import { apiErrorMessage, isGone } from './api-errors.js';
import { Backoff } from './backoff.js';
import { abortReason, realClock, type Clock } from './clock.js';
import { defaultLogger, type Logger } from './logger.js';
import { rejectOnAbort } from './wait.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** A watch event as the API server sends it; object is a T, or a V1Status for ERROR. */
export interface WatchEvent<T> {
  type: WatchEventType;
  object: T | V1Status;
}

/** The list and watch calls of a reflector (client-go's ListerWatcher); tests fake them. */
export interface ListerWatcher<T> {
  /** Lists the objects; resourceVersion '0' lets the server answer from its watch cache, '' asks for the latest. */
  list(opts: { resourceVersion: string }, signal: AbortSignal): Promise<{ items: T[]; resourceVersion: string }>;
  /**
   * Watches from resourceVersion, calling onEvent for each event. Resolves when the server ends the
   * watch; rejects on a connection or HTTP error (410 = Gone), on abort, or when onEvent throws (the
   * watch is then closed).
   */
  watch(opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void>;
}

/** What changed in a reflector's store, for onChange. */
export type StoreChange<T> =
  | { type: 'replaced'; items: T[] }
  | { type: 'added' | 'updated' | 'deleted'; key: string; object: T };

export interface ReflectorStats {
  lists: number;
  watches: number;
  /** Watch events received, bookmarks and errors included. */
  events: number;
  bookmarks: number;
  /** Watches that ended with 410 Gone (each followed by a re-list). */
  gone: number;
  /** Failed lists and watches (each followed by a backoff). */
  errors: number;
  /** Watch events of an unknown type, ignored (each logged as a warning with its type). */
  ignoredEvents: number;
  /** Store changes whose onChange handler threw (each logged as an error); the store itself was updated. */
  handlerErrors: number;
}

/** The knobs of a reflector that its users pass through (client-go's defaults when unset). */
export interface ReflectorTuning {
  /** Watches ask the server to end after a random time in [min, 2*min] (client-go: 5 min). */
  minWatchTimeoutMs?: number;
  /** Retry backoff after list/watch errors (client-go: 800 ms doubling to 30 s, jitter 1.0). */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  backoffJitter?: number;
  random?: () => number;
}

export interface ReflectorOptions<T> extends ReflectorTuning {
  listerWatcher: ListerWatcher<T>;
  /** What is reflected, for log messages (e.g. `services`, `object-"ns"/"name"`). */
  description?: string;
  clock?: Clock;
  logger?: Logger;
  /** Called after each change to the store; an exception is logged, never ends the watch. */
  onChange?: (change: StoreChange<T>) => void;
}

/** The part of an API object a reflector and an object cache key it by. */
export interface ObjectWithMeta {
  metadata?: { namespace?: string; name?: string; resourceVersion?: string };
}

/** cache.MetaNamespaceKeyFunc: `namespace/name`, or `name` for cluster-scoped objects. */
export function metaNamespaceKey(obj: ObjectWithMeta): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** The resourceVersion watched from is too old (a watch ERROR event with code 410): list again. */
class ExpiredError extends Error {
  override readonly name = 'ExpiredError';
  readonly statusCode = 410;
}

interface SyncWaiter {
  resolve(synced: boolean): void;
}

/**
 * Keeps a store of objects current by list+watch. start() runs it in the background; get()/list()
 * read the store, which is kept (and hasSynced stays true) after stop().
 */
export class Reflector<T extends ObjectWithMeta> {
  private readonly lw: ListerWatcher<T>;
  private readonly description: string;
  private readonly minWatchTimeoutMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private readonly onChange: ((change: StoreChange<T>) => void) | undefined;
  /** namespace -> name -> object; two levels so that a namespace's list does not scan everything. */
  private readonly store = new Map<string, Map<string, T>>();
  private resourceVersion = '';
  private relistFromLatest = false;
  private synced = false;
  private syncWaiters: SyncWaiter[] = [];
  private controller: AbortController | undefined;
  private loop: Promise<void> = Promise.resolve();
  private readonly counters: ReflectorStats = { lists: 0, watches: 0, events: 0, bookmarks: 0, gone: 0, errors: 0, ignoredEvents: 0, handlerErrors: 0 };

  constructor(opts: ReflectorOptions<T>) {
    this.lw = opts.listerWatcher;
    this.description = opts.description ?? 'objects';
    this.minWatchTimeoutMs = opts.minWatchTimeoutMs ?? 5 * 60_000;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ reflector: this.description });
    this.random = opts.random ?? Math.random;
    this.onChange = opts.onChange;
    this.backoff = new Backoff({
      initialMs: opts.backoffInitialMs ?? 800,
      maxMs: opts.backoffMaxMs ?? 30_000,
      // client-go's reset duration: two quiet minutes and the next failure starts from initialMs again.
      maxDurationMs: 2 * 60_000,
      jitter: opts.backoffJitter ?? 1.0,
      random: this.random,
      clock: this.clock,
    });
  }

  /** Starts listing and watching; returns at once. Aborting `signal` stops it like stop(). */
  start(signal?: AbortSignal): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    if (signal) {
      if (signal.aborted) controller.abort();
      else signal.addEventListener('abort', () => controller.abort(), { once: true });
    }
    // A restart waits for the previous run to wind down, so two runs never write the store at once.
    const previous = this.loop;
    this.loop = previous.then(() => this.run(controller.signal));
  }

  /** Stops the reflector and closes the watch; the store keeps what it had. Idempotent. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (controller) {
      this.controller = undefined;
      controller.abort();
    }
    await this.loop;
  }

  /** Whether start() was called and stop() was not. */
  isRunning(): boolean {
    return this.controller !== undefined && !this.controller.signal.aborted;
  }

  /** True once a list was stored (Go: the informer's HasSynced). */
  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * Resolves true once the store is synced, false when timeoutMs passes first or signal aborts. Go
   * polls hasSynced every 10 ms; being told is quicker and needs no timer while synced.
   */
  waitForSync(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted || timeoutMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiter: SyncWaiter = {
        resolve: (synced) => {
          timer.cancel();
          signal?.removeEventListener('abort', onAbort);
          this.syncWaiters = this.syncWaiters.filter((w) => w !== waiter);
          resolve(synced);
        },
      };
      const onAbort = (): void => waiter.resolve(false);
      const timer = this.clock.setTimeout(() => waiter.resolve(this.synced), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(waiter);
    });
  }

  get(namespace: string, name: string): T | undefined {
    return this.store.get(namespace)?.get(name);
  }

  /** The objects of a namespace; '' (or nothing) for every namespace. */
  list(namespace = ''): T[] {
    if (namespace === '') return [...this.store.values()].flatMap((byName) => [...byName.values()]);
    return [...(this.store.get(namespace)?.values() ?? [])];
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  stats(): ReflectorStats {
    return { ...this.counters };
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === '') await this.relist(signal);
        if (signal.aborted) return;
        await this.watch(signal);
        // The server ended the watch (its timeout): watch again from where we are.
        this.backoff.reset('watch');
      } catch (err) {
        if (signal.aborted) return;
        if (isGone(err)) {
          this.counters.gone++;
          this.logger.info(`Watch of ${this.description} expired (410 Gone); re-listing`, {
            resourceVersion: this.resourceVersion,
            err: apiErrorMessage(err),
          });
          this.resourceVersion = '';
          this.relistFromLatest = true;
          continue;
        }
        this.counters.errors++;
        this.backoff.next('watch');
        const delay = this.backoff.get('watch');
        this.logger.warn(`List/watch of ${this.description} failed; retrying`, {
          err: apiErrorMessage(err),
          resourceVersion: this.resourceVersion,
          retryInMs: Math.round(delay),
        });
        try {
          await this.clock.sleep(delay, signal);
        } catch {
          return;
        }
      }
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    this.counters.lists++;
    // client-go: the first list may come from the watch cache ('0'); after a 410 it asks for the latest.
    const resourceVersion = this.relistFromLatest ? '' : '0';
    const listed = await rejectOnAbort(this.lw.list({ resourceVersion }, signal), signal);
    if (signal.aborted) return;
    this.store.clear();
    for (const obj of listed.items) this.put(obj);
    this.resourceVersion = listed.resourceVersion;
    this.relistFromLatest = false;
    this.synced = true;
    this.logger.v(4).info(`Listed ${this.description}`, { count: listed.items.length, resourceVersion: listed.resourceVersion });
    this.notify({ type: 'replaced', items: listed.items });
    for (const waiter of [...this.syncWaiters]) waiter.resolve(true);
  }

  private async watch(signal: AbortSignal): Promise<void> {
    this.counters.watches++;
    // Spread the watches' ends so that many reflectors do not reconnect at once (client-go does the same).
    const timeoutSeconds = Math.floor((this.minWatchTimeoutMs * (1 + this.random())) / 1000);
    await this.lw.watch({ resourceVersion: this.resourceVersion, timeoutSeconds }, (event) => this.handleEvent(event, signal), signal);
  }

  /** Applies one watch event; throws to end the watch on an ERROR event. */
  private handleEvent(event: WatchEvent<T>, signal: AbortSignal): void {
    if (signal.aborted) return;
    this.counters.events++;
    if (event.type === 'ERROR') {
      const status = event.object as V1Status;
      if (status.code === 410) throw new ExpiredError(status.message ?? 'too old resource version');
      throw Object.assign(new Error(`watch error event: ${status.message ?? status.reason ?? 'unknown'}`), { statusCode: status.code });
    }
    const obj = event.object as T;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED': {
        const existed = this.put(obj);
        this.notify({ type: existed ? 'updated' : 'added', key: metaNamespaceKey(obj), object: obj });
        break;
      }
      case 'DELETED':
        if (this.remove(obj)) this.notify({ type: 'deleted', key: metaNamespaceKey(obj), object: obj });
        break;
      case 'BOOKMARK':
        this.counters.bookmarks++;
        break;
      default:
        this.counters.ignoredEvents++;
        this.logger.warn('Unknown watch event type; ignoring', { type: event.type });
        return;
    }
    const rv = obj.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  private notify(change: StoreChange<T>): void {
    if (!this.onChange) return;
    try {
      this.onChange(change);
    } catch (err) {
      this.counters.handlerErrors++;
      this.logger.error('Store change handler failed', err, { change: change.type });
    }
  }

  /** Stores obj; true when it replaced an object of the same key. */
  private put(obj: T): boolean {
    const namespace = obj.metadata?.namespace ?? '';
    let byName = this.store.get(namespace);
    if (!byName) {
      byName = new Map();
      this.store.set(namespace, byName);
    }
    const name = obj.metadata?.name ?? '';
    const existed = byName.has(name);
    byName.set(name, obj);
    return existed;
  }

  private remove(obj: T): boolean {
    const namespace = obj.metadata?.namespace ?? '';
    const byName = this.store.get(namespace);
    if (!byName) return false;
    const removed = byName.delete(obj.metadata?.name ?? '');
    if (byName.size === 0) this.store.delete(namespace);
    return removed;
  }
}

/** Query parameters for client-node's Watch. */
export type WatchQuery = Record<string, string | number | boolean | undefined>;

/**
 * ListerWatcher.watch over a @kubernetes/client-node Watch: watches `path` with `query` plus the
 * reflector's resourceVersion and timeoutSeconds and allowWatchBookmarks=true, turning each event's
 * object into a T with deserialize (ERROR events keep their Status). The watcher and deserialize are
 * passed in so that core never loads client-node.
 */
export function clientNodeWatch<T>(
  watcher: Pick<Watch, 'watch'>,
  path: string,
  deserialize: (obj: unknown) => T,
  query: WatchQuery = {},
): ListerWatcher<T>['watch'] {
  return (opts, onEvent, signal) =>
    new Promise<void>((resolve, reject) => {
      let settled = false;
      let controller: AbortController | undefined;
      const finish = (err: unknown): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        controller?.abort();
        if (err) reject(err);
        else resolve();
      };
      const onAbort = (): void => finish(abortReason(signal));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      watcher
        .watch(
          path,
          { ...query, resourceVersion: opts.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: opts.timeoutSeconds },
          (type: string, obj: unknown) => {
            if (settled) return;
            try {
              const t = type as WatchEventType;
              onEvent({ type: t, object: t === 'ERROR' ? (obj as V1Status) : deserialize(obj) });
            } catch (err) {
              finish(err);
            }
          },
          (err: unknown) => finish(err ?? null),
        )
        .then(
          (c) => {
            controller = c;
            // The request may have been aborted while it was being made.
            if (settled) c.abort();
          },
          (err: unknown) => finish(err),
        );
    });
}
