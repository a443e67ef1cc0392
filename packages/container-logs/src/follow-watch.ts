import { stat as statCallback, watch, type FSWatcher, type Stats } from 'node:fs';
import { basename, dirname } from 'node:path';
import { abortReason, errorText, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';

/** Why a follower's wait ended: the log changed (or may have), or its container's state is due to be checked. */
export type WakeReason = 'change' | 'state';

/** What a waiting follower has read so far: the tick wakes it only when the file at its path differs. */
export interface FollowPosition {
  /** Offset of the next byte the follower reads. */
  position: number;
  /** Identity of the file the follower has open. */
  ino: number;
  dev: number;
  /** clock.now() at which its container's state is due to be checked again. */
  stateDueAt: number;
}

export interface FollowHubOptions {
  clock: Clock;
  /** Go's logForceCheckPeriod: how often the shared tick looks at the waiting followers' files. */
  pollMs: number;
  /** Default node:fs watch. */
  watch?: (dir: string, listener: (event: string, filename: string | Buffer | null) => void) => FSWatcher;
  /** Default node:fs stat. */
  stat?: (path: string, callback: (err: NodeJS.ErrnoException | null, stats: Stats) => void) => void;
}

interface Waiting extends FollowPosition {
  resolve: (reason: WakeReason) => void;
}

/** One follower's subscription to changes of one log path. */
export class LogFollower {
  /** A change seen while not waiting: the next wait returns at once. */
  private pending = false;
  /** @internal */
  waiting: Waiting | undefined;
  private closed = false;

  /** @internal */
  constructor(
    private readonly hub: FollowHub,
    readonly path: string,
    /** @internal */
    readonly dir: DirWatch,
    readonly logger: Logger,
  ) {}

  /** @internal */
  wake(reason: WakeReason): void {
    const waiting = this.waiting;
    if (!waiting) {
      if (reason === 'change') this.pending = true;
      return;
    }
    this.hub.stopWaiting(this);
    waiting.resolve(reason);
  }

  /**
   * Resolves 'change' on a watch event for the file (or one seen since the last wait) or when the shared tick finds
   * the file at the path grown, shrunk or replaced; 'state' when the tick finds the state check due. Rejects when
   * the signal aborts.
   */
  wait(at: FollowPosition, signal: AbortSignal | undefined): Promise<WakeReason> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.closed) return Promise.resolve('change');
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('change');
    }
    return new Promise<WakeReason>((resolve, reject) => {
      const onAbort = (): void => {
        this.hub.stopWaiting(this);
        reject(abortReason(signal as AbortSignal));
      };
      this.waiting = {
        ...at,
        resolve: (reason) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(reason);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.hub.startWaiting(this);
    });
  }

  /** Ends the subscription: the directory watch closes with its last follower, the tick with its last waiter. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.hub.unsubscribe(this);
  }
}

/** @internal The watch on one directory, shared by the followers of every log in it. */
export interface DirWatch {
  dir: string;
  watcher: FSWatcher | undefined;
  /** Followers by file name. */
  byName: Map<string, Set<LogFollower>>;
}

/**
 * Wakes log followers on changes to their files: one fs.watch per directory (which also sees a log being replaced on
 * rotation) shared by all followers in it, plus Go's force check as one shared tick on the clock. The tick stats each
 * waiting path once and wakes only the followers whose file grew, shrank or was replaced, so idle followers cost one
 * stat per log per tick, not a read, two stats and a timer each. The tick runs only while someone waits.
 */
export class FollowHub {
  private readonly dirs = new Map<string, DirWatch>();
  private readonly waiters = new Set<LogFollower>();
  private timer: TimerHandle | undefined;
  private readonly statsInFlight = new Set<string>();
  private readonly watchFn: NonNullable<FollowHubOptions['watch']>;
  private readonly statFn: NonNullable<FollowHubOptions['stat']>;
  /** Counters for tests and benches: ticks run, stats of paths done by ticks, followers woken by ticks and by watch events. */
  readonly counts = { ticks: 0, stats: 0, tickWakes: 0, eventWakes: 0 };

  constructor(private readonly options: FollowHubOptions) {
    this.watchFn = options.watch ?? ((dir, listener) => watch(dir, listener));
    this.statFn = options.stat ?? statCallback;
  }

  /** Starts watching path's directory (if no follower does yet). */
  subscribe(path: string, logger: Logger): LogFollower {
    const dirPath = dirname(path);
    const name = basename(path);
    let dir = this.dirs.get(dirPath);
    if (!dir) {
      dir = { dir: dirPath, watcher: undefined, byName: new Map() };
      this.dirs.set(dirPath, dir);
      this.startWatch(dir, logger);
    }
    const follower = new LogFollower(this, path, dir, logger);
    let set = dir.byName.get(name);
    if (!set) dir.byName.set(name, (set = new Set()));
    set.add(follower);
    return follower;
  }

  /** Followers waiting, for tests. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Followers subscribed, for tests. */
  get followers(): number {
    let n = 0;
    for (const dir of this.dirs.values()) for (const set of dir.byName.values()) n += set.size;
    return n;
  }

  private startWatch(dir: DirWatch, logger: Logger): void {
    try {
      const watcher = this.watchFn(dir.dir, (_event, filename) => this.onEvent(dir, filename));
      watcher.on('error', (err) => {
        // Go gives up after a few watch errors; the tick keeps following correct, only slower.
        if (dir.watcher !== watcher) return;
        watcher.close();
        dir.watcher = undefined;
        for (const set of dir.byName.values()) {
          for (const follower of set) {
            follower.logger.warn('Log file watch failed; polling instead', { path: follower.path, err: errorText(err) });
            follower.wake('change');
          }
        }
      });
      dir.watcher = watcher;
    } catch (err) {
      logger.warn('Cannot watch log file; polling instead', { path: dir.dir, err: errorText(err) });
    }
  }

  private onEvent(dir: DirWatch, filename: string | Buffer | null): void {
    if (this.dirs.get(dir.dir) !== dir) return;
    const wake = (set: Set<LogFollower>): void => {
      for (const follower of set) {
        if (follower.waiting) this.counts.eventWakes++;
        follower.wake('change');
      }
    };
    if (!filename) {
      for (const set of dir.byName.values()) wake(set);
      return;
    }
    const set = dir.byName.get(filename.toString());
    if (set) wake(set);
  }

  /** @internal */
  unsubscribe(follower: LogFollower): void {
    this.stopWaiting(follower);
    const { dir } = follower;
    const name = basename(follower.path);
    const set = dir.byName.get(name);
    set?.delete(follower);
    if (set?.size === 0) dir.byName.delete(name);
    if (dir.byName.size === 0 && this.dirs.get(dir.dir) === dir) {
      dir.watcher?.close();
      dir.watcher = undefined;
      this.dirs.delete(dir.dir);
    }
  }

  /** @internal */
  startWaiting(follower: LogFollower): void {
    this.waiters.add(follower);
    this.timer ??= this.options.clock.setTimeout(() => this.tick(), this.options.pollMs);
  }

  /** @internal */
  stopWaiting(follower: LogFollower): void {
    follower.waiting = undefined;
    this.waiters.delete(follower);
    if (this.waiters.size === 0 && this.timer) {
      this.timer.cancel();
      this.timer = undefined;
    }
  }

  /** Go's force check, once for every waiting follower: one stat per path. */
  private tick(): void {
    this.timer = undefined;
    this.counts.ticks++;
    const now = this.options.clock.now();
    const byPath = new Map<string, LogFollower[]>();
    for (const follower of this.waiters) {
      let list = byPath.get(follower.path);
      if (!list) byPath.set(follower.path, (list = []));
      list.push(follower);
    }
    for (const [path, followers] of byPath) {
      if (this.statsInFlight.has(path)) continue;
      this.statsInFlight.add(path);
      this.statFn(path, (err, st) => {
        this.statsInFlight.delete(path);
        this.counts.stats++;
        for (const follower of followers) {
          const at = follower.waiting;
          if (!at) continue;
          // A missing path (renamed, the new file not there yet) wakes the follower to read on in the old file.
          const changed = err !== null || st.ino !== at.ino || st.dev !== at.dev || st.size !== at.position;
          if (changed || now >= at.stateDueAt) {
            this.counts.tickWakes++;
            follower.wake(changed ? 'change' : 'state');
          }
        }
      });
    }
    if (this.waiters.size > 0) this.timer = this.options.clock.setTimeout(() => this.tick(), this.options.pollMs);
  }
}

const hubs = new WeakMap<Clock, Map<number, FollowHub>>();

/** The hub all followers on this clock with this force-check period share. */
export function followHub(clock: Clock, pollMs: number): FollowHub {
  let byPeriod = hubs.get(clock);
  if (!byPeriod) hubs.set(clock, (byPeriod = new Map()));
  let hub = byPeriod.get(pollMs);
  if (!hub) byPeriod.set(pollMs, (hub = new FollowHub({ clock, pollMs })));
  return hub;
}
