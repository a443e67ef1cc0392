import { statSync, watch as fsWatch, type FSWatcher } from 'node:fs';
import { lstat, readFile, readdir, stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { Backoff, deepEqual, forEachLimit, PodOperation, PodSource, defaultLogger, realClock, type Clock, type Logger, type PodSourceName, type TimerHandle } from '@kubelet-ts/core';
import type { PodUpdateSink } from './config.js';
import { abortable } from './util.js';
import { decodeSinglePodManifest } from './static-pod.js';

/** Manifest extensions read from a directory. */
export const manifestExtensions = ['.yaml', '.yml', '.json'];

export interface FileSourceOptions {
  /** A manifest file or a directory of manifests (staticPodPath). */
  path: string;
  nodeName: string;
  /** Where SET snapshots go, usually podConfig.channel('file'). */
  sink: PodUpdateSink;
  /** Re-list period (fileCheckFrequency). Default 20 s. */
  periodMs?: number;
  /** Watch the path for changes with fs.watch. Default true; without it only the re-list sees changes. */
  watch?: boolean;
  /** First delay before retrying a watch that failed (Go: 1 s); doubles up to maxWatchRetryMs (20 s). */
  watchRetryMs?: number;
  maxWatchRetryMs?: number;
  /** Source name on the updates and in config.source. Default 'file'. */
  source?: PodSourceName;
  clock?: Clock;
  logger?: Logger;
  /** Files read at once during a re-list. Default 32. */
  readConcurrency?: number;
}

interface FileEntry {
  /** The last pod this file gave (kept while the file fails to parse, e.g. while half written). */
  pod?: V1Pod;
  /** dev/ino/size/mtime/ctime when last read; a re-list skips files whose stat did not change. */
  statKey?: string;
  /** The last error message logged for this file, to log each distinct error once. */
  lastError?: string;
  /** Set while this file's pod is ignored because an earlier file has the same namespace/name. */
  duplicateOf?: string;
}

type PathKind = 'dir' | 'file' | 'missing' | 'other';

/** FileSource.stats(): counters since construction, and the files skipped now. */
export interface FileSourceStats {
  /** Lists of the whole path (at start, every periodMs, relist(), after a watch error). */
  relists: number;
  /** Manifest files read (a re-list skips files whose stat did not change). */
  fileReads: number;
  /** fs.watch events. */
  events: number;
  /** SET updates sent. */
  sets: number;
  /**
   * Manifest errors reported: a file that could not be read, did not parse or validate, or defines the
   * same pod as an earlier file. Each is one error line naming the file; a file that keeps failing
   * with the same error is counted (and logged at error level) once.
   */
  invalidManifests: number;
  /**
   * Files whose current content is skipped right now because of such an error (a pod a file gave
   * before it broke is still offered); fixing or deleting a file takes it off this count.
   */
  skippedFiles: number;
}

/**
 * Go's sourceFile: static pods from a manifest file or a directory of `.yaml`, `.yml` and `.json`
 * manifests (one pod per file, hidden files ignored, no recursion). Watches with fs.watch and
 * re-lists every periodMs so missed events heal; emits a SET of all the path's pods whenever they
 * change (and once at start, empty if the path is missing, so the source counts as seen).
 *
 * A file that fails to parse or validate is reported once (naming the file and the field) and
 * skipped; if it gave a pod before, that pod is kept until the file is fixed or deleted — a half
 * written file is simply read again on the next event or re-list.
 */
export class FileSource {
  readonly path: string;
  readonly source: PodSourceName;
  private readonly nodeName: string;
  private readonly sink: PodUpdateSink;
  private readonly periodMs: number;
  private readonly useWatch: boolean;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly readConcurrency: number;
  private readonly watchBackoff: Backoff;

  private readonly entries = new Map<string, FileEntry>();
  private version = 0;
  private emittedVersion = -1;
  private chain: Promise<void> = Promise.resolve();
  private controller: AbortController | undefined;
  private relistTimer: TimerHandle | undefined;
  private watchRetryTimer: TimerHandle | undefined;
  private watcher: FSWatcher | undefined;
  private watchedIno: number | undefined;
  private readonly pendingFiles = new Set<string>();
  private pendingRelist = false;
  private drainScheduled = false;
  private loggedNoRecurse = new Set<string>();
  private readonly counters = { relists: 0, fileReads: 0, events: 0, sets: 0, invalidManifests: 0 };

  constructor(opts: FileSourceOptions) {
    // Go trims trailing separators (inotify wants none); keep "/" itself.
    this.path = opts.path.length > 1 ? opts.path.replace(/\/+$/, '') || '/' : opts.path;
    this.nodeName = opts.nodeName;
    this.sink = opts.sink;
    this.periodMs = opts.periodMs ?? 20_000;
    this.useWatch = opts.watch ?? true;
    this.source = opts.source ?? PodSource.File;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ source: this.source });
    this.readConcurrency = opts.readConcurrency ?? 32;
    this.watchBackoff = new Backoff({ initialMs: opts.watchRetryMs ?? 1000, maxMs: opts.maxWatchRetryMs ?? 20_000, clock: this.clock });
  }

  /** Lists the path now, then watches it and re-lists every periodMs. Returns at once. */
  start(): void {
    if (this.controller) return;
    this.controller = new AbortController();
    this.logger.v(1).info('Watching path', { path: this.path });
    this.requestRelist();
    this.relistTimer = this.clock.setInterval(() => this.requestRelist(), this.periodMs);
    if (this.useWatch) this.startWatch();
  }

  /** Stops watching and re-listing; resolves when the operation in progress (if any) finished. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    controller.abort();
    this.relistTimer?.cancel();
    this.watchRetryTimer?.cancel();
    this.closeWatcher();
    await this.chain;
    this.controller = undefined;
  }

  /**
   * Re-lists now (as the periodic timer does) and resolves once that list was processed and sent.
   * With reread, every file is read again even if its stat did not change.
   */
  relist(opts: { reread?: boolean } = {}): Promise<void> {
    if (opts.reread) for (const entry of this.entries.values()) entry.statKey = undefined;
    this.requestRelist();
    return this.chain;
  }

  /** Resolves once the work queued so far (lists, file events, sends) is done. */
  settled(): Promise<void> {
    return this.chain;
  }

  /** The pods this source currently offers, in file name order. */
  pods(): V1Pod[] {
    return this.collectPods(false);
  }

  /** Whether fs.watch is active right now. */
  isWatching(): boolean {
    return this.watcher !== undefined;
  }

  stats(): FileSourceStats {
    let skippedFiles = 0;
    for (const entry of this.entries.values()) if (entry.lastError !== undefined || entry.duplicateOf !== undefined) skippedFiles++;
    return { ...this.counters, skippedFiles };
  }

  private get stopped(): boolean {
    return this.controller === undefined || this.controller.signal.aborted;
  }

  private requestRelist(): void {
    if (this.stopped) return;
    this.pendingRelist = true;
    this.scheduleDrain();
  }

  private requestFile(name: string): void {
    if (this.stopped) return;
    this.pendingFiles.add(name);
    this.scheduleDrain();
  }

  /** Queues one pass over what is pending; events that arrive meanwhile are coalesced into the next pass. */
  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    this.chain = this.chain.then(async () => {
      this.drainScheduled = false;
      if (this.stopped) return;
      try {
        await this.drain();
      } catch (err) {
        this.logger.error('Unable to read config path', err, { path: this.path });
      }
    });
  }

  private async drain(): Promise<void> {
    if (this.pendingRelist) {
      this.pendingRelist = false;
      this.pendingFiles.clear();
      await this.listConfig();
    } else if (this.pendingFiles.size > 0) {
      const names = [...this.pendingFiles];
      this.pendingFiles.clear();
      const kind = await this.pathKind();
      if (kind === 'dir') {
        // As in a re-list, files are read concurrently: a burst of new manifests lands in one update sooner.
        await forEachLimit(names, this.readConcurrency, (name) => this.readFileEntry(join(this.path, name), false));
      } else if (kind === 'file') {
        await this.readFileEntry(this.path, false);
      } else {
        await this.listConfig();
      }
    }
    await this.emitIfChanged();
  }

  private async pathKind(): Promise<PathKind> {
    try {
      const st = await stat(this.path);
      if (st.isDirectory()) return 'dir';
      if (st.isFile()) return 'file';
      return 'other';
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
      throw err;
    }
  }

  /** Go's listConfig/resetStoreFromPath: reads the whole path. */
  private async listConfig(): Promise<void> {
    this.counters.relists++;
    let st;
    try {
      st = await stat(this.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // An empty SET still goes out, so the source is marked seen.
      if (this.entries.size > 0) this.version++;
      this.entries.clear();
      if (this.emittedVersion === -1) this.version++;
      this.logger.v(4).info('Config path does not exist, ignoring', { path: this.path });
      if (this.watcher) {
        this.closeWatcher();
        this.scheduleWatchRetry(false);
      }
      return;
    }
    if (this.useWatch && this.watcher && this.watchedIno !== undefined && st.isDirectory() && st.ino !== this.watchedIno) {
      // The directory was replaced: the watch follows the old inode.
      this.logger.info('Config directory was replaced; watching it again', { path: this.path });
      this.closeWatcher();
      this.startWatch();
    } else if (this.useWatch && !this.watcher && !this.watchRetryTimer) {
      this.startWatch();
    }
    if (st.isDirectory()) {
      const names = await this.manifestNames();
      const present = new Set(names.map((n) => join(this.path, n)));
      for (const file of [...this.entries.keys()]) {
        if (!present.has(file)) {
          if (this.entries.get(file)?.pod) this.version++;
          this.entries.delete(file);
        }
      }
      await forEachLimit([...present], this.readConcurrency, (file) => this.readFileEntry(file, true));
    } else if (st.isFile()) {
      for (const file of [...this.entries.keys()]) if (file !== this.path) this.entries.delete(file);
      await this.readFileEntry(this.path, true);
    } else {
      throw new Error('path is not a directory or file');
    }
    if (this.emittedVersion === -1 && this.version === 0) this.version++;
  }

  /** Non-hidden manifest names in the directory, sorted as Go sorts its glob. */
  private async manifestNames(): Promise<string[]> {
    const dirents = await readdir(this.path, { withFileTypes: true });
    const names: string[] = [];
    for (const d of dirents) {
      if (!isManifestName(d.name)) continue;
      if (d.isDirectory()) {
        if (!this.loggedNoRecurse.has(d.name)) {
          this.loggedNoRecurse.add(d.name);
          this.logger.warn('Not recursing into manifest path', { path: join(this.path, d.name) });
        }
        continue;
      }
      names.push(d.name);
    }
    return names.sort();
  }

  /**
   * Reads one manifest into its entry. With useCache an unchanged stat skips the read (re-lists);
   * watch events always read.
   */
  private async readFileEntry(file: string, useCache: boolean): Promise<void> {
    if (file !== this.path && !isManifestName(basename(file))) return;
    let st;
    try {
      st = await stat(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        const entry = this.entries.get(file);
        if (entry?.pod) this.version++;
        // A symlink whose target is gone is still in the directory: Go reports it ("Could not get metadata"), once.
        if ((await lstat(file).catch(() => undefined))?.isSymbolicLink()) {
          if (entry) entry.pod = undefined;
          this.reportError(file, "Can't get metadata for manifest file", err);
        } else {
          this.entries.delete(file);
        }
        return;
      }
      this.reportError(file, "Can't get metadata for manifest file", err);
      return;
    }
    if (!st.isFile()) {
      if (this.entries.get(file)?.pod) this.version++;
      this.entries.delete(file);
      if (st.isDirectory() && !this.loggedNoRecurse.has(basename(file))) {
        this.loggedNoRecurse.add(basename(file));
        this.logger.warn('Not recursing into manifest path', { path: file });
      }
      return;
    }
    const statKey = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    let entry = this.entries.get(file);
    if (useCache && entry?.statKey === statKey) return;
    let data: string;
    try {
      data = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        if (entry?.pod) this.version++;
        this.entries.delete(file);
        return;
      }
      this.reportError(file, "Can't read manifest file", err, statKey);
      return;
    }
    this.counters.fileReads++;
    if (!entry) {
      entry = {};
      this.entries.set(file, entry);
    }
    entry.statKey = statKey;
    const result = decodeSinglePodManifest(data, { kind: 'file', location: file, nodeName: this.nodeName, source: this.source });
    if (result.errors.length > 0) {
      const err = result.errors[0];
      const keeping = entry.pod !== undefined;
      if (entry.lastError !== err.message) {
        entry.lastError = err.message;
        this.counters.invalidManifests++;
        this.logger.error(
          keeping ? "Can't process manifest file; keeping the pod it gave before" : "Can't process manifest file; skipping it",
          err,
          { path: file },
        );
      } else {
        this.logger.v(4).info("Can't process manifest file (unchanged)", { path: file, err: err.message });
      }
      return;
    }
    if (entry.lastError !== undefined) {
      this.logger.info('Manifest file is valid again', { path: file });
      entry.lastError = undefined;
    }
    const pod = result.pods[0];
    if (!entry.pod || !deepEqual(entry.pod, pod)) {
      entry.pod = pod;
      this.version++;
    }
  }

  /**
   * A file that could not be stat'ed or read: logged once per distinct error and counted. With its
   * stat, a re-list does not try it again until the file changes (e.g. its mode is fixed).
   */
  private reportError(file: string, what: string, err: unknown, statKey?: string): void {
    let entry = this.entries.get(file);
    if (!entry) {
      entry = {};
      this.entries.set(file, entry);
    }
    entry.statKey = statKey;
    const text = err instanceof Error ? err.message : String(err);
    if (entry.lastError === text) {
      this.logger.v(4).info(`${what} (unchanged)`, { path: file, err: text });
      return;
    }
    entry.lastError = text;
    this.counters.invalidManifests++;
    this.logger.error(`${what}; ${entry.pod !== undefined ? 'keeping the pod it gave before' : 'skipping it'}`, err, { path: file });
  }

  /** The pods in file name order, first file winning a namespace/name (the others reported once). */
  private collectPods(report: boolean): V1Pod[] {
    const byKey = new Map<string, string>();
    const pods: V1Pod[] = [];
    const files = [...this.entries.keys()].sort();
    for (const file of files) {
      const entry = this.entries.get(file) as FileEntry;
      if (!entry.pod) continue;
      const key = `${entry.pod.metadata?.namespace}/${entry.pod.metadata?.name}`;
      const first = byKey.get(key);
      if (first !== undefined) {
        if (report && entry.duplicateOf !== first) {
          entry.duplicateOf = first;
          this.counters.invalidManifests++;
          this.logger.error('Manifest file defines the same pod as an earlier file; ignoring it', undefined, {
            path: file,
            pod: key,
            firstPath: first,
          });
        }
        continue;
      }
      if (report) entry.duplicateOf = undefined;
      byKey.set(key, file);
      pods.push(entry.pod);
    }
    return pods;
  }

  private async emitIfChanged(): Promise<void> {
    if (this.version === this.emittedVersion || this.stopped) return;
    this.emittedVersion = this.version;
    const pods = this.collectPods(true);
    this.counters.sets++;
    await abortable(this.sink({ op: PodOperation.SET, pods, source: this.source }), (this.controller as AbortController).signal);
  }

  private startWatch(): void {
    if (this.stopped || this.watcher) return;
    this.watchRetryTimer = undefined;
    let isDir: boolean;
    let ino: number;
    try {
      const st = statSync(this.path);
      isDir = st.isDirectory();
      ino = st.ino;
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
      if (!missing) this.logger.error('Unable to watch config path', err, { path: this.path });
      this.scheduleWatchRetry(!missing);
      return;
    }
    // A file path is watched through its directory: fs.watch on the file would follow its inode
    // and miss an editor's write-to-temp-then-rename.
    const watchDir = isDir ? this.path : dirname(this.path);
    const fileFilter = isDir ? undefined : basename(this.path);
    try {
      const watcher = fsWatch(watchDir, { persistent: true }, (_event, filename) => {
        this.counters.events++;
        const name = filename === null ? null : String(filename);
        if (fileFilter !== undefined) {
          if (name === null || name === fileFilter) this.requestFile(fileFilter);
          return;
        }
        if (name === null || name === basename(this.path)) {
          // Unknown file, or the directory itself went away (inotify reports it by its own name).
          this.requestRelist();
          return;
        }
        if (!isManifestName(name)) {
          this.logger.v(4).info('Ignored pod manifest event', { path: name });
          return;
        }
        this.requestFile(name);
      });
      watcher.on('error', (err) => {
        this.logger.error('Error while watching config path', err, { path: this.path });
        this.closeWatcher();
        this.requestRelist();
        this.scheduleWatchRetry(true);
      });
      this.watcher = watcher;
      this.watchedIno = isDir ? ino : undefined;
      this.watchBackoff.reset('watch');
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
      if (!missing) this.logger.error('Unable to watch config path', err, { path: this.path });
      this.scheduleWatchRetry(!missing);
    }
  }

  /** Go retries the watch every second while the path is missing, and backs off on other errors. */
  private scheduleWatchRetry(backoff: boolean): void {
    if (this.stopped || this.watchRetryTimer) return;
    let delay = this.watchBackoff.get('watch') || 1000;
    if (backoff) {
      this.watchBackoff.next('watch');
      delay = this.watchBackoff.get('watch');
    } else {
      delay = Math.min(delay, 1000);
    }
    this.watchRetryTimer = this.clock.setTimeout(() => {
      this.watchRetryTimer = undefined;
      if (this.stopped) return;
      this.startWatch();
      // Whatever changed while nobody watched is picked up by a list.
      if (this.watcher) this.requestRelist();
    }, delay);
  }

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.watchedIno = undefined;
  }
}

function isManifestName(name: string): boolean {
  return !name.startsWith('.') && manifestExtensions.includes(extname(name).toLowerCase());
}

