import { setMaxListeners } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Node, V1Pod, V1PodStatus, V1Secret } from '@kubernetes/client-node';
import {
  containerRestartBackoff,
  isAbortError,
  isMirrorPod,
  KubeletEventReason,
  isStaticPod,
  noopLogger,
  PodOperation,
  podRef,
  podSyncError,
  raceAbort,
  realClock,
  until,
  type Backoff,
  type Clock,
  type ContainerRuntime,
  type EventRecorder,
  type Logger,
  type PodCache,
  type PodLifecycleEvent,
  type PodStatus,
  type PodSyncResult,
  type PodUpdate,
  type RuntimePod,
} from '@kubelet-ts/core';
import type { PodLifecycleEventGenerator } from '@kubelet-ts/pleg';
import type { MountedVolume } from '@kubelet-ts/volume-manager';
import type { PodSyncer, PodStatusFunc, PodWorkers, SyncPodType, UpdatePodOptions } from '@kubelet-ts/pod-workers';
import { convertPodStatusToRunningPod } from '@kubelet-ts/runtime-manager';
import { Mailbox } from './mailbox.js';
import { PodManager, type PodObjectRegistry } from './pod-manager.js';
import { generateAPIPodStatus, isPodPhaseTerminal, needToReconcilePodReadiness, type WaitingReason } from '@kubelet-ts/status-manager';
import { RuntimeState } from './runtime-state.js';
import type { KubeletMetrics } from '@kubelet-ts/server';
import { podFirstSeenTime, recordStartedPodsAndContainers } from './metrics.js';
import { cleanupOrphanedPodCgroups, type CgroupName, type PodCgroupManager } from '@kubelet-ts/container-manager';
import { ActiveDeadlineHandler, AppArmorAdmitHandler, AppArmorValidator, PredicateAdmitHandler, SysctlAllowlistAdmitHandler, admitPodAsync, rejectPod, type AsyncPodAdmitHandler, type PodAdmitHandler } from './lifecycle/index.js';
import type { PluginVolumeStatsSource } from './volume-stats.js';
import type { DeviceManagerLike } from '@kubelet-ts/device-manager';

/** Where the kubelet's desired pods come from: pod-config's merged stream. */
export interface PodSource {
  updates(): AsyncIterable<PodUpdate>;
  sourcesReady(): boolean;
  /**
   * Go's SeenAllSources: every configured source is in `seenSources` (the sources whose updates the sync loop has
   * handled) and has delivered its first state. Without it, sourcesReady() alone is used.
   */
  seenAllSources?(seenSources: Iterable<string>): boolean;
}

/** The runtime manager as the kubelet uses it: the ContainerRuntime plus a start-up probe of the runtime. */
export type KubeletRuntime = ContainerRuntime & {
  init?(): Promise<unknown>;
  /** Hands the node's pod CIDR to the runtime (Go: Runtime.UpdatePodCIDR, CRI UpdateRuntimeConfig). */
  updatePodCIDR?(podCIDR: string): Promise<void>;
};

export interface KubeletOptions {
  nodeName: string;
  rootDir: string;
  runtime: KubeletRuntime;
  podCache: PodCache;
  pleg: PodLifecycleEventGenerator;
  podSource: PodSource;
  /** Builds the pod workers around this kubelet as their syncer. */
  createPodWorkers: (syncer: PodSyncer) => PodWorkers & { workQueue: { getWork(): string[] }; stop(): Promise<void> };
  clock?: Clock;
  logger?: Logger;
  /** Image garbage collection, started and stopped with the kubelet (Go: StartGarbageCollection). */
  imageGC?: { start(): void; stop(): Promise<void> };
  /** Builds container garbage collection around the pod workers' state. */
  createContainerGC?: (podStateProvider: PodStateProvider) => ContainerGCLoop;
  /** API server mode: status sync and mirror pods. */
  statusManager?: StatusManagerLike;
  mirrorPods?: MirrorPods;
  /** Builds the prober around the kubelet's view of pod statuses. */
  createProbeManager?: (getPodStatus: (uid: string) => V1PodStatus | undefined) => ProbeManagerLike;
  /** The node's IPs (Go: GetHostIPs): status.hostIP(s), and the pod IPs of host-network pods. */
  hostIPs?: () => string[];
  /** Pod events the kubelet itself records (NetworkNotReady, FailedToMakePodDataDirectories, rejections). */
  recorder?: EventRecorder;
  /**
   * The Node pods are admitted against (Go: getNodeAnyWay): the API server's copy, else the Node as the kubelet
   * would register it. Without it every pod is admitted on resources, affinity and taints.
   */
  getNode?: () => Promise<V1Node | undefined>;
  /**
   * Builds the volume manager around the pod manager and the pod workers (Go: volumemanager.NewVolumeManager);
   * without it pods get no volumes.
   */
  createVolumeManager?: (pods: { getPods(): V1Pod[] }, podState: VolumePodStateProvider) => KubeletVolumeManagerLike;
  /** Go's secret and configMap managers: told of every pod the pod manager adds, updates or removes. */
  podObjectRegistries?: PodObjectRegistry[];
  /** The pod's image pull secrets (Go: getPullSecretsForPod, through the secret manager). */
  getPullSecrets?: (pod: V1Pod) => Promise<V1Secret[]>;
  /** --allowed-unsafe-sysctls. */
  allowedUnsafeSysctls?: string[];
  /** Whether the host can enforce the AppArmor profiles pods ask for (Go: apparmor.NewValidator). Default: the real host. */
  appArmorValidator?: AppArmorValidator;
  /** Called whenever a pod's reported status changes. */
  onPodStatus?: (pod: V1Pod, status: V1PodStatus) => void;
  /**
   * The node's metrics (Go: pkg/kubelet/metrics): the kubelet observes pod worker start and pod start durations,
   * containers per pod, and the sandboxes and containers each runtime sync started.
   */
  metrics?: Pick<
    KubeletMetrics,
    'observePodWorkerStartDuration' | 'observePodStartDuration' | 'observeContainersPerPod' | 'recordStartedPod' | 'recordStartedContainer'
  >;
  /**
   * The container manager (Go: cm.ContainerManager with --cgroups-per-qos): started with the kubelet, pod cgroups
   * made before a pod's sandbox and removed once it terminated. Without it pods get no cgroups of the kubelet's.
   */
  containerManager?: ContainerManagerLike;
  /**
   * The eviction manager (Go: eviction.Manager): started with the kubelet, first of the admit handlers. It gets the
   * kubelet's active pods and evicts through the pod workers (killPodForEviction).
   */
  evictionManager?: EvictionManagerLike;
  /**
   * The device manager (Go: devicemanager.ManagerImpl, inside the container manager): started before pods sync, its
   * allocation is the resource allocation admit handler (after sysctls, before the predicates).
   */
  deviceManager?: Pick<DeviceManagerLike, 'start' | 'stop' | 'admit' | 'updateAllocatedDevices' | 'allocatedDeviceCounts'>;
  /** More admit handlers, after Go's built-in ones (the node shutdown manager's: no pods while the node shuts down). */
  extraAdmitHandlers?: PodAdmitHandler[];
  syncPeriodMs?: number;
  housekeepingPeriodMs?: number;
  runtimeCheckPeriodMs?: number;
}

/** What the kubelet needs of the container manager. */
export interface ContainerManagerLike {
  start(activePods: () => V1Pod[], signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  newPodContainerManager(): PodCgroupManager;
  updateQOSCgroups(): Promise<void>;
}

/** What the kubelet needs of the eviction manager. */
export interface EvictionManagerLike extends PodAdmitHandler {
  start(signal?: AbortSignal): void;
  stop(): Promise<void>;
}

/** What the kubelet needs of the volume manager (Go: volumemanager.VolumeManager). */
export interface KubeletVolumeManagerLike {
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  waitForAttachAndMount(pod: V1Pod, signal?: AbortSignal): Promise<void>;
  waitForUnmount(pod: V1Pod, signal?: AbortSignal): Promise<void>;
  podVolumesExist(podUid: string): boolean;
  getMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume>;
  getVolumesInUse(): string[];
  reconcilerStatesHasBeenSynced(): boolean;
  cleanupOrphanedPodDirs(keep: ReadonlySet<string>): Promise<void>;
  /** Usage of the pod's volumes whose plugin reports it (CSI), for the Summary API. */
  getVolumeStats?: PluginVolumeStatsSource['getVolumeStats'];
}

/** What the volume manager asks the pod workers. */
export interface VolumePodStateProvider {
  shouldPodContainersBeTerminating(uid: string): boolean;
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}

/** API server mode: where pod statuses go (Go: status.Manager). */
export interface StatusManagerLike {
  setPodStatus(pod: V1Pod, status: V1PodStatus): void;
  setContainerReadiness(podUid: string, containerId: string, ready: boolean): void;
  setContainerStartup(podUid: string, containerId: string, started: boolean): void;
  terminatePod(pod: V1Pod): void;
  removeOrphanedStatuses(desiredUids: Set<string>): void;
}

/** API server mode: mirror pods of static pods (Go: syncMirrorPod and deleteOrphanedMirrorPods). */
export interface MirrorPods {
  sync(staticPod: V1Pod, mirrorPod: V1Pod | undefined): Promise<unknown>;
  deleteOrphans(fullNames: string[], isPodRunning: (fullName: string) => boolean): Promise<unknown>;
}

/** What the kubelet needs of the prober (Go: prober.Manager and its results managers). */
export interface ProbeManagerLike {
  addPod(pod: V1Pod): void;
  removePod(pod: V1Pod): void;
  stopLivenessAndStartup(pod: V1Pod): void;
  cleanupPods(desiredUids: Set<string>): void;
  /** Sets started and ready on container statuses; a probe that has not run yet counts as not passed (Go: UpdatePodStatus). */
  updatePodStatus(pod: V1Pod, status: V1PodStatus): void;
  stop(): Promise<void>;
  readonly livenessManager: ProbeResults;
  readonly readinessManager: ProbeResults;
  readonly startupManager: ProbeResults;
}

export interface ProbeResults {
  updates(signal?: AbortSignal): AsyncIterable<{ containerId: string; result: string; podUID: string }>;
}

/** What the kubelet needs of container GC: its loop, and a pass on demand. */
export interface ContainerGCLoop {
  start(allSourcesReady?: () => boolean): void;
  stop(): Promise<void>;
  garbageCollect(allSourcesReady: boolean, evictNonDeletedPods: boolean): Promise<void>;
  /** Every dead container of terminated pods (Go: DeleteAllUnusedContainers), the eviction manager's node-level reclaim. */
  deleteAllUnusedContainers(): Promise<void>;
}

/** Go's podStateProvider: what container GC asks the pod workers. */
export interface PodStateProvider {
  shouldPodContentBeRemoved(uid: string): boolean;
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}

type LoopMessage =
  | { kind: 'config'; update: PodUpdate }
  | { kind: 'pleg'; event: PodLifecycleEvent }
  | { kind: 'probe'; probe: 'liveness' | 'readiness' | 'startup'; podUID: string; containerId: string; result: string }
  | { kind: 'sync' }
  | { kind: 'housekeeping' };

/** Go's syncLoop timings. */
const SYNC_PERIOD_MS = 1000;
const HOUSEKEEPING_PERIOD_MS = 2000;
const RUNTIME_CHECK_PERIOD_MS = 5000;
const RUNTIME_ERROR_BACKOFF_BASE_MS = 100;
const RUNTIME_ERROR_BACKOFF_MAX_MS = 5000;
/** Go: the grace period used for pods known only from the runtime. */
const ORPHAN_GRACE_PERIOD_SECONDS = 1;
/** Sync failures that only mean "waiting": the worker resyncs normally instead of backing off. */
const BACKOFF_REASONS = new Set(['CrashLoopBackOff', 'ImagePullBackOff']);

/**
 * The kubelet (Go: pkg/kubelet.Kubelet): the syncLoop that turns config updates, PLEG events, the sync
 * ticker and housekeeping into pod worker updates, and the PodSyncer the workers call to drive the
 * runtime for each pod.
 */
export class Kubelet implements PodSyncer {
  readonly podManager: PodManager;
  readonly volumeManager?: KubeletVolumeManagerLike;
  readonly runtimeState: RuntimeState;
  readonly podWorkers: ReturnType<KubeletOptions['createPodWorkers']>;
  readonly containerGC?: ContainerGCLoop;
  readonly probeManager?: ProbeManagerLike;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly backoff: Backoff;
  private readonly waitingReasons = new Map<string, Map<string, WaitingReason>>();
  private readonly statuses = new Map<string, V1PodStatus>();
  private readonly statusKeys = new Map<string, string>();
  private readonly mailbox = new Mailbox<LoopMessage>({ pleg: 1000 });
  /** Pods whose data directories exist, so resyncs do not touch the filesystem again. */
  private readonly podDirsMade = new Set<string>();
  private lastSyncLoopActivity = 0;
  /** The pod CIDR the runtime was last given (Go: runtimeState.podCIDR). */
  private podCIDR = '';
  /** Messages the syncLoop has handled (config updates, PLEG events, ticks). */
  syncLoopIterations = 0;
  /** The pod sources whose updates the sync loop has handled (Go: sourcesReady's seen sources). */
  private readonly seenSources = new Set<string>();
  private running?: Promise<void>;
  /** Pod admission in Go's order: sysctls, then the scheduler's predicates against the node. */
  private readonly admitHandlers: AsyncPodAdmitHandler[];
  /** The Node as it was when the pods being admitted were added. */
  private admissionNode?: V1Node;
  private readonly activeDeadline: ActiveDeadlineHandler;

  constructor(private readonly options: KubeletOptions) {
    this.clock = options.clock ?? realClock;
    this.logger = options.logger ?? noopLogger;
    this.backoff = containerRestartBackoff(this.clock);
    this.runtimeState = new RuntimeState(this.clock);
    this.runtimeState.addHealthCheck({ name: 'PLEG', check: () => options.pleg.healthy().error });
    this.podManager = new PodManager(options.podObjectRegistries);
    this.podWorkers = options.createPodWorkers(this);
    this.volumeManager = options.createVolumeManager?.(this.podManager, this.podWorkers);
    this.containerGC = options.createContainerGC?.(this.podWorkers);
    this.probeManager = options.createProbeManager?.((uid) => this.statuses.get(uid));
    // Go's order: the eviction manager's handler, sysctls, then the scheduler's predicates.
    this.admitHandlers = [new SysctlAllowlistAdmitHandler({ allowedUnsafeSysctls: options.allowedUnsafeSysctls }), new AppArmorAdmitHandler(options.appArmorValidator ?? new AppArmorValidator())];
    if (options.evictionManager) this.admitHandlers.unshift(options.evictionManager);
    // Go: the container manager's resource allocation handler (devices) comes before the predicates.
    const deviceManager = options.deviceManager;
    if (deviceManager) this.admitHandlers.push({ admit: (attrs) => deviceManager.admit(attrs) });
    if (options.getNode) {
      this.admitHandlers.push(
        new PredicateAdmitHandler({ getNode: () => this.admissionNode, allocatedPluginResources: deviceManager && (() => deviceManager.allocatedDeviceCounts()), logger: this.logger }),
      );
    }
    this.admitHandlers.push(...(options.extraAdmitHandlers ?? []));
    this.activeDeadline = new ActiveDeadlineHandler({ clock: this.clock, getPodStatus: (uid) => this.statuses.get(uid), recorder: options.recorder });
  }

  /** Runs the kubelet until the signal aborts, then stops its loops (containers keep running). */
  run(signal: AbortSignal): Promise<void> {
    this.running ??= this.runLoops(signal);
    return this.running;
  }

  /** The pods the kubelet should run and the status it last computed for each. */
  podStatuses(): Array<{ pod: V1Pod; status?: V1PodStatus }> {
    return this.podManager.getPods().map((pod) => ({ pod, status: this.statuses.get(pod.metadata!.uid!) }));
  }

  getPodStatus(uid: string): V1PodStatus | undefined {
    return this.statuses.get(uid);
  }

  /** The syncloop health check for /healthz (Go: syncLoopHealthCheck). */
  syncLoopHealthy(): Error | undefined {
    const threshold = Math.max(this.options.syncPeriodMs ?? SYNC_PERIOD_MS, 2 * 60_000);
    if (this.lastSyncLoopActivity === 0) return undefined;
    const idle = this.clock.now() - this.lastSyncLoopActivity;
    return idle > threshold ? new Error(`sync Loop took longer than expected: last activity ${Math.round(idle / 1000)}s ago`) : undefined;
  }

  private async runLoops(outer: AbortSignal): Promise<void> {
    // Every loop and every pending wait listens on one signal: more than Node's leak warning threshold (10)
    // by design, so the loops get their own signal with a limit that still catches a real leak.
    const stopping = new AbortController();
    setMaxListeners(100, stopping.signal);
    if (outer.aborted) stopping.abort(outer.reason);
    else outer.addEventListener('abort', () => stopping.abort(outer.reason), { once: true });
    const signal = stopping.signal;
    const { pleg, podSource } = this.options;
    const loops: Array<Promise<unknown>> = [];
    // Go: the container manager starts before any pod syncs (initializeRuntimeDependentModules); a failure is fatal.
    await this.options.containerManager?.start(() => this.getActivePods(), signal);
    await this.options.deviceManager?.start(
      () => this.getActivePods(),
      () => this.sourcesReady(),
    );
    loops.push(until(() => this.updateRuntimeUp(), this.options.runtimeCheckPeriodMs ?? RUNTIME_CHECK_PERIOD_MS, signal, this.clock, { logger: this.logger, name: 'updateRuntimeUp' }));
    // Go: the volume manager runs before the sync loop, so volumes found on disk are known before any pod syncs.
    try {
      await this.volumeManager?.start();
    } catch (error) {
      this.logger.error('Failed to start the volume manager', error);
    }
    pleg.start();
    this.containerGC?.start(() => this.sourcesReady());
    this.options.imageGC?.start();
    this.options.evictionManager?.start(signal);
    loops.push(this.pump(signal, podSource.updates(), (update) => ({ kind: 'config', update })));
    loops.push(this.pump(signal, pleg.watch({ signal }), (event) => ({ kind: 'pleg', event })));
    const probes = this.probeManager;
    if (probes) {
      for (const [probe, results] of [['liveness', probes.livenessManager], ['readiness', probes.readinessManager], ['startup', probes.startupManager]] as const) {
        loops.push(this.pump(signal, results.updates(signal), (u) => ({ kind: 'probe', probe, podUID: u.podUID, containerId: u.containerId, result: u.result })));
      }
    }
    const syncTicker = this.clock.setInterval(() => this.mailbox.tick({ kind: 'sync' }), this.options.syncPeriodMs ?? SYNC_PERIOD_MS);
    const housekeepingTicker = this.clock.setInterval(() => this.mailbox.tick({ kind: 'housekeeping' }), this.options.housekeepingPeriodMs ?? HOUSEKEEPING_PERIOD_MS);
    this.logger.info('Starting kubelet main sync loop');
    try {
      await this.syncLoop(signal);
    } finally {
      syncTicker.cancel();
      housekeepingTicker.cancel();
      await pleg.stop();
      await Promise.all([this.containerGC?.stop(), this.options.imageGC?.stop(), this.probeManager?.stop(), this.options.evictionManager?.stop()]);
      await this.podWorkers.stop();
      await this.volumeManager?.stop();
      await this.options.containerManager?.stop();
      await this.options.deviceManager?.stop();
      await Promise.allSettled(loops);
      this.logger.info('Kubelet sync loop stopped');
    }
  }

  /** Forwards a source into the mailbox until the source ends or the signal aborts (whichever first). */
  private async pump<T>(signal: AbortSignal, source: AsyncIterable<T>, wrap: (item: T) => LoopMessage): Promise<void> {
    const iterator = source[Symbol.asyncIterator]();
    try {
      while (!signal.aborted) {
        // Not a race against one abort promise: each such race stays attached to it, with its item, until abort.
        const next = await raceAbort(iterator.next(), signal, 'aborted' as const);
        if (next === 'aborted' || next.done) return;
        const message = wrap(next.value);
        await this.mailbox.waitForRoom(message.kind, signal);
        this.mailbox.push(message);
      }
    } catch (error) {
      if (!signal.aborted) this.logger.error('Sync loop input failed', error);
    } finally {
      // Leave the source's own iteration to end when the source closes; do not wait for it here.
      void iterator.return?.().catch(() => undefined);
    }
  }

  private async syncLoop(signal: AbortSignal): Promise<void> {
    let backoffMs = RUNTIME_ERROR_BACKOFF_BASE_MS;
    while (!signal.aborted) {
      const errors = this.runtimeState.runtimeErrors();
      if (errors.length > 0) {
        this.logger.error('Skipping pod synchronization', new Error(errors.map((e) => e.message).join(', ')));
        try {
          await this.clock.sleep(backoffMs, signal);
        } catch (error) {
          if (isAbortError(error)) return;
          throw error;
        }
        backoffMs = Math.min(backoffMs * 2, RUNTIME_ERROR_BACKOFF_MAX_MS);
        continue;
      }
      backoffMs = RUNTIME_ERROR_BACKOFF_BASE_MS;
      let message: LoopMessage;
      try {
        message = await this.mailbox.next(signal);
      } catch (error) {
        if (isAbortError(error) || signal.aborted) return;
        throw error;
      }
      this.lastSyncLoopActivity = this.clock.now();
      this.syncLoopIterations++;
      try {
        await this.syncLoopIteration(message);
      } catch (error) {
        this.logger.error('Sync loop iteration failed', error, { kind: message.kind });
      }
    }
  }

  /**
   * Go's sourcesReady.AllReady(): every pod source has delivered its first state and the sync loop has handled it,
   * so the pod manager holds every pod the sources have. Until then nothing found on the node is removed as
   * orphaned (volumes, containers, devices).
   */
  sourcesReady(): boolean {
    const source = this.options.podSource;
    return source.seenAllSources ? source.seenAllSources(this.seenSources) : source.sourcesReady();
  }

  /** Go: syncLoopIteration, one message at a time. */
  async syncLoopIteration(message: LoopMessage): Promise<void> {
    switch (message.kind) {
      case 'config':
        await this.handleConfigUpdate(message.update);
        // Go: kl.sourcesReady.AddSource(u.Source) once the update is handled, so the pods a source listed are in the
        // pod manager before anything that waits for the sources (volume teardown, GC, housekeeping) acts.
        this.seenSources.add(message.update.source);
        return;
      case 'pleg':
        return this.handlePlegEvent(message.event);
      case 'probe':
        return this.handleProbeResult(message.probe, message.podUID, message.containerId, message.result);
      case 'sync':
        return this.handleSyncTick();
      case 'housekeeping':
        if (!this.sourcesReady()) {
          this.logger.v(4).info('SyncLoop (housekeeping, skipped): sources aren\'t ready yet');
          return;
        }
        // Go frees the devices of pods that are gone before each allocation; housekeeping does it too.
        this.options.deviceManager?.updateAllocatedDevices();
        return this.handlePodCleanups();
    }
  }

  private async handleConfigUpdate(update: PodUpdate): Promise<void> {
    const pods = update.pods;
    const refs = pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
    switch (update.op) {
      case PodOperation.ADD:
        this.logger.v(2).info('SyncLoop ADD', { source: update.source, pods: refs });
        return this.handlePodAdditions(pods);
      case PodOperation.UPDATE:
        this.logger.v(2).info('SyncLoop UPDATE', { source: update.source, pods: refs });
        this.handlePodUpdates(pods);
        break;
      case PodOperation.REMOVE:
        this.logger.v(2).info('SyncLoop REMOVE', { source: update.source, pods: refs });
        this.handlePodRemoves(pods);
        break;
      case PodOperation.RECONCILE:
        this.logger.v(4).info('SyncLoop RECONCILE', { source: update.source, pods: refs });
        this.handlePodReconcile(pods);
        break;
      case PodOperation.DELETE:
        // A graceful deletion is an update carrying deletionTimestamp; the worker starts terminating.
        this.logger.v(2).info('SyncLoop DELETE', { source: update.source, pods: refs });
        this.handlePodUpdates(pods);
        break;
      case PodOperation.SET:
        this.logger.error('Kubelet does not support snapshot update', undefined, { source: update.source });
        break;
    }
  }

  async handlePodAdditions(pods: V1Pod[]): Promise<void> {
    const sorted = [...pods].sort((a, b) => creationTime(a) - creationTime(b));
    if (this.options.getNode && sorted.some((pod) => !isMirrorPod(pod))) {
      try {
        this.admissionNode = await this.options.getNode();
      } catch (error) {
        this.logger.error('Unable to get the node for pod admission', error);
        this.admissionNode = undefined;
      }
    }
    for (const pod of sorted) {
      const existing = this.podManager.getPods();
      this.podManager.addPod(pod);
      if (isMirrorPod(pod)) {
        this.handleMirrorPod(pod);
        continue;
      }
      // Go: only pods not already being terminated by another part of the kubelet go through admission.
      if (!this.podWorkers.isPodTerminationRequested(pod.metadata!.uid!)) {
        const result = await admitPodAsync(this.admitHandlers, { pod, otherPods: this.filterOutInactivePods(existing) });
        if (!result.admit) {
          this.logger.info('Pod rejected', { pod: podRef(pod), reason: result.reason, message: result.message });
          rejectPod(pod, result.reason ?? '', result.message ?? '', { recorder: this.options.recorder, setPodStatus: (p, status) => this.setStatus(p, status) });
          continue;
        }
      }
      this.dispatch({ updateType: 'create', pod, mirrorPod: this.podManager.getMirrorPodByPod(pod), startTime: this.clock.now() });
    }
  }

  /** Go: GetActivePods: the pods the kubelet runs, without terminated ones (the eviction manager's and QoS cgroups' view). */
  getActivePods(): V1Pod[] {
    return this.filterOutInactivePods(this.podManager.getPods().filter((pod) => !isMirrorPod(pod)));
  }

  /**
   * Go: killPodNow, the eviction manager's KillPodFunc: the pod's worker terminates it as evicted, statusFn setting its
   * final status; resolves once the kill completed, rejects when it has not after Go's timeout (1.5 grace periods, at
   * least 10 s). The node shutdown manager kills with evict false (Go: killPodNow's isEvicted).
   */
  async killPodForEviction(pod: V1Pod, gracePeriodOverrideSeconds: number | undefined, statusFn: (status: V1PodStatus) => void, evict = true): Promise<void> {
    const gracePeriod = gracePeriodOverrideSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    const timeoutMs = Math.max(10_000, (gracePeriod + gracePeriod / 2) * 1000);
    const completed = new Promise<void>((resolve) =>
      this.dispatch({ updateType: 'kill', pod, killPodOptions: { evict, gracePeriodOverrideSeconds, podStatusFn: statusFn, completed: resolve } }),
    );
    const abort = new AbortController();
    try {
      const outcome = await Promise.race([completed.then(() => 'done' as const), this.clock.sleep(timeoutMs, abort.signal).then(() => 'timeout' as const, () => 'cancelled' as const)]);
      if (outcome === 'timeout') throw new Error(`timeout waiting to kill pod ${podRef(pod)}`);
    } finally {
      abort.abort();
    }
  }

  /** Go: podResourcesAreReclaimed, as the eviction manager waits for it: no containers may run and no volumes are left. */
  podResourcesAreReclaimed(pod: V1Pod): boolean {
    const uid = pod.metadata!.uid!;
    if (this.podWorkers.couldHaveRunningContainers(uid)) return false;
    return !this.volumeManager?.podVolumesExist(uid);
  }

  /** Go: filterOutInactivePods: pods known terminated, and terminal pods not still terminating, do not count. */
  private filterOutInactivePods(pods: V1Pod[]): V1Pod[] {
    return pods.filter((pod) => {
      const uid = pod.metadata!.uid!;
      if (this.podWorkers.isPodKnownTerminated(uid)) return false;
      const terminal = isPodPhaseTerminal(pod.status?.phase) || isPodPhaseTerminal(this.statuses.get(uid)?.phase);
      return !terminal || this.podWorkers.isPodTerminationRequested(uid);
    });
  }

  handlePodUpdates(pods: V1Pod[]): void {
    for (const pod of pods) {
      this.podManager.updatePod(pod);
      if (isMirrorPod(pod)) {
        this.handleMirrorPod(pod);
        continue;
      }
      this.dispatch({ updateType: 'update', pod, mirrorPod: this.podManager.getMirrorPodByPod(pod), startTime: this.clock.now() });
    }
  }

  /** A mirror pod changed: its static pod syncs (and recreates it when needed). Go: handleMirrorPod. */
  private handleMirrorPod(mirrorPod: V1Pod): void {
    const pod = this.podManager.getPodByMirrorPod(mirrorPod);
    if (pod) this.dispatch({ updateType: 'update', pod, mirrorPod: this.podManager.getMirrorPodByPod(pod), startTime: this.clock.now() });
  }

  /**
   * Go: HandlePodReconcile: the API server's copy changed in status only. A readiness gate a controller set
   * makes the Ready condition stale, so the pod syncs and the API sees the new Ready at once.
   */
  handlePodReconcile(pods: V1Pod[]): void {
    for (const pod of pods) {
      this.podManager.updatePod(pod);
      const target = isMirrorPod(pod) ? this.podManager.getPodByMirrorPod(pod) : pod;
      if (!target) continue;
      if (needToReconcilePodReadiness(pod)) {
        this.dispatch({ updateType: 'sync', pod: target, mirrorPod: this.podManager.getMirrorPodByPod(target), startTime: this.clock.now() });
      }
    }
  }

  handlePodRemoves(pods: V1Pod[]): void {
    for (const pod of pods) {
      this.podManager.removePod(pod);
      if (isMirrorPod(pod)) {
        this.handleMirrorPod(pod);
        continue;
      }
      this.probeManager?.removePod(pod);
      this.dispatch({ updateType: 'kill', pod });
    }
  }

  private handlePlegEvent(event: PodLifecycleEvent): void {
    if (event.type === 'ContainerRemoved') return; // not sync-worthy (Go: isSyncPodWorthy)
    const pod = this.podManager.getPodByUid(event.id);
    if (!pod) {
      this.logger.v(4).info('SyncLoop (PLEG): pod does not exist, ignore irrelevant event', { event });
      return;
    }
    this.logger.v(2).info('SyncLoop (PLEG): event for pod', { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, event });
    this.dispatch({ updateType: 'sync', pod, startTime: this.clock.now() });
  }

  /**
   * Go: syncLoopIteration's liveness/readiness/startup cases: a failed liveness probe syncs the pod (the
   * runtime manager kills the container); readiness and startup results go to the status manager at once
   * (Go: SetContainerReadiness/SetContainerStartup), so the API sees them even while the pod's worker is
   * busy, and the pod syncs.
   */
  private handleProbeResult(probe: 'liveness' | 'readiness' | 'startup', podUID: string, containerId: string, result: string): void {
    const pod = this.podManager.getPodByUid(podUID);
    if (!pod) return;
    if (probe === 'liveness' && result !== 'failure') return;
    if (probe === 'readiness') this.options.statusManager?.setContainerReadiness(podUID, containerId, result === 'success');
    if (probe === 'startup') this.options.statusManager?.setContainerStartup(podUID, containerId, result === 'success');
    this.logger.v(2).info(`SyncLoop (probe)`, { probe, status: result === 'success' ? 'ready' : result === 'failure' ? 'unhealthy' : result, pod: podRef(pod) });
    this.dispatch({ updateType: 'sync', pod, startTime: this.clock.now() });
  }

  /** Go: getPodsToSync: pods due in the work queue, and pods a sync loop handler (the active deadline) wants synced. */
  private handleSyncTick(): void {
    const due = new Set(this.podWorkers.workQueue.getWork());
    for (const pod of this.podManager.getPods()) {
      const uid = pod.metadata!.uid!;
      if (due.has(uid) || this.activeDeadline.shouldSync(pod)) this.dispatch({ updateType: 'sync', pod, startTime: this.clock.now() });
    }
  }

  /**
   * Go: HandlePodCleanups: forget finished workers and terminate running pods that no source wants.
   * Dead containers and sandboxes of deleted pods are container GC's to remove.
   */
  async handlePodCleanups(): Promise<void> {
    // Go: the pod cgroups are listed before the workers are synced, so a pod started meanwhile is not taken for an orphan.
    const pcm = this.options.containerManager?.newPodContainerManager();
    let cgroupPods: Map<string, CgroupName> | undefined;
    try {
      cgroupPods = await pcm?.getAllPodsFromCgroups();
    } catch (error) {
      this.logger.error('Failed to get list of pods that still exist on cgroup mounts', error);
    }
    const desired = this.podManager.getPods();
    const workers = this.podWorkers.syncKnownPods(desired);
    const desiredUids = new Set(desired.map((p) => p.metadata!.uid!));
    this.probeManager?.cleanupPods(desiredUids);
    this.options.statusManager?.removeOrphanedStatuses(desiredUids);
    if (this.options.mirrorPods) {
      await this.options.mirrorPods.deleteOrphans(this.podManager.getOrphanedMirrorPodNames(), (fullName) =>
        this.podWorkers.isPodForMirrorPodTerminatingByFullName(fullName),
      );
    }
    let running: RuntimePod[];
    try {
      running = await this.options.runtime.getPods(false);
    } catch (error) {
      this.logger.error('Error listing containers', error);
      return;
    }
    for (const runningPod of running) {
      if (workers.has(runningPod.id) || this.podManager.getPodByUid(runningPod.id)) continue;
      this.logger.v(2).info('Clean up orphaned pod containers', { podUID: runningPod.id, pod: `${runningPod.namespace}/${runningPod.name}` });
      this.dispatch({ updateType: 'kill', runningPod, killPodOptions: { gracePeriodOverrideSeconds: ORPHAN_GRACE_PERIOD_SECONDS } });
    }
    for (const uid of [...this.statuses.keys()]) {
      if (!this.podManager.getPodByUid(uid) && !workers.has(uid)) {
        this.statuses.delete(uid);
        this.statusKeys.delete(uid);
        this.waitingReasons.delete(uid);
      }
    }
    // The record of the data directories made goes with the pod: cleanupOrphanedPodDirs below removes the
    // directories of pods no source and no worker knows (Go's makePodDataDirs keeps no record and makes them on
    // every sync), so a pod that comes back with its UID gets them again, and a churning node keeps no UID for good.
    for (const uid of [...this.podDirsMade]) {
      if (!this.podManager.getPodByUid(uid) && !workers.has(uid)) this.podDirsMade.delete(uid);
    }
    // A pod whose worker finished and was forgotten while the pod came back with the same UID (a static pod
    // moved out and back during its termination) is desired and unknown: start it again.
    for (const pod of desired) {
      const uid = pod.metadata!.uid!;
      if (workers.has(uid)) continue;
      if (isPodPhaseTerminal(this.statuses.get(uid)?.phase)) continue; // rejected at admission: stays failed
      this.logger.v(3).info('Pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)', { podUID: uid, pod: podRef(pod) });
      this.dispatch({ updateType: 'create', pod, mirrorPod: this.podManager.getMirrorPodByPod(pod), startTime: this.clock.now() });
    }
    if (pcm && cgroupPods) {
      // Go: possiblyRunningPods: every pod a worker knows (not yet terminated) and every pod the runtime still runs.
      const possiblyRunning = new Set([...[...workers.keys()].filter((uid) => !this.podWorkers.isPodKnownTerminated(uid)), ...running.map((p) => p.id)]);
      this.logger.v(3).info('Clean up orphaned pod cgroups');
      await cleanupOrphanedPodCgroups(pcm, cgroupPods, possiblyRunning, (uid) => this.volumeManager?.podVolumesExist(uid) ?? false, this.logger);
    }
    // Go: cleanupOrphanedPodDirs: directories of pods no source and no worker knows, once their volumes are gone.
    await this.volumeManager?.cleanupOrphanedPodDirs(new Set([...desiredUids, ...workers.keys()]));
    // Go: kl.backOff.GC(): forget the crash-loop backoff of containers not seen for a while.
    this.backoff.gc();
  }

  private dispatch(options: UpdatePodOptions): void {
    this.podWorkers.updatePod(options);
    // Go: dispatchWork notes the number of containers of new pods.
    if (options.updateType === 'create' && options.pod) this.options.metrics?.observeContainersPerPod(options.pod.spec?.containers?.length ?? 0);
  }

  // ---- PodSyncer: what each pod worker calls

  async syncPod(updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined, podStatus: PodStatus, signal?: AbortSignal): Promise<boolean> {
    const uid = pod.metadata!.uid!;
    const metrics = this.options.metrics;
    const firstSeen = metrics && podFirstSeenTime(pod);
    // Go: the pod worker start latency, from the kubelet first seeing the pod to its first sync.
    if (firstSeen !== undefined && updateType === 'create') metrics!.observePodWorkerStartDuration(this.clock.now() - firstSeen);
    const existingStatus = this.statuses.get(uid);
    const apiStatus = this.updateStatus(pod, podStatus);
    // Go 1.20's rule, kept as is: observed when no status was known yet (the first sync) or when the pod goes
    // from Pending to Running, since the kubelet first saw it.
    if (firstSeen !== undefined && (!existingStatus || (existingStatus.phase === 'Pending' && apiStatus.phase === 'Running'))) {
      metrics!.observePodStartDuration(this.clock.now() - firstSeen);
    }
    this.logger.v(4).info('SyncPod enter', { pod: podRef(pod), updateType });
    if (isPodPhaseTerminal(apiStatus.phase)) return true;
    // Go: pods that need the pod network wait for it; host-network pods go on.
    const networkError = this.runtimeState.networkErrors()[0];
    if (networkError && !pod.spec?.hostNetwork) {
      this.options.recorder?.event(pod, 'Warning', KubeletEventReason.NetworkNotReady, `${NETWORK_NOT_READY_ERROR_MSG}: ${networkError.message}`);
      throw new Error(`${NETWORK_NOT_READY_ERROR_MSG}: ${networkError.message}`);
    }
    this.probeManager?.addPod(pod);
    if (isStaticPod(pod) && this.options.mirrorPods) await this.options.mirrorPods.sync(pod, this.podManager.getMirrorPodByPod(pod) ?? mirrorPod);
    if (this.options.containerManager && !this.podWorkers.isPodTerminationRequested(uid)) {
      await this.ensurePodCgroup(pod, podStatus, apiStatus, signal);
    }
    // The runtime manager creates the directories it writes to itself, so the pod's data directories
    // need not delay the first CRI call; but a failure to make them is only reported once the runtime's
    // sync is over, so a retry never overlaps a SyncPod of the same pod still running.
    const dirs = this.makePodDataDirs(uid).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Go: volumes are mounted before containers start; a pod being terminated gets none.
    if (this.volumeManager && !this.podWorkers.isPodTerminationRequested(uid)) {
      try {
        await this.volumeManager.waitForAttachAndMount(pod, signal);
      } catch (error) {
        if (signal?.aborted) throw error;
        const message = `Unable to attach or mount volumes: ${(error as Error).message}`;
        this.options.recorder?.event(pod, 'Warning', KubeletEventReason.FailedMountVolume, message);
        this.logger.error('Unable to attach or mount volumes for pod; skipping pod', error, { pod: podRef(pod) });
        await dirs;
        throw new Error(message, { cause: error });
      }
    }
    const pullSecrets = (await this.options.getPullSecrets?.(pod)) ?? [];
    const result = await this.options.runtime.syncPod(pod, podStatus, pullSecrets, this.backoff, { signal });
    if (metrics) recordStartedPodsAndContainers(metrics, pod, result);
    const dirsError = await dirs;
    if (dirsError) {
      this.logger.error('Unable to make pod data directories for pod', dirsError, { pod: podRef(pod) });
      this.options.recorder?.event(pod, 'Warning', KubeletEventReason.FailedToMakePodDataDirectories, `error making pod data directories: ${(dirsError as Error).message}`);
      throw dirsError;
    }
    this.recordWaitingReasons(uid, result);
    const error = podSyncError(result);
    if (error) {
      const onlyBackoff = result.syncResults.filter((r) => r.error).every((r) => BACKOFF_REASONS.has(r.error!));
      if (!onlyBackoff || result.syncError) throw error;
    }
    return false;
  }

  /**
   * Go's SyncPod, cgroups part: a pod whose cgroup is missing gets it (after the QoS cgroups are brought up to date)
   * before its sandbox starts. Containers already running outside it (a kubelet restarted with --cgroups-per-qos)
   * are killed first so they come back inside it; run-once pods killed that way are not started again.
   */
  private async ensurePodCgroup(pod: V1Pod, podStatus: PodStatus, apiStatus: V1PodStatus, signal?: AbortSignal): Promise<void> {
    const cm = this.options.containerManager!;
    const pcm = cm.newPodContainerManager();
    if (await pcm.exists(pod)) return;
    const firstSync = !(apiStatus.containerStatuses ?? []).some((c) => c.state?.running);
    let podKilled = false;
    if (!firstSync) {
      try {
        await this.options.runtime.killPod(pod, convertPodStatusToRunningPod(this.options.runtime.type(), podStatus), undefined, { signal });
        podKilled = true;
      } catch (error) {
        this.logger.error('KillPod failed', error, { pod: podRef(pod) });
      }
    }
    if (podKilled && pod.spec?.restartPolicy === 'Never') return;
    try {
      await cm.updateQOSCgroups();
    } catch (error) {
      this.logger.v(2).info('Failed to update QoS cgroups while syncing pod', { pod: podRef(pod), err: (error as Error).message });
    }
    try {
      await pcm.ensureExists(pod);
    } catch (error) {
      this.options.recorder?.event(pod, 'Warning', KubeletEventReason.FailedToCreatePodContainer, `unable to ensure pod container exists: ${(error as Error).message}`);
      throw new Error(`failed to ensure that the pod: ${pod.metadata!.uid} cgroups exist and are correctly applied: ${(error as Error).message}`, { cause: error });
    }
  }

  async syncTerminatingPod(pod: V1Pod, podStatus: PodStatus, gracePeriodSeconds: number | undefined, podStatusFn: PodStatusFunc | undefined, signal?: AbortSignal): Promise<void> {
    this.logger.v(4).info('SyncTerminatingPod enter', { pod: podRef(pod), gracePeriod: gracePeriodSeconds });
    this.probeManager?.stopLivenessAndStartup(pod);
    const apiStatus = this.generateStatus(pod, podStatus, true);
    podStatusFn?.(apiStatus);
    this.setStatus(pod, apiStatus);
    const runningPod = convertPodStatusToRunningPod(this.options.runtime.type(), podStatus);
    await this.options.runtime.killPod(pod, runningPod, gracePeriodSeconds, { signal });
    // Go: killPod leaves the pod's cgroup with the minimum CPU until it is removed.
    if (this.options.containerManager) {
      const pcm = this.options.containerManager.newPodContainerManager();
      await pcm.reduceCpuLimits(pcm.getPodContainerName(pod).name).catch((error: unknown) => this.logger.v(2).info('Failed to reduce cpu time for pod', { pod: podRef(pod), err: (error as Error).message }));
    }
    const after = await this.options.runtime.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!);
    const stillRunning = after.containerStatuses.filter((c) => c.state === 'running').map((c) => c.name);
    if (stillRunning.length > 0) {
      throw new Error(`detected running containers after a successful KillPod, CRI violation: ${stillRunning.join(', ')}`);
    }
    this.updateStatus(pod, after, true);
    this.logger.v(4).info('SyncTerminatingPod exit', { pod: podRef(pod) });
  }

  async syncTerminatingRuntimePod(runningPod: RuntimePod, signal?: AbortSignal): Promise<void> {
    this.logger.v(4).info('SyncTerminatingRuntimePod enter', { podUID: runningPod.id, pod: `${runningPod.namespace}/${runningPod.name}` });
    await this.options.runtime.killPod(undefined, runningPod, ORPHAN_GRACE_PERIOD_SECONDS, { signal });
  }

  async syncTerminatedPod(pod: V1Pod, podStatus: PodStatus): Promise<void> {
    const uid = pod.metadata!.uid!;
    this.updateStatus(pod, podStatus, true);
    // Go: the API object may go (podResourcesAreReclaimed) only once the pod's volumes are torn down.
    if (this.volumeManager) {
      await this.volumeManager.waitForUnmount(pod);
      this.logger.v(4).info('Pod termination unmounted volumes', { pod: podRef(pod) });
    }
    // Go: the cgroups of a pod that definitely no longer runs go.
    if (this.options.containerManager) {
      const pcm = this.options.containerManager.newPodContainerManager();
      await pcm.destroy(pcm.getPodContainerName(pod).name);
      this.logger.v(4).info('Pod termination removed cgroups', { pod: podRef(pod), podUID: uid });
    }
    this.options.statusManager?.terminatePod(pod);
    if (!this.podManager.getPodByUid(uid) && !this.volumeManager?.podVolumesExist(uid)) {
      // The pod is gone from every source: its data directory goes (Go: housekeeping's orphaned pod
      // dirs); its dead containers and sandboxes are container GC's.
      await rm(this.podDir(uid), { recursive: true, force: true });
      this.podDirsMade.delete(uid);
    }
    this.logger.v(4).info('SyncTerminatedPod exit', { pod: podRef(pod) });
  }

  /**
   * Go: updatePodCIDR: hands a changed pod CIDR (from the Node's spec) to the runtime; answers whether it
   * changed. A failure is reported and retried with the next node status sync.
   */
  async updatePodCIDR(cidr: string): Promise<boolean> {
    if (this.podCIDR === cidr) return false;
    try {
      await this.options.runtime.updatePodCIDR?.(cidr);
    } catch (error) {
      throw new Error(`failed to update pod CIDR: ${(error as Error).message}`, { cause: error });
    }
    this.logger.info('Updating Pod CIDR', { originalPodCIDR: this.podCIDR, newPodCIDR: cidr });
    this.podCIDR = cidr;
    return true;
  }

  // ---- internals

  /** Go: updateRuntimeUp: checks the runtime's status every 5 s and records its health. */
  private async updateRuntimeUp(): Promise<void> {
    try {
      await this.options.runtime.init?.();
      const status = await this.options.runtime.status();
      const ready = status.conditions.find((c) => c.type === 'RuntimeReady');
      if (!ready || !ready.status) {
        const reason = ready ? `${ready.reason}: ${ready.message}` : 'no RuntimeReady condition';
        this.runtimeState.setRuntimeError(new Error(`container runtime not ready: RuntimeReady=false reason:${reason}`));
        return;
      }
      this.runtimeState.setRuntimeError(undefined);
      // Go: a runtime without pod networking still runs host-network pods; the error reaches the node's Ready condition.
      const network = status.conditions.find((c) => c.type === 'NetworkReady');
      this.runtimeState.setNetworkError(
        network?.status ? undefined : new Error(`container runtime network not ready: ${network ? formatRuntimeCondition(network) : '<nil>'}`),
      );
      this.runtimeState.setRuntimeSync(this.clock.now());
    } catch (error) {
      this.logger.error('Container runtime sanity check failed', error);
    }
  }

  /** Computes and records the pod's API status from a runtime status (the status manager's job, for now). */
  updateStatus(pod: V1Pod, podStatus: PodStatus, podIsTerminal = false): V1PodStatus {
    const status = this.generateStatus(pod, podStatus, podIsTerminal);
    this.setStatus(pod, status);
    return status;
  }

  private generateStatus(pod: V1Pod, podStatus: PodStatus, podIsTerminal = false): V1PodStatus {
    const status = generateAPIPodStatus({
      pod,
      status: podStatus,
      oldPodStatus: this.statuses.get(pod.metadata!.uid!),
      podIsTerminal,
      waitingReasons: this.waitingReasons.get(pod.metadata!.uid!),
      probes: this.probeManager,
      hostIPs: this.options.hostIPs?.(),
      now: this.clock.now(),
    });
    // Go: a pod sync handler (the active deadline) that asks for the pod's eviction makes it Failed with its reason.
    const evict = this.activeDeadline.shouldEvict(pod);
    if (evict.evict) {
      status.phase = 'Failed';
      status.reason = evict.reason;
      status.message = evict.message;
    }
    return status;
  }

  private setStatus(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata!.uid!;
    this.statuses.set(uid, status);
    this.options.statusManager?.setPodStatus(pod, status);
    const key = statusKey(status);
    if (this.statusKeys.get(uid) !== key) {
      this.statusKeys.set(uid, key);
      this.options.onPodStatus?.(pod, status);
    }
  }

  private recordWaitingReasons(uid: string, result: PodSyncResult): void {
    const reasons = this.waitingReasons.get(uid) ?? new Map<string, WaitingReason>();
    for (const step of result.syncResults) {
      if (step.action !== 'StartContainer' && step.action !== 'InitContainer') continue;
      if (step.error) reasons.set(step.target, { reason: step.error, message: step.message });
      else reasons.delete(step.target);
    }
    this.waitingReasons.set(uid, reasons);
  }

  private podDir(uid: string): string {
    return join(this.options.rootDir, 'pods', uid);
  }

  /** Go: makePodDataDirs. */
  private async makePodDataDirs(uid: string): Promise<void> {
    if (this.podDirsMade.has(uid)) return;
    const dir = this.podDir(uid);
    await Promise.all(['volumes', 'plugins', 'containers'].map((sub) => mkdir(join(dir, sub), { recursive: true })));
    this.podDirsMade.add(uid);
  }


}

/** Go: NetworkNotReadyErrorMsg. */
const NETWORK_NOT_READY_ERROR_MSG = 'network is not ready';

/** A runtime condition as Go's RuntimeCondition.String() prints it. */
function formatRuntimeCondition(c: { type: string; status: boolean; reason: string; message: string }): string {
  return `${c.type}=${c.status} reason:${c.reason} message:${c.message}`;
}

function creationTime(pod: V1Pod): number {
  const value = pod.metadata?.creationTimestamp;
  return value ? new Date(value).getTime() : 0;
}

/** What a person sees of a status: changes of phase, readiness or container state, not timestamps. */
function statusKey(status: V1PodStatus): string {
  const containers = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].map((c) => {
    const state = c.state?.running ? 'running' : c.state?.terminated ? `terminated:${c.state.terminated.reason}:${c.state.terminated.exitCode}` : `waiting:${c.state?.waiting?.reason}`;
    return `${c.name}=${state}/${c.ready}/${c.restartCount}`;
  });
  return `${status.phase}|${status.podIP ?? ''}|${containers.join(',')}`;
}

