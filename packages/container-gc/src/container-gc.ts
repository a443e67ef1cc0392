// The kubelet's container garbage collector (Go: kubecontainer.realContainerGC over
// kuberuntime.containerGC, plus the container GC loop of Kubelet.StartGarbageCollection).
import { join } from 'node:path';
import type { V1ObjectReference } from '@kubernetes/client-node';
import {
  DEFAULT_POD_LOGS_ROOT_DIRECTORY,
  errorText,
  isNotExist,
  KubeletEventReason,
  noopEventRecorder,
  defaultLogger,
  realClock,
  until,
  type Clock,
  type EventRecorder,
  type Logger,
} from '@kubelet-ts/core';
import { isNotFound, type RuntimeService } from '@kubelet-ts/cri-client';
import {
  evictableContainers,
  parsePodUIDFromLogsDirectory,
  planContainerEviction,
  planSandboxEviction,
  type ContainerGCInfo,
  type PodStateProvider,
  type SandboxGCInfo,
} from './evict.js';
import { nodeGCFs, type ContainerGCFs } from './fs.js';
import { containerGCPolicyWithDefaults, validateContainerGCPolicy, type ContainerGCPolicy } from './policy.js';

/** Go: ContainerGCPeriod. */
export const CONTAINER_GC_PERIOD_MS = 60 * 1000;

/** Go: kubecontainer.GC. */
export interface ContainerGarbageCollector {
  /** One GC pass (Go: GC.GarbageCollect, i.e. evictNonDeletedPods = false). */
  garbageCollect(allSourcesReady: boolean, evictNonDeletedPods: boolean): Promise<void>;
  /** Removes every dead container of terminated pods too, for eviction (Go: DeleteAllUnusedContainers). */
  deleteAllUnusedContainers(): Promise<void>;
  /** Runs garbageCollect(allSourcesReady(), false) every minute. Returns at once. */
  start(allSourcesReady?: () => boolean): void;
  stop(): Promise<void>;
}

/** What one GC pass removed (also passed to onRemoved as it happens). */
export interface ContainerGCResult {
  containers: string[];
  sandboxes: string[];
  podLogDirectories: string[];
}

export interface ContainerGCOptions {
  runtimeService: RuntimeService;
  /** The pod workers (Go: podStateProvider); @kubelet-ts/pod-workers' PodWorkers fits. */
  podStateProvider: PodStateProvider;
  /** Missing fields take Go's defaults (minAge 0, 1 per container, no node limit). */
  policy?: Partial<ContainerGCPolicy>;
  /** Where pod log directories live (Go: --pod-logs-dir). Default /var/log/pods. */
  podLogsRootDirectory?: string;
  /** Whether all pod sources have reported, for deleteAllUnusedContainers and start(). Default: always. */
  allSourcesReady?: () => boolean;
  clock?: Clock;
  logger?: Logger;
  recorder?: EventRecorder;
  /** The object ContainerGCFailed events are reported on. Default `{ kind: 'Node', name: '' }`. */
  nodeRef?: V1ObjectReference;
  fs?: ContainerGCFs;
  /**
   * Stops a container in unknown state before its removal (Go: cgc.manager.killContainer with no
   * pod). Reading the pod's grace period and preStop hook back from the container's annotations is
   * the runtime manager's job, so the GC asks it; with @kubelet-ts/runtime-manager:
   * `(c, message) => manager.killContainer(undefined, { type: manager.type(), id: c.id }, c.name, message, 'Unknown')`.
   */
  killContainer: (container: ContainerGCInfo, message: string) => Promise<void>;
  /** Remove a container's log file with it (Go: removeContainerLog). Default true. */
  removeContainerLogs?: boolean;
  /** Period of the loop started by start(). Default 1 min (Go: ContainerGCPeriod). */
  periodMs?: number;
  onRemoved?: (kind: 'container' | 'sandbox' | 'podLogDirectory', id: string) => void;
}

/** Go: kuberuntime.containerGC + kubecontainer.realContainerGC. */
export class ContainerGC implements ContainerGarbageCollector {
  readonly policy: Readonly<ContainerGCPolicy>;
  readonly podLogsRootDirectory: string;
  private readonly runtimeService: RuntimeService;
  private readonly podStateProvider: PodStateProvider;
  private allSourcesReady: () => boolean;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private readonly nodeRef: V1ObjectReference;
  private readonly fs: ContainerGCFs;
  private readonly killContainerFn: (container: ContainerGCInfo, message: string) => Promise<void>;
  private readonly removeContainerLogs: boolean;
  private readonly periodMs: number;
  private readonly onRemoved: ContainerGCOptions['onRemoved'];

  private tail: Promise<unknown> = Promise.resolve();
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private loggedFailure = false;

  constructor(opts: ContainerGCOptions) {
    const policy = containerGCPolicyWithDefaults(opts.policy);
    validateContainerGCPolicy(policy);
    this.policy = Object.freeze(policy);
    this.runtimeService = opts.runtimeService;
    this.podStateProvider = opts.podStateProvider;
    this.podLogsRootDirectory = opts.podLogsRootDirectory ?? DEFAULT_POD_LOGS_ROOT_DIRECTORY;
    this.allSourcesReady = opts.allSourcesReady ?? (() => true);
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.nodeRef = opts.nodeRef ?? { kind: 'Node', name: '' };
    this.fs = opts.fs ?? nodeGCFs;
    this.killContainerFn = opts.killContainer;
    this.removeContainerLogs = opts.removeContainerLogs ?? true;
    this.periodMs = opts.periodMs ?? CONTAINER_GC_PERIOD_MS;
    this.onRemoved = opts.onRemoved;
  }

  start(allSourcesReady?: () => boolean): void {
    if (this.abort) return;
    if (allSourcesReady) this.allSourcesReady = allSourcesReady;
    const abort = new AbortController();
    this.abort = abort;
    const signal = abort.signal;
    this.loop = until(() => this.loopOnce(signal), this.periodMs, signal, this.clock, { logger: this.logger, name: 'container-gc' });
  }

  async stop(): Promise<void> {
    const abort = this.abort;
    if (!abort) return;
    abort.abort();
    await this.loop;
    await this.tail.catch(() => undefined);
    this.loop = undefined;
    this.abort = undefined;
  }

  /** One round of the kubelet's container GC loop: logs, and a ContainerGCFailed event on failure. */
  private async loopOnce(signal: AbortSignal): Promise<void> {
    try {
      await this.run(this.allSourcesReady(), false, signal);
    } catch (err) {
      if (signal.aborted) return;
      this.logger.error('Container garbage collection failed', err);
      this.recorder.event(this.nodeRef, 'Warning', KubeletEventReason.ContainerGCFailed, errorText(err));
      this.loggedFailure = true;
      return;
    }
    const level = this.loggedFailure ? 1 : 4;
    this.loggedFailure = false;
    this.logger.v(level).info('Container garbage collection succeeded');
  }

  async garbageCollect(allSourcesReady: boolean, evictNonDeletedPods: boolean): Promise<void> {
    await this.run(allSourcesReady, evictNonDeletedPods, this.abort?.signal);
  }

  /** Like garbageCollect, resolving with what was removed. */
  garbageCollectWithResult(allSourcesReady: boolean, evictNonDeletedPods: boolean): Promise<ContainerGCResult> {
    return this.run(allSourcesReady, evictNonDeletedPods, this.abort?.signal);
  }

  async deleteAllUnusedContainers(): Promise<void> {
    this.logger.info('Attempting to delete unused containers');
    await this.run(this.allSourcesReady(), true, this.abort?.signal);
  }

  /**
   * Go: containerGC.GarbageCollect. Removes evictable containers, then sandboxes without containers,
   * then the log directories of removed pods; errors of the three steps are aggregated.
   */
  private run(allSourcesReady: boolean, evictNonDeletedPods: boolean, signal: AbortSignal | undefined): Promise<ContainerGCResult> {
    return this.serialized(async () => {
      const result: ContainerGCResult = { containers: [], sandboxes: [], podLogDirectories: [] };
      const errors: unknown[] = [];
      try {
        result.containers = await this.evictContainers(allSourcesReady, evictNonDeletedPods, signal);
      } catch (err) {
        errors.push(err);
      }
      try {
        result.sandboxes = await this.evictSandboxes(evictNonDeletedPods, signal);
      } catch (err) {
        errors.push(err);
      }
      try {
        result.podLogDirectories = await this.evictPodLogsDirectories(allSourcesReady);
      } catch (err) {
        errors.push(err);
      }
      if (errors.length > 0) throw aggregateError(errors);
      return result;
    });
  }

  /** Go: evictContainers. Returns the ids removed. */
  private async evictContainers(allSourcesReady: boolean, evictNonDeletedPods: boolean, signal?: AbortSignal): Promise<string[]> {
    const containers = await this.runtimeService.listContainers(undefined, { signal });
    const units = evictableContainers(containers, this.policy.minAgeMs, this.clock.now());
    const plan = planContainerEviction(units, {
      policy: this.policy,
      allSourcesReady,
      evictNonDeletedPods,
      podStateProvider: this.podStateProvider,
    });
    const removed: string[] = [];
    for (const container of plan) {
      if (signal?.aborted) break;
      if (container.unknown) {
        // A container in unknown state could be running: try stopping it before removal.
        try {
          await this.killContainerFn(container, 'Container is in unknown state, try killing it before removal');
        } catch (err) {
          this.logger.error('Failed to stop container', err, { containerID: container.id });
          continue;
        }
      }
      try {
        await this.removeContainer(container.id, signal);
        removed.push(container.id);
        this.onRemoved?.('container', container.id);
      } catch (err) {
        this.logger.error('Failed to remove container', err, { containerID: container.id });
      }
    }
    return removed;
  }

  /** Go: kubeGenericRuntimeManager.removeContainer: the container's log file, then the container. */
  private async removeContainer(id: string, signal?: AbortSignal): Promise<void> {
    this.logger.v(4).info('Removing container', { containerID: id });
    if (this.removeContainerLogs) {
      let logPath = '';
      try {
        logPath = (await this.runtimeService.containerStatus(id, false, { signal })).status?.logPath ?? '';
      } catch (err) {
        if (isNotFound(err)) return; // already gone
        throw err;
      }
      if (logPath) {
        try {
          await this.fs.remove(logPath);
        } catch (err) {
          if (!isNotExist(err)) throw new Error(`failed to remove container ${JSON.stringify(id)} log ${JSON.stringify(logPath)}: ${errorText(err)}`);
        }
      }
    }
    await this.runtimeService.removeContainer(id, { signal });
  }

  /** Go: evictSandboxes. Returns the ids removed. */
  private async evictSandboxes(evictNonDeletedPods: boolean, signal?: AbortSignal): Promise<string[]> {
    const containers = await this.runtimeService.listContainers(undefined, { signal });
    const sandboxes = await this.runtimeService.listPodSandbox(undefined, { signal });
    const plan = planSandboxEviction(containers, sandboxes, this.podStateProvider, evictNonDeletedPods);
    const removed: string[] = [];
    for (const sandbox of plan) {
      if (signal?.aborted) break;
      if (await this.removeSandbox(sandbox, signal)) {
        removed.push(sandbox.id);
        this.onRemoved?.('sandbox', sandbox.id);
      }
    }
    return removed;
  }

  /** Go: removeSandbox. Stops the sandbox first, in case the kubelet did not. */
  private async removeSandbox(sandbox: SandboxGCInfo, signal?: AbortSignal): Promise<boolean> {
    this.logger.v(4).info('Removing sandbox', { sandboxID: sandbox.id });
    try {
      await this.runtimeService.stopPodSandbox(sandbox.id, { signal });
    } catch (err) {
      this.logger.error('Failed to stop sandbox before removing', err, { sandboxID: sandbox.id });
      return false;
    }
    try {
      await this.runtimeService.removePodSandbox(sandbox.id, { signal });
    } catch (err) {
      this.logger.error('Failed to remove sandbox', err, { sandboxID: sandbox.id });
      return false;
    }
    return true;
  }

  /** Go: evictPodLogsDirectories. Removes `<root>/<ns>_<name>_<uid>` of pods whose content should be removed. */
  private async evictPodLogsDirectories(allSourcesReady: boolean): Promise<string[]> {
    // Only remove pod logs directories when all sources are ready.
    if (!allSourcesReady) return [];
    let dirs: string[];
    try {
      dirs = await this.fs.readdir(this.podLogsRootDirectory);
    } catch (err) {
      if (isNotExist(err)) return []; // no pod ever logged here
      throw new Error(`failed to read podLogsRootDirectory ${JSON.stringify(this.podLogsRootDirectory)}: ${errorText(err)}`);
    }
    const removed: string[] = [];
    for (const name of dirs) {
      const podUid = parsePodUIDFromLogsDirectory(name);
      if (!this.podStateProvider.shouldPodContentBeRemoved(podUid)) continue;
      this.logger.v(4).info('Removing pod logs', { podUID: podUid });
      const path = join(this.podLogsRootDirectory, name);
      try {
        await this.fs.removeAll(path);
        removed.push(path);
        this.onRemoved?.('podLogDirectory', path);
      } catch (err) {
        this.logger.error('Failed to remove pod logs directory', err, { path: name });
      }
    }
    return removed;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

/** Go's utilerrors.NewAggregate: one error as is, several as "[a, b]". */
function aggregateError(errors: unknown[]): Error {
  if (errors.length === 1) return errors[0] instanceof Error ? errors[0] : new Error(String(errors[0]));
  return new AggregateError(errors, `[${errors.map(errorText).join(', ')}]`);
}
