// The kubelet's volume manager (Go: pkg/kubelet/volumemanager): a populator fills the desired state
// from the pods this node should run, a reconciler sets up what is desired and tears down what is not,
// and the pod sync waits until every volume its containers mount is set up.
import { readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import {
  abortReason,
  Backoff,
  KubeletEventReason,
  noopEventRecorder,
  defaultLogger,
  realClock,
  type Clock,
  type EventRecorder,
  type Logger,
  type TimerHandle,
} from '@kubelet-ts/core';
import {
  podDir,
  podVolumeDir,
  podVolumeNamesInUse,
  podVolumesDir,
  podVolumeSubpathsDir,
  unescapePluginName,
  uniquePodVolumeName,
} from './names.js';
import { makeMounts, type ContainerMount } from './container-mounts.js';
import { checkVolumeMode, podVolumeClaim, podVolumeUse, resolvePersistentVolume } from './claims.js';
import { cleanSubPaths } from './subpath.js';
import { ActualStateOfWorld, DesiredStateOfWorld, type ActualVolume, type ClaimReference, type VolumeToMount } from './state.js';
import type {
  ConfigMapGetter,
  Mounter,
  MountedVolume,
  NodeFacts,
  PersistentVolumeGetter,
  ResolvedPersistentVolume,
  SecretGetter,
  ServiceAccountTokenGetter,
  VolumeHost,
  VolumePlugin,
  VolumeUsageStats,
} from './types.js';

/** Go: podAttachAndMountTimeout. */
export const POD_ATTACH_AND_MOUNT_TIMEOUT_MS = 2 * 60_000;
/** Go: reconcilerLoopSleepPeriod and the populator's loop period. */
export const RECONCILER_LOOP_PERIOD_MS = 100;
/** Go's nestedpendingoperations: a failed operation waits 500 ms, doubling up to 2 min 2 s. */
export const OPERATION_BACKOFF_INITIAL_MS = 500;
export const OPERATION_BACKOFF_MAX_MS = 122_000;

/** The pods the node should run (the kubelet's pod manager). */
export interface PodLister {
  getPods(): V1Pod[];
}

/** Go's PodStateProvider, from the pod workers. */
export interface PodStateProvider {
  /** No container of the pod will start again: its volumes are not set up any more. */
  shouldPodContainersBeTerminating(podUid: string): boolean;
  /** The pod's containers are stopped: its volumes may be torn down. */
  shouldPodRuntimeBeRemoved(podUid: string): boolean;
}

/** The interface the kubelet uses; `./testing` has a fake. */
export interface VolumeManager {
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  /** Resolves once every volume the pod's containers mount is set up; rejects after 2 min with Go's message. */
  waitForAttachAndMount(pod: V1Pod, signal?: AbortSignal): Promise<void>;
  /** Resolves once every volume of a terminated pod is torn down. */
  waitForUnmount(pod: V1Pod, signal?: AbortSignal): Promise<void>;
  /** The set-up volumes of a pod by the pod's volume name (what the container mounts are made from). */
  getMountedVolumesForPod(podUid: string): Map<string, MountedVolume>;
  /**
   * The mounts of one of the pod's containers from its set-up volumes (Go: makeMounts), a subPath
   * bind-mounted under `<podDir>/volume-subpaths/`; rejects with Go's messages.
   */
  getContainerMounts(pod: V1Pod, container: V1Container, env?: ReadonlyMap<string, string>): Promise<ContainerMount[]>;
  /** Whether anything of the pod's volumes is still set up (Go: podVolumesExist). */
  podVolumesExist(podUid: string): boolean;
  /** Go: GetVolumesInUse, for node status `volumesInUse`. */
  getVolumesInUse(): string[];
  /**
   * Usage of the pod's set-up volumes whose plugin reports it (`VolumePlugin.getVolumeStats`, e.g. CSI's
   * NodeGetVolumeStats); the others are not listed (their stats come from du/statfs of the directory).
   */
  getVolumeStats(podUid: string): Promise<PodVolumeStats[]>;
  /** The actual state was rebuilt from disk and the reconciler runs (Go: ReconcilerStatesHasBeenSynced). */
  reconcilerStatesHasBeenSynced(): boolean;
  /** Removes the directories of pods not in keep whose volumes are all gone (Go: cleanupOrphanedPodDirs). */
  cleanupOrphanedPodDirs(keep: ReadonlySet<string>): Promise<void>;
  /** Rewrites the API-backed volumes of the pods that reference an object that changed. */
  remountPodsReferencing(matches: (pod: V1Pod) => boolean): void;
}

/** One volume's usage as a plugin reports it (Go: the volume stats of the summary API). */
export interface PodVolumeStats {
  /** The pod's name for the volume. */
  volumeName: string;
  /** The claim of a persistentVolumeClaim or generic ephemeral volume. */
  pvcRef?: ClaimReference;
  stats: VolumeUsageStats;
}

export interface VolumeManagerOptions {
  /** `<root-dir>/pods`. */
  podsDir: string;
  nodeName: string;
  plugins: VolumePlugin[];
  mounter: Mounter;
  pods: PodLister;
  podState: PodStateProvider;
  configMaps?: ConfigMapGetter;
  secrets?: SecretGetter;
  tokens?: ServiceAccountTokenGetter;
  persistentVolumes?: PersistentVolumeGetter;
  node?: NodeFacts;
  /** Every pod source has been listed once: volumes found on disk may be torn down (Go: sourcesReady). */
  sourcesReady?: () => boolean;
  recorder?: EventRecorder;
  clock?: Clock;
  logger?: Logger;
  /**
   * Called when a volume operation ends, with the plugin's name, Go's operation name ('volume_mount' for a
   * SetUp, 'volume_unmount' for a TearDown), its duration in ms and, when it failed, the error (Go:
   * storage_operation_duration_seconds / storage_operation_errors_total).
   */
  onOperationComplete?: (operation: { pluginName: string; operationName: string; durationMs: number; error?: unknown }) => void;
  reconcilePeriodMs?: number;
  mountTimeoutMs?: number;
  /**
   * The GenericEphemeralVolume feature gate (beta and on since Go v1.21, GA in v1.23; alpha and off in v1.20).
   * Off: a pod with an `ephemeral` volume waits with Go's error. Default true.
   */
  genericEphemeralVolumes?: boolean;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

function noApiServer(kind: string): never {
  throw new Error(`cannot read ${kind}: the kubelet has no API server configured`);
}

const standaloneHost = {
  configMaps: { getConfigMap: async (ns: string, name: string) => noApiServer(`configmap ${ns}/${name}`) },
  secrets: { getSecret: async (ns: string, name: string) => noApiServer(`secret ${ns}/${name}`) },
  tokens: { getServiceAccountToken: async (ns: string, name: string) => noApiServer(`a token of service account ${ns}/${name}`) },
  persistentVolumes: {
    getPersistentVolumeClaim: async (ns: string, name: string) => noApiServer(`persistentvolumeclaim ${ns}/${name}`),
    getPersistentVolume: async (name: string) => noApiServer(`persistentvolume ${name}`),
  },
  node: { allocatableMilliCpu: 0, allocatableMemoryBytes: 0, hostIPs: () => [] },
};

/** A claim volume of a pod, resolved to its PV asynchronously (Go's populator reads them synchronously). */
interface ClaimResolution {
  claimName: string;
  /** The claim and its bound PV; once set, never read again for this pod volume. */
  result?: ResolvedPersistentVolume;
  /** Go's error text of the last attempt while unresolved (kept while the next attempt runs). */
  error?: string;
  inFlight: boolean;
  /** The populator pass of the last attempt: an unresolved claim is read again once per pass. */
  pass: number;
}

interface MountWaiter {
  podUid: string;
  expected: string[];
  resolve(): void;
}

function podRef(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class KubeletVolumeManager implements VolumeManager {
  readonly desired = new DesiredStateOfWorld();
  readonly actual = new ActualStateOfWorld();
  private readonly host: VolumeHost;
  private readonly plugins: VolumePlugin[];
  private readonly pluginsByName: Map<string, VolumePlugin>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private readonly backoff: Backoff;
  private readonly pending = new Set<string>();
  private readonly operations = new Set<Promise<void>>();
  /** The pod object each desired pod was last processed from (the populator skips unchanged pods). */
  private readonly processed = new Map<string, V1Pod>();
  /**
   * Errors of the populator for a pod's volumes (no plugin, a claim not bound, a volumeMode mismatch):
   * WaitForAttachAndMount reports them (Go: AddErrorToPod / PopPodErrors).
   */
  private readonly podErrors = new Map<string, string[]>();
  /** Claim volumes by pod uid and volume name, read from the API server in the background. */
  private readonly claims = new Map<string, Map<string, ClaimResolution>>();
  /** Counts populator passes. */
  private populatorPass = 0;
  private mountWaiters: MountWaiter[] = [];
  private unmountWaiters: MountWaiter[] = [];
  private timer: TimerHandle | undefined;
  private kickScheduled = false;
  private running = false;
  private reconstructed = false;
  private controller: AbortController | undefined;

  private readonly genericEphemeralVolumes: boolean;
  constructor(private readonly opts: VolumeManagerOptions) {
    this.genericEphemeralVolumes = opts.genericEphemeralVolumes ?? true;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.plugins = opts.plugins;
    this.pluginsByName = new Map(opts.plugins.map((p) => [p.name, p]));
    this.host = {
      podsDir: opts.podsDir,
      nodeName: opts.nodeName,
      mounter: opts.mounter,
      configMaps: opts.configMaps ?? standaloneHost.configMaps,
      secrets: opts.secrets ?? standaloneHost.secrets,
      tokens: opts.tokens ?? standaloneHost.tokens,
      persistentVolumes: opts.persistentVolumes ?? standaloneHost.persistentVolumes,
      node: opts.node ?? standaloneHost.node,
      clock: this.clock,
      logger: this.logger,
    };
    this.backoff = new Backoff({
      initialMs: opts.backoffInitialMs ?? OPERATION_BACKOFF_INITIAL_MS,
      maxMs: opts.backoffMaxMs ?? OPERATION_BACKOFF_MAX_MS,
      clock: this.clock,
      jitter: 0,
    });
  }

  /** Rebuilds the actual state from disk (a restarted kubelet remounts nothing), then starts the loops. */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.controller = new AbortController();
    if (signal) signal.addEventListener('abort', () => void this.stop(), { once: true });
    await this.reconstruct();
    this.reconstructed = true;
    this.logger.info('Starting Kubelet Volume Manager');
    const period = this.opts.reconcilePeriodMs ?? RECONCILER_LOOP_PERIOD_MS;
    this.timer = this.clock.setInterval(() => this.sync(), period);
    this.sync();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    this.controller?.abort();
    await Promise.allSettled([...this.operations]);
    this.logger.info('Shutting down Kubelet Volume Manager');
  }

  /** One populator pass then one reconciler pass (Go runs them as two 100 ms loops). */
  sync(): void {
    if (!this.running) return;
    this.populate();
    this.reconcile();
  }

  // ---- populator (Go: desiredStateOfWorldPopulator)

  private populate(): void {
    this.populatorPass++;
    const pods = this.opts.pods.getPods();
    for (const pod of pods) {
      const uid = pod.metadata?.uid;
      if (!uid) continue;
      if (this.opts.podState.shouldPodContainersBeTerminating(uid)) continue;
      this.addPod(pod);
    }
    for (const uid of this.desired.podUids()) {
      // A pod leaves the desired state once its containers are stopped, whether or not a source still has it.
      if (this.opts.podState.shouldPodRuntimeBeRemoved(uid)) this.removePod(uid);
    }
  }

  private addPod(pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    // A pod is processed again when its object changes, and on every pass while a claim of it is unresolved.
    if (this.processed.get(uid) === pod && this.desired.hasPod(uid) && !this.hasUnresolvedClaims(uid)) return;
    this.processed.set(uid, pod);
    const inUse = podVolumeNamesInUse(pod);
    const volumes: VolumeToMount[] = [];
    const errors: string[] = [];
    for (const volume of pod.spec?.volumes ?? []) {
      // A volume no container mounts is not set up (Go: processPodVolumes).
      if (!inUse.has(volume.name)) continue;
      let specName = volume.name;
      let plugin: VolumePlugin | undefined;
      let persistentVolume: ResolvedPersistentVolume | undefined;
      const claim = podVolumeClaim(pod, volume);
      if (claim?.ephemeral && !this.genericEphemeralVolumes) {
        errors.push(`volume ${volume.name} is a generic ephemeral volume, but that feature is disabled in kubelet`);
        continue;
      }
      if (claim) {
        // Go's createVolumeSpec: the claim's PV is the volume's spec (its name the spec name).
        const resolution = this.resolveClaim(pod, volume, claim.claimName);
        if (resolution.error !== undefined) {
          errors.push(resolution.error);
          continue;
        }
        // Still being read: nothing to set up yet, and the pod waits.
        if (!resolution.result) continue;
        persistentVolume = resolution.result;
        const pv = persistentVolume.volume;
        try {
          checkVolumeMode(pod, volume.name, pv);
        } catch (err) {
          this.logger.error('Error processing volume', err, { pod: podRef(pod), volumeName: volume.name });
          errors.push(errorText(err));
          continue;
        }
        specName = pv.metadata?.name ?? '';
        plugin = this.plugins.find((p) => p.canSupportPersistentVolume?.(pv) ?? false);
      }
      const dirName = plugin ? specName : volume.name;
      plugin ??= this.plugins.find((p) => p.canSupport(volume));
      if (!plugin) {
        const message = `failed to get Plugin from volumeSpec for volume ${JSON.stringify(specName)} err=no volume plugin matched`;
        this.logger.error('Failed to add volume to desiredStateOfWorld', new Error(message), { pod: podRef(pod), volumeName: volume.name });
        errors.push(message);
        continue;
      }
      volumes.push({
        uniqueName: uniquePodVolumeName(plugin.name, uid, dirName),
        podUid: uid,
        volumeName: volume.name,
        volume,
        plugin,
        dir: podVolumeDir(this.opts.podsDir, uid, plugin.name, dirName),
        ...(persistentVolume ? { persistentVolume } : {}),
      });
    }
    if (errors.length > 0) this.podErrors.set(uid, errors);
    else this.podErrors.delete(uid);
    this.desired.setPod(pod, volumes);
  }

  private hasUnresolvedClaims(uid: string): boolean {
    for (const resolution of this.claims.get(uid)?.values() ?? []) if (!resolution.result) return true;
    return false;
  }

  /**
   * The cached resolution of a pod's claim volume; starts reading the claim and its PV when nothing is
   * cached, or again (once per populator pass) while the last attempt failed.
   */
  private resolveClaim(pod: V1Pod, volume: V1Volume, claimName: string): ClaimResolution {
    const uid = pod.metadata!.uid!;
    let byVolume = this.claims.get(uid);
    if (!byVolume) {
      byVolume = new Map();
      this.claims.set(uid, byVolume);
    }
    let resolution = byVolume.get(volume.name);
    if (!resolution || resolution.claimName !== claimName) {
      resolution = { claimName, inFlight: false, pass: -1 };
      byVolume.set(volume.name, resolution);
    }
    if (resolution.result || resolution.inFlight || resolution.pass === this.populatorPass) return resolution;
    const current = resolution;
    current.inFlight = true;
    current.pass = this.populatorPass;
    this.logger.v(5).info('Found PVC', { PVC: `${pod.metadata?.namespace ?? ''}/${claimName}`, pod: podRef(pod), volumeName: volume.name });
    const run = resolvePersistentVolume(this.host.persistentVolumes, pod, volume).then(
      (result) => {
        current.result = result;
        current.error = undefined;
        this.logger.v(5).info('Extracted volumeSpec from bound PV and PVC', {
          PVC: `${pod.metadata?.namespace ?? ''}/${claimName}`,
          PVName: result.volume.metadata?.name ?? '',
          pod: podRef(pod),
        });
      },
      (err: unknown) => {
        const message = errorText(err);
        // Logged when the error changes, not on every pass (Go logs each 100 ms pass).
        if (message !== current.error) this.logger.error('Error processing volume', err, { pod: podRef(pod), volumeName: volume.name });
        current.error = message;
      },
    );
    const tracked = run.finally(() => {
      current.inFlight = false;
      this.operations.delete(tracked);
      // The pod may have gone (or its claim changed) meanwhile.
      if (this.claims.get(uid)?.get(volume.name) !== current) return;
      // The pod is processed again with the answer: now, or by the next populator pass. A pod whose
      // containers are stopping gets no new volumes (the populator skips it too).
      this.processed.delete(uid);
      const latest = this.desired.getPod(uid);
      if (latest && this.running && !this.opts.podState.shouldPodContainersBeTerminating(uid)) this.addPod(latest);
      this.checkWaiters();
      this.kick();
    });
    this.operations.add(tracked);
    return current;
  }

  private removePod(uid: string): void {
    this.desired.deletePod(uid);
    this.processed.delete(uid);
    this.podErrors.delete(uid);
    this.claims.delete(uid);
  }

  // ---- reconciler

  private kick(): void {
    if (this.kickScheduled || !this.running) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      this.reconcile();
    });
  }

  private reconcile(): void {
    if (!this.running) return;
    const sourcesReady = this.opts.sourcesReady?.() ?? true;
    this.adoptReconstructedVolumes();
    for (const volume of [...this.actual.all()]) {
      if (this.desired.hasVolume(volume.podUid, volume.volumeName)) continue;
      // A pod whose claims are still being read may need this volume: it stays until they are resolved
      // (a restarted kubelet without its API server never unmounts a running pod's claims).
      if (this.desired.hasPod(volume.podUid) && this.hasUnresolvedClaims(volume.podUid)) continue;
      // Volumes found on disk wait until every source has told us which pods it still has.
      if (volume.reconstructed && !sourcesReady) continue;
      this.startOperation(volume.uniqueName, () => this.unmount(volume));
    }
    for (const { pod, volume } of this.desired.volumesToMount()) {
      const actual = this.actual.get(volume.podUid, volume.volumeName);
      if (actual && !actual.remountRequired && isSetUp(actual)) continue;
      this.startOperation(volume.uniqueName, () => this.mount(pod, volume, actual));
    }
    this.checkWaiters();
  }

  /**
   * A volume found on disk is filed under its directory's name, which for a claim served through
   * canSupportPersistentVolume is the PV's: once the pod's claim is resolved, it takes the pod's name.
   */
  private adoptReconstructedVolumes(): void {
    for (const { volume } of this.desired.volumesToMount()) {
      let actual = this.actual.get(volume.podUid, volume.volumeName);
      if (!actual) {
        actual = this.actual
          .volumesOf(volume.podUid)
          .find((v) => v.reconstructed && v.dir === volume.dir && !this.desired.hasVolume(v.podUid, v.volumeName));
        if (!actual) continue;
        this.actual.rename(volume.podUid, actual.volumeName, volume.volumeName);
      }
      const claim = volume.persistentVolume?.claim.metadata;
      if (claim && !actual.pvcRef) actual.pvcRef = { name: claim.name ?? '', namespace: claim.namespace ?? '' };
    }
  }

  private startOperation(key: string, operation: () => Promise<void>): void {
    if (this.pending.has(key)) return;
    if (this.backoff.isInBackOffSinceUpdate(key, this.clock.now())) return;
    this.pending.add(key);
    const run = operation().then(
      () => this.backoff.reset(key),
      () => this.backoff.next(key),
    );
    const tracked = run.finally(() => {
      this.pending.delete(key);
      this.operations.delete(tracked);
      this.checkWaiters();
      this.kick();
    });
    this.operations.add(tracked);
  }

  /** Runs a volume operation, reporting it to onOperationComplete. */
  private async operation(pluginName: string, operationName: string, run: () => Promise<void>): Promise<void> {
    const report = this.opts.onOperationComplete;
    if (!report) return run();
    const started = this.clock.now();
    try {
      await run();
    } catch (error) {
      report({ pluginName, operationName, durationMs: this.clock.now() - started, error });
      throw error;
    }
    report({ pluginName, operationName, durationMs: this.clock.now() - started });
  }

  private mount(pod: V1Pod, volume: VolumeToMount, actual: ActualVolume | undefined): Promise<void> {
    return this.operation(volume.plugin.name, 'volume_mount', () => this.mountVolume(pod, volume, actual));
  }

  private async mountVolume(pod: V1Pod, volume: VolumeToMount, actual: ActualVolume | undefined): Promise<void> {
    const remount = actual !== undefined && isSetUp(actual);
    if (actual) actual.remountRequired = false;
    try {
      const mounted = await volume.plugin.setUp({
        pod,
        volume: volume.volume,
        dir: volume.dir,
        fsGroup: pod.spec?.securityContext?.fsGroup ?? undefined,
        host: this.host,
        signal: this.controller?.signal,
        ...(volume.persistentVolume ? { persistentVolume: volume.persistentVolume } : {}),
      });
      // A raw block volume reaches the container as a device, which the plugin must have mapped.
      if (podVolumeUse(pod, volume.volumeName).devices && !mounted.devicePath) {
        throw new Error(`volume ${volume.volumeName} is specified in volumeDevices, but volume plugin ${volume.plugin.name} mapped no block device for it`);
      }
      this.markSetUp(volume, mounted, {});
      this.logger.v(remount ? 4 : 3).info('MountVolume.SetUp succeeded for volume', { volumeName: volume.volumeName, uniqueName: volume.uniqueName, pod: podRef(pod) });
    } catch (err) {
      if (actual) actual.remountRequired = true;
      else if (isUncertain(err)) this.markSetUp(volume, { path: volume.dir, readOnly: false, selinuxRelabel: false }, { uncertain: true });
      // Go names the volume by its spec: a claim's PersistentVolume, else the pod's volume; a plugin error may
      // name the operation it failed in (e.g. CSI's MountVolume.MountDevice).
      const specName = volume.persistentVolume?.volume.metadata?.name ?? volume.volumeName;
      const message = hasEventMessage(err) ? err.eventMessage(specName) : `MountVolume.SetUp failed for volume ${JSON.stringify(specName)} : ${errorText(err)}`;
      this.logger.error('Operation for volume failed', err, { volumeName: volume.volumeName, pod: podRef(pod) });
      this.recorder.event(pod, 'Warning', KubeletEventReason.FailedMountVolume, message);
      throw err;
    }
  }

  /** Records a volume setUp left set up: for good, or uncertain (to be set up again, and torn down if the pod goes). */
  private markSetUp(volume: VolumeToMount, mounted: MountedVolume, state: { uncertain?: true }): void {
    const claim = volume.persistentVolume?.claim.metadata;
    this.actual.markMounted({
      uniqueName: volume.uniqueName,
      podUid: volume.podUid,
      volumeName: volume.volumeName,
      pluginName: volume.plugin.name,
      dir: volume.dir,
      mounted,
      reconstructed: false,
      remountRequired: state.uncertain === true,
      ...state,
      ...(claim ? { pvcRef: { name: claim.name ?? '', namespace: claim.namespace ?? '' } } : {}),
    });
  }

  private unmount(volume: ActualVolume): Promise<void> {
    return this.operation(volume.pluginName, 'volume_unmount', () => this.unmountVolume(volume));
  }

  private async unmountVolume(volume: ActualVolume): Promise<void> {
    const plugin = this.pluginsByName.get(volume.pluginName);
    try {
      // Go: the subPath bind mounts of the volume go first (operation_generator's UnmountVolume).
      try {
        await cleanSubPaths(this.opts.mounter, podDir(this.opts.podsDir, volume.podUid), volume.volumeName, this.logger);
      } catch (err) {
        throw new Error(
          `error cleaning subPath mounts for volume ${JSON.stringify(volume.volumeName)} (UniqueName: ${JSON.stringify(volume.uniqueName)}) ` +
            `pod ${JSON.stringify(volume.podUid)} (UID: ${JSON.stringify(volume.podUid)}) : ${errorText(err)}`,
          { cause: err },
        );
      }
      if (plugin) await plugin.tearDown(volume.dir, this.host);
      else await rm(volume.dir, { recursive: true, force: true });
      this.actual.markUnmounted(volume.podUid, volume.volumeName);
      this.logger.info('UnmountVolume.TearDown succeeded for volume', { volumeName: volume.volumeName, uniqueName: volume.uniqueName, podUID: volume.podUid });
      if (this.actual.volumesOf(volume.podUid).length === 0) {
        this.host.tokens.deleteServiceAccountToken?.(volume.podUid);
        await removeEmptyDirs(podVolumesDir(this.opts.podsDir, volume.podUid));
      }
    } catch (err) {
      this.logger.error('UnmountVolume.TearDown failed for volume', err, { volumeName: volume.volumeName, uniqueName: volume.uniqueName, podUID: volume.podUid });
      throw err;
    }
  }

  // ---- waiting for the reconciler

  async waitForAttachAndMount(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const expected = [...podVolumeNamesInUse(pod)].sort();
    if (expected.length === 0) return;
    this.logger.v(3).info('Waiting for volumes to attach and mount for pod', { pod: podRef(pod) });
    this.addPod(pod);
    // Volumes whose contents come from the API are written again on every sync of the pod.
    for (const volume of this.actual.volumesOf(uid)) {
      if (this.pluginsByName.get(volume.pluginName)?.requiresRemount) volume.remountRequired = true;
    }
    this.kick();
    const podError = () => this.podErrors.get(uid);
    if (this.unmountedVolumes(uid, expected).length === 0 && !podError()) {
      this.logger.v(3).info('All volumes are attached and mounted for pod', { pod: podRef(pod) });
      return;
    }
    let failure: string | undefined;
    const timeoutMs = this.opts.mountTimeoutMs ?? POD_ATTACH_AND_MOUNT_TIMEOUT_MS;
    try {
      await this.waitFor(this.mountWaiters, uid, expected, timeoutMs, signal);
      failure = podError()?.join('; ');
    } catch (err) {
      if (signal?.aborted) throw err;
      failure = podError()?.join('; ') ?? 'timed out waiting for the condition';
    }
    if (failure === undefined) {
      this.logger.v(3).info('All volumes are attached and mounted for pod', { pod: podRef(pod) });
      return;
    }
    const unmounted = this.unmountedVolumes(uid, expected);
    if (unmounted.length === 0 && !podError()) return;
    // Go's list of unattached volumes names every expected volume (it looks them up by the wrong name); kept.
    throw new Error(`unmounted volumes=[${unmounted.join(' ')}], unattached volumes=[${expected.join(' ')}]: ${failure}`);
  }

  async waitForUnmount(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    // The caller knows the pod's containers are stopped: nothing of it stays desired.
    this.removePod(uid);
    this.kick();
    if (!this.podVolumesExist(uid)) return;
    try {
      await this.waitFor(this.unmountWaiters, uid, [], this.opts.mountTimeoutMs ?? POD_ATTACH_AND_MOUNT_TIMEOUT_MS, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      const mounted = this.actual.volumesOf(uid).map((v) => v.volumeName).sort();
      throw new Error(`mounted volumes=[${mounted.join(' ')}]: timed out waiting for the condition`);
    }
  }

  private waitFor(list: MountWaiter[], podUid: string, expected: string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<void>((resolve, reject) => {
      const finish = (err?: unknown): void => {
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        const at = list.indexOf(waiter);
        if (at >= 0) list.splice(at, 1);
        if (err) reject(err);
        else resolve();
      };
      const waiter: MountWaiter = { podUid, expected, resolve: () => finish() };
      const onAbort = (): void => finish(abortReason(signal!));
      const timer = this.clock.setTimeout(() => finish(new Error('timed out waiting for the condition')), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      list.push(waiter);
    });
  }

  private checkWaiters(): void {
    for (const waiter of [...this.mountWaiters]) {
      if (this.podErrors.has(waiter.podUid) || this.unmountedVolumes(waiter.podUid, waiter.expected).length === 0) waiter.resolve();
    }
    for (const waiter of [...this.unmountWaiters]) {
      if (!this.podVolumesExist(waiter.podUid)) waiter.resolve();
    }
  }

  private unmountedVolumes(podUid: string, expected: string[]): string[] {
    return expected.filter((name) => {
      const volume = this.actual.get(podUid, name);
      return !volume || !isSetUp(volume);
    });
  }

  // ---- queries

  getMountedVolumesForPod(podUid: string): Map<string, MountedVolume> {
    const volumes = new Map<string, MountedVolume>();
    for (const volume of this.actual.volumesOf(podUid)) if (isSetUp(volume)) volumes.set(volume.volumeName, volume.mounted);
    return volumes;
  }

  reconcilerStatesHasBeenSynced(): boolean {
    return this.reconstructed && this.running;
  }

  getContainerMounts(pod: V1Pod, container: V1Container, env?: ReadonlyMap<string, string>): Promise<ContainerMount[]> {
    const uid = pod.metadata?.uid ?? '';
    return makeMounts(pod, container, this.getMountedVolumesForPod(uid), {
      env,
      podDir: podDir(this.opts.podsDir, uid),
      mounter: this.opts.mounter,
      logger: this.logger,
    });
  }

  podVolumesExist(podUid: string): boolean {
    return this.actual.volumesOf(podUid).length > 0;
  }

  /**
   * Go: GetVolumesInUse: the mounted volumes' `inUseName`s and what each plugin reports in use (being
   * attached or set up, devices still staged), so the attach/detach controller detaches none of them.
   */
  getVolumesInUse(): string[] {
    const inUse = new Set<string>();
    for (const volume of this.actual.all()) if (volume.mounted.inUseName) inUse.add(volume.mounted.inUseName);
    for (const plugin of this.plugins) {
      if (!plugin.volumesInUse) continue;
      try {
        for (const name of plugin.volumesInUse()) inUse.add(name);
      } catch (err) {
        this.logger.error('Failed to list the volumes in use of a volume plugin', err, { pluginName: plugin.name });
      }
    }
    return [...inUse].sort();
  }

  async getVolumeStats(podUid: string): Promise<PodVolumeStats[]> {
    const volumes = this.actual.volumesOf(podUid).filter((volume) => isSetUp(volume));
    const results = await Promise.all(
      volumes.map(async (volume): Promise<PodVolumeStats | undefined> => {
        const plugin = this.pluginsByName.get(volume.pluginName);
        if (!plugin?.getVolumeStats) return undefined;
        try {
          const stats = await plugin.getVolumeStats(volume.dir, volume.mounted, this.host);
          if (!stats) return undefined;
          return { volumeName: volume.volumeName, ...(volume.pvcRef ? { pvcRef: { ...volume.pvcRef } } : {}), stats };
        } catch (err) {
          this.logger.error('Failed to get the stats of a volume', err, { podUID: podUid, volumeName: volume.volumeName, pluginName: volume.pluginName });
          return undefined;
        }
      }),
    );
    return results.filter((result): result is PodVolumeStats => result !== undefined);
  }

  remountPodsReferencing(matches: (pod: V1Pod) => boolean): void {
    for (const uid of this.desired.podUids()) {
      const pod = this.desired.getPod(uid);
      if (!pod || !matches(pod)) continue;
      for (const volume of this.actual.volumesOf(uid)) {
        if (!this.pluginsByName.get(volume.pluginName)?.requiresRemount) continue;
        volume.remountRequired = true;
        // A change is news: a volume backing off after "not found" retries now.
        this.backoff.reset(volume.uniqueName);
      }
      for (const volume of this.desired.volumesOf(uid)) this.backoff.reset(volume.uniqueName);
    }
    this.kick();
  }

  // ---- disk

  /**
   * Go's reconstruction: volume directories of pods found on disk count as set up, without mounting again.
   * A plugin with `reconstruct` says how such a volume is mounted (its path, device, in-use name). When it
   * answers undefined, nothing is set up in the directory: it is not counted, so nothing is torn down there;
   * a pod still running sets the volume up afresh, and the directory of a pod that is gone goes with
   * cleanupOrphanedPodDirs (which keeps any pod directory with a mount under it). When `reconstruct` fails,
   * the volume counts as mounted at its directory, so the plugin's tearDown still gets to undo what may be
   * set up there (Go keeps such a volume for the reconciler rather than forget a mount).
   */
  private async reconstruct(): Promise<void> {
    for (const uid of await listDir(this.opts.podsDir)) {
      for (const escaped of await listDir(podVolumesDir(this.opts.podsDir, uid))) {
        const pluginName = unescapePluginName(escaped);
        const plugin = this.pluginsByName.get(pluginName);
        for (const volumeName of await listDir(join(podVolumesDir(this.opts.podsDir, uid), escaped))) {
          const dir = podVolumeDir(this.opts.podsDir, uid, pluginName, volumeName);
          if (!plugin) {
            this.logger.warn('Could not reconstruct volume: no volume plugin of that name', { podUID: uid, volumeName, pluginName });
            continue;
          }
          let mounted: MountedVolume | undefined = { path: dir, readOnly: false, selinuxRelabel: false };
          if (plugin.reconstruct) {
            try {
              mounted = await plugin.reconstruct(dir, this.host);
            } catch (err) {
              this.logger.error('Could not reconstruct volume; it is kept as set up at its directory for the plugin to tear down', err, {
                podUID: uid,
                volumeName,
                pluginName,
              });
            }
            if (!mounted) {
              this.logger.info('Volume directory holds nothing set up; not reconstructed', { podUID: uid, volumeName, pluginName, dir });
              continue;
            }
          }
          this.actual.markMounted({
            uniqueName: uniquePodVolumeName(pluginName, uid, volumeName),
            podUid: uid,
            volumeName,
            pluginName,
            dir,
            mounted,
            reconstructed: true,
            remountRequired: false,
            ...(plugin.reconstruct ? { reconstructedByPlugin: true } : {}),
          });
          this.logger.v(4).info('Volume is reconstructed from disk', { podUID: uid, volumeName, pluginName });
        }
      }
    }
  }

  async cleanupOrphanedPodDirs(keep: ReadonlySet<string>): Promise<void> {
    for (const uid of await listDir(this.opts.podsDir)) {
      if (keep.has(uid) || this.desired.hasPod(uid)) continue;
      if (this.podVolumesExist(uid)) {
        this.logger.v(3).info('Orphaned pod found, but volumes are not cleaned up', { podUID: uid });
        continue;
      }
      const dir = podDir(this.opts.podsDir, uid);
      // subPath bind mounts its volumes' teardown left (a kubelet that stopped in between) go first;
      // what still cannot be unmounted keeps the directory.
      const subPathsDir = podVolumeSubpathsDir(this.opts.podsDir, uid);
      let subPathsLeft = false;
      for (const volumeName of await listDir(subPathsDir)) {
        try {
          await cleanSubPaths(this.opts.mounter, dir, volumeName, this.logger);
        } catch (err) {
          subPathsLeft = true;
          this.logger.error('Orphaned pod found, but failed to clean up its volume subpaths', err, { podUID: uid, volumeName });
        }
      }
      if (subPathsLeft) continue;
      const mounts = await this.opts.mounter.mountPointsUnder(dir);
      if (mounts.length > 0) {
        this.logger.error('Orphaned pod found, but volumes are still mounted on disk', undefined, { podUID: uid, paths: mounts });
        continue;
      }
      try {
        await rm(dir, { recursive: true, force: true });
        this.logger.v(3).info('Orphaned pod found, removing', { podUID: uid });
      } catch (err) {
        this.logger.error('Failed to remove orphaned pod dir', err, { podUID: uid });
      }
    }
  }
}

/** Set up by this process, or found on disk as the plugin's reconstruct hook described it. */
function isSetUp(volume: ActualVolume): boolean {
  if (volume.uncertain) return false;
  return !volume.reconstructed || volume.reconstructedByPlugin === true;
}

/** A plugin error saying the volume may be set up anyway (e.g. CSI's CsiVolumeError.uncertain). */
function isUncertain(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { uncertain?: unknown }).uncertain === true;
}

/** A plugin error that words its own event message (Go: the operation generator's GenerateError for the step that failed). */
function hasEventMessage(err: unknown): err is { eventMessage(volumeName: string): string } {
  return typeof err === 'object' && err !== null && typeof (err as { eventMessage?: unknown }).eventMessage === 'function';
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/** Removes dir's empty plugin directories and dir itself when empty; anything left is kept. */
async function removeEmptyDirs(dir: string): Promise<void> {
  for (const entry of await listDir(dir)) await rmdir(join(dir, entry)).catch(() => undefined);
  await rmdir(dir).catch(() => undefined);
}
