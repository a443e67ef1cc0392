// Node registration and node status (Go: pkg/kubelet/kubelet_node_status.go, nodestatus/setters.go,
// util/node PatchNodeStatus).
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import {
  apiErrorMessage,
  createTwoWayMergePatch,
  isAbortError,
  isAlreadyExists,
  jitterUntil,
  defaultLogger,
  realClock,
  type Clock,
  type Json,
  type JsonObject,
  type Logger,
  parseThresholdConfig,
  type EvictionThreshold,
} from '@kubelet-ts/core';
import type { ImageService, RuntimeService } from '@kubelet-ts/cri-client';
import { hostInterfaceAddresses, lookupHostWithTimeout, parseNodeIPs, resolveNodeIPs } from './addresses.js';
import { toKubeClient, type KubeClient, type KubeClientSource } from './kube-client.js';
import { cachedMachineInfo, defaultHostname, goArch, goOS, type MachineInfo, type MachineInfoProvider } from './machine-info.js';
import {
  nodeAllocatableReservation,
  parseLangleSeparatedMapStringString,
  parseResourceList,
  type ResourceList,
} from './resources.js';
import {
  DEFAULT_NODE_STATUS_MAX_IMAGES,
  DISK_PRESSURE,
  MEMORY_PRESSURE,
  PID_PRESSURE,
  setAddresses,
  setDaemonEndpoints,
  setImages,
  setVolumesInUse,
  setMachineInfo,
  setPressureCondition,
  setReadyCondition,
  setVersionInfo,
  zeroExtendedResources,
  type DevicePluginCapacity,
  type NodeEventFunc,
  type NodeImage,
} from './setters.js';
import { parseTaints } from './taints.js';
import { nodePatchSchema, nodeToWire, semanticEqual } from './wire.js';

export const LABEL_HOSTNAME = 'kubernetes.io/hostname';
export const LABEL_OS = 'kubernetes.io/os';
export const LABEL_ARCH = 'kubernetes.io/arch';
export const LABEL_BETA_OS = 'beta.kubernetes.io/os';
export const LABEL_BETA_ARCH = 'beta.kubernetes.io/arch';
export const TAINT_NODE_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';
export const ANNOTATION_CONTROLLER_MANAGED_ATTACH = 'volumes.kubernetes.io/controller-managed-attach-detach';

/** The labels updateDefaultLabels keeps in step with the kubelet (v1.Label* and the beta os/arch labels). */
export const DEFAULT_LABELS = [
  LABEL_HOSTNAME,
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  LABEL_OS,
  LABEL_ARCH,
  'node.kubernetes.io/windows-build',
  LABEL_BETA_OS,
  LABEL_BETA_ARCH,
];

/** Go's nodeStatusUpdateRetry. */
export const NODE_STATUS_UPDATE_RETRY = 5;
/** Go's nodeReadyGracePeriod: how long the fast status update keeps trying after start. */
export const NODE_READY_GRACE_PERIOD_MS = 120_000;
/** The version the node reports when the app does not say. */
export const DEFAULT_KUBELET_VERSION = 'v1.31.0';

/** What the kubelet knows of its own health (Go: runtimeState runtimeErrors/networkErrors/storageErrors). */
export interface HealthStatus {
  /** e.g. "container runtime is down", "PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s". */
  runtimeErrors?: Error[];
  /** e.g. "container runtime network not ready: NetworkReady=false ...". */
  networkErrors?: Error[];
  storageErrors?: Error[];
  /** The node shutdown manager's status (Go: nodeShutdownManagerErrorsFunc), e.g. "node is shutting down". */
  shutdownErrors?: Error[];
}

/** An event about the node, for the kubelet's EventRecorder (involvedObject: the Node). */
export interface NodeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface NodeStatusManagerOptions {
  nodeName: string;
  /** Our KubeClient, client-node API objects, or a KubeConfig (requests then time out after nodeStatusUpdateFrequencyMs). */
  kubeClient: KubeClientSource;
  /** For containerRuntimeVersion ("<runtimeName>://<runtimeVersion>"). */
  runtimeService?: Pick<RuntimeService, 'version'>;
  /** For the images list; `imageList` overrides it (e.g. with the image manager's cache). */
  imageService?: Pick<ImageService, 'listImages'>;
  imageList?: () => Promise<NodeImage[]>;
  /**
   * The volume manager's volumes in use for `status.volumesInUse`, set once its reconciler has synced its
   * states (Go: the VolumesInUse setter); without it the field is left alone.
   */
  volumesInUse?: { synced(): boolean; list(): string[] };
  clock?: Clock;
  logger?: Logger;
  /** The kubelet's health for the Ready condition. Default: healthy. */
  healthChecks?: () => HealthStatus;
  /** The eviction manager's view; default: no pressure. */
  pressure?: { memory?: () => boolean; disk?: () => boolean; pid?: () => boolean };
  /** Events about the node (NodeReady, NodeHasSufficientMemory, Rebooted, ...). */
  recordEvent?: (event: NodeEvent) => void;
  /**
   * Hands the Node's spec.podCIDRs (comma-joined) to the runtime (Go: updatePodCIDR, i.e. CRI UpdateRuntimeConfig),
   * on every status sync where the Node has them; it answers whether the CIDR changed.
   */
  updatePodCIDR?: (podCIDRs: string) => Promise<boolean>;
  /** Called when a status update fails again within one sync (Go: closes the client's connections). */
  onRepeatedHeartbeatFailure?: () => void;
  /** --hostname-override; default os.hostname() lower-cased. */
  hostname?: string;
  /** --register-node (default true): create the Node when it does not exist. */
  registerNode?: boolean;
  /** --node-labels. */
  nodeLabels?: Record<string, string>;
  /** --register-with-taints ("key=value:Effect,..." or parsed). */
  registerWithTaints?: V1Taint[] | string;
  /** --register-schedulable (default true); false registers unschedulable with the unschedulable taint. */
  registerSchedulable?: boolean;
  /** --enable-controller-attach-detach (default true): the controller-managed-attach-detach annotation. */
  enableControllerAttachDetach?: boolean;
  /** --node-ip: one IP or a dual-stack pair; default detected. */
  nodeIP?: string;
  /** --port (default 10250), reported in daemonEndpoints. */
  kubeletPort?: number;
  /** --max-pods (default 110). */
  maxPods?: number;
  /** --pods-per-core (default 0: off). */
  podsPerCore?: number;
  /** --kube-reserved / --system-reserved ("cpu=100m,memory=100Mi" or parsed). */
  kubeReserved?: string | Record<string, string> | ResourceList;
  systemReserved?: string | Record<string, string> | ResourceList;
  /** --eviction-hard ("memory.available<100Mi,..." or the map form, parsed by core's parseThresholdConfig, or its thresholds); undefined: Go's defaults. */
  evictionHard?: string | Record<string, string> | EvictionThreshold[];
  /** --node-status-update-frequency (default 10 s). */
  nodeStatusUpdateFrequencyMs?: number;
  /** --node-status-report-frequency (default 5 min): a status is patched at least this often. */
  nodeStatusReportFrequencyMs?: number;
  /** --node-status-max-images (default 50; -1: no cap). */
  nodeStatusMaxImages?: number;
  /** --root-dir (default /var/lib/kubelet): its filesystem is the ephemeral-storage capacity. */
  rootDir?: string;
  /** Machine facts, or a provider of them; default: read from the host once. */
  machineInfo?: MachineInfo | MachineInfoProvider;
  /** What nodeInfo.kubeletVersion says. */
  kubeletVersion?: string;
  /** Should extended resources be zeroed on re-registration (Go: the device manager's checkpoint is gone). Default never. */
  shouldResetExtendedResourceCapacity?: () => boolean;
  /** The device plugins' capacity, allocatable and removed resources (Go: GetDevicePluginResourceCapacity). Default none. */
  devicePluginResourceCapacity?: () => DevicePluginCapacity;
  /** Host addresses for --node-ip validation and detection (tests inject them). */
  interfaceAddresses?: () => string[];
  /**
   * The node's InternalIP addresses as given, neither validated nor detected (as a cloud provider's addresses are
   * taken): for a simulated node whose server listens on the loopback (kubelet fleet). Default: --node-ip or detected.
   */
  internalIPs?: string[];
  lookupHost?: (name: string) => Promise<string[]>;
  /** OS and arch as Go names them; default this process's. */
  os?: string;
  arch?: string;
}

/** The node status side of the kubelet, as the app uses it. */
export interface NodeStatusProvider {
  start(): void;
  stop(): Promise<void>;
  registerNode(signal?: AbortSignal): Promise<void>;
  syncNodeStatus(): Promise<void>;
  lastNode(): V1Node | undefined;
  isRegistered(): boolean;
}

/** A simple async mutex (Go: syncNodeStatusMux). */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const prev = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    await prev;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

function toReserved(v: string | Record<string, string> | ResourceList | undefined): ResourceList {
  return v instanceof Map ? v : parseResourceList(v);
}

/**
 * Registers the node, keeps its status current (every nodeStatusUpdateFrequency, patched when it
 * changed or nodeStatusReportFrequency passed) and answers what the last status was.
 */
export class NodeStatusManager implements NodeStatusProvider {
  readonly nodeName: string;
  private readonly client: KubeClient;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly opts: NodeStatusManagerOptions;
  private readonly hostname: string;
  private readonly nodeIPs: string[];
  private readonly registerWithTaints: V1Taint[];
  private readonly kubeReserved: ResourceList;
  private readonly systemReserved: ResourceList;
  private readonly evictionHard: EvictionThreshold[];
  private readonly machineInfo: MachineInfoProvider;
  private readonly updateFrequencyMs: number;
  private readonly reportFrequencyMs: number;
  private readonly mutex = new Mutex();
  private readonly os: string;
  private readonly arch: string;
  private abort = new AbortController();
  private loops: Promise<void>[] = [];
  private registered = false;
  private latest: V1Node | undefined;
  private lastStatusReportTime = 0;
  private lastNodeUnschedulable: boolean;
  private runtimeName = '';

  constructor(opts: NodeStatusManagerOptions) {
    this.opts = opts;
    this.nodeName = opts.nodeName;
    this.updateFrequencyMs = opts.nodeStatusUpdateFrequencyMs ?? 10_000;
    this.reportFrequencyMs = opts.nodeStatusReportFrequencyMs ?? 300_000;
    this.client = toKubeClient(opts.kubeClient, { timeoutMs: this.updateFrequencyMs });
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ node: opts.nodeName });
    this.hostname = defaultHostname(opts.hostname);
    this.nodeIPs = parseNodeIPs(opts.nodeIP);
    this.registerWithTaints = typeof opts.registerWithTaints === 'string' ? parseTaints(opts.registerWithTaints) : (opts.registerWithTaints ?? []);
    this.kubeReserved = toReserved(opts.kubeReserved);
    this.systemReserved = toReserved(opts.systemReserved);
    const hard = opts.evictionHard;
    this.evictionHard = Array.isArray(hard) ? hard : parseThresholdConfig([], typeof hard === 'string' ? parseLangleSeparatedMapStringString(hard) : hard);
    const mi = opts.machineInfo;
    this.machineInfo = typeof mi === 'function' ? mi : mi ? async () => mi : cachedMachineInfo(opts.rootDir ?? '/var/lib/kubelet');
    this.lastNodeUnschedulable = !(opts.registerSchedulable ?? true);
    this.os = opts.os ?? goOS();
    this.arch = opts.arch ?? goArch();
  }

  /** The node as last read from or written to the API server. */
  lastNode(): V1Node | undefined {
    return this.latest ? structuredClone(this.latest) : undefined;
  }

  isRegistered(): boolean {
    return this.registered;
  }

  /**
   * Starts the status loop (first sync at once, then every nodeStatusUpdateFrequency with 4%
   * jitter) and the fast update that posts Ready as soon as the node becomes ready.
   */
  start(): void {
    if (this.loops.length > 0) return;
    if (this.abort.signal.aborted) this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loops = [
      jitterUntil(() => this.syncNodeStatus(), this.updateFrequencyMs, 0.04, true, signal, this.clock, { logger: this.logger, name: 'syncNodeStatus' }),
      this.fastStatusUpdateOnce(signal),
    ];
  }

  /** Stops the loops and aborts requests in flight; resolves when nothing is left running. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled(this.loops);
    await this.mutex.run(async () => undefined);
    this.loops = [];
  }

  /** syncNodeStatus: registers first if needed (blocking until it succeeds), then updates the status. */
  syncNodeStatus(): Promise<void> {
    return this.mutex.run(() => this.syncNodeStatusLocked());
  }

  private async syncNodeStatusLocked(): Promise<void> {
    const signal = this.abort.signal;
    if (signal.aborted) return;
    try {
      if (this.opts.registerNode ?? true) await this.registerWithAPIServer(signal);
      await this.updateNodeStatus(signal);
    } catch (err) {
      if (signal.aborted && isAbortError(err)) return;
      if (!signal.aborted) this.logger.error('Unable to update node status', err);
    }
  }

  /**
   * registerWithAPIServer: tries until registered (100 ms doubling to 7 s between attempts) or the
   * signal aborts. Safe to call again: it returns at once after success.
   */
  registerNode(signal?: AbortSignal): Promise<void> {
    const s = signal ? AbortSignal.any([signal, this.abort.signal]) : this.abort.signal;
    return this.registerWithAPIServer(s);
  }

  private async registerWithAPIServer(signal: AbortSignal): Promise<void> {
    let step = 100;
    while (!this.registered) {
      await this.clock.sleep(step, signal);
      step = Math.min(step * 2, 7000);
      let node: V1Node;
      try {
        node = await this.initialNode();
      } catch (err) {
        this.logger.error('Unable to construct v1.Node object for kubelet', err);
        continue;
      }
      this.logger.info('Attempting to register node');
      if (await this.tryRegisterWithAPIServer(node, signal)) {
        this.logger.info('Successfully registered node');
        this.registered = true;
      }
    }
  }

  /** The Node the kubelet registers: labels, taints, schedulability, annotations and a full status. */
  async initialNode(): Promise<V1Node> {
    const labels: Record<string, string> = {
      [LABEL_HOSTNAME]: this.hostname,
      [LABEL_OS]: this.os,
      [LABEL_ARCH]: this.arch,
      [LABEL_BETA_OS]: this.os,
      [LABEL_BETA_ARCH]: this.arch,
    };
    const node: V1Node = { apiVersion: 'v1', kind: 'Node', metadata: { name: this.nodeName, labels }, spec: {}, status: {} };
    const unschedulable = !(this.opts.registerSchedulable ?? true);
    if (unschedulable) node.spec!.unschedulable = true;
    const taints = this.registerWithTaints.map((t) => ({ ...t }));
    if (unschedulable && !taints.some((t) => t.key === TAINT_NODE_UNSCHEDULABLE && t.effect === 'NoSchedule')) {
      taints.push({ key: TAINT_NODE_UNSCHEDULABLE, effect: 'NoSchedule' });
    }
    if (taints.length > 0) node.spec!.taints = taints;
    if (this.opts.enableControllerAttachDetach ?? true) {
      node.metadata!.annotations = { [ANNOTATION_CONTROLLER_MANAGED_ATTACH]: 'true' };
    }
    for (const [k, v] of Object.entries(this.opts.nodeLabels ?? {})) {
      if (k in labels) this.logger.warn('The node label will overwrite default setting', { label: k, value: v, default: labels[k] });
      labels[k] = v;
    }
    await this.setNodeStatus(node);
    return node;
  }

  /** tryRegisterWithAPIServer: create, or reconcile the existing node's kubelet-owned fields. */
  private async tryRegisterWithAPIServer(node: V1Node, signal: AbortSignal): Promise<boolean> {
    try {
      this.latest = await this.client.createNode(node, { signal });
      return true;
    } catch (err) {
      if (!isAlreadyExists(err)) {
        if (!signal.aborted) this.logger.error('Unable to register node with API server', err);
        return false;
      }
    }
    let existing: V1Node;
    try {
      existing = await this.client.getNode(this.nodeName, { signal });
    } catch (err) {
      if (!signal.aborted) this.logger.error('Unable to register node with API server, error getting existing node', err);
      return false;
    }
    const original = structuredClone(existing);
    this.logger.info('Node was previously registered');
    let requiresUpdate = this.reconcileCMADAnnotation(node, existing);
    requiresUpdate = this.updateDefaultLabels(node, existing) || requiresUpdate;
    requiresUpdate = this.reconcileExtendedResource(node, existing) || requiresUpdate;
    if (requiresUpdate) {
      try {
        this.latest = await this.patchNode(original, existing, signal);
      } catch (err) {
        if (!signal.aborted) this.logger.error('Unable to reconcile node with API server, error updating node', err);
        return false;
      }
    } else {
      this.latest = existing;
    }
    return true;
  }

  private reconcileCMADAnnotation(node: V1Node, existing: V1Node): boolean {
    const want = node.metadata?.annotations?.[ANNOTATION_CONTROLLER_MANAGED_ATTACH];
    const have = existing.metadata?.annotations?.[ANNOTATION_CONTROLLER_MANAGED_ATTACH];
    if (want === have) return false;
    existing.metadata ??= {};
    if (want === undefined) {
      delete existing.metadata.annotations![ANNOTATION_CONTROLLER_MANAGED_ATTACH];
    } else {
      existing.metadata.annotations = { ...existing.metadata.annotations, [ANNOTATION_CONTROLLER_MANAGED_ATTACH]: want };
    }
    return true;
  }

  /** updateDefaultLabels: the default labels the kubelet sets win over the existing node's; empty values are removed. */
  private updateDefaultLabels(node: V1Node, existing: V1Node): boolean {
    existing.metadata ??= {};
    const labels = (existing.metadata.labels ??= {});
    let needsUpdate = false;
    for (const label of DEFAULT_LABELS) {
      const want = node.metadata?.labels?.[label];
      if (want === undefined) continue;
      if (labels[label] !== want) {
        labels[label] = want;
        needsUpdate = true;
      }
      if (labels[label] === '') delete labels[label];
    }
    return needsUpdate;
  }

  /** reconcileExtendedResource: capacity/allocatable defaults, and extended resources zeroed when the device state is gone. */
  private reconcileExtendedResource(node: V1Node, existing: V1Node): boolean {
    existing.status ??= {};
    let requiresUpdate = false;
    if (!existing.status.capacity || Object.keys(existing.status.capacity).length === 0) {
      if (node.status?.capacity) {
        existing.status.capacity = { ...node.status.capacity };
        requiresUpdate = true;
      }
    }
    if (!existing.status.allocatable || Object.keys(existing.status.allocatable).length === 0) {
      if (node.status?.allocatable) {
        existing.status.allocatable = { ...node.status.allocatable };
        requiresUpdate = true;
      }
    }
    if (this.opts.shouldResetExtendedResourceCapacity?.()) {
      if (zeroExtendedResources(existing)) {
        this.logger.info('Zero out extended resource capacity in existing node');
        requiresUpdate = true;
      }
    }
    return requiresUpdate;
  }

  /** updateNodeStatus: up to 5 attempts; throws "update node status exceeds retry count" after the last. */
  async updateNodeStatus(signal: AbortSignal = this.abort.signal): Promise<void> {
    this.logger.v(5).info('Updating node status');
    for (let i = 0; i < NODE_STATUS_UPDATE_RETRY; i++) {
      try {
        await this.tryUpdateNodeStatus(i, signal);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        if (i > 0) this.opts.onRepeatedHeartbeatFailure?.();
        this.logger.error('Error updating node status, will retry', err, { attempt: i + 1 });
      }
    }
    throw new Error('update node status exceeds retry count');
  }

  /**
   * tryUpdateNodeStatus: GET the node (the first try from the API server's cache), run the setters,
   * and PATCH the status when it changed or nodeStatusReportFrequency has passed.
   */
  private async tryUpdateNodeStatus(tryNumber: number, signal: AbortSignal): Promise<void> {
    let original: V1Node;
    try {
      original = await this.client.getNode(this.nodeName, { fromCache: tryNumber === 0, signal });
    } catch (err) {
      throw new Error(`error getting node ${JSON.stringify(this.nodeName)}: ${apiErrorMessage(err)}`, { cause: err });
    }
    const podCIDRs = original.spec?.podCIDRs ?? (original.spec?.podCIDR ? [original.spec.podCIDR] : []);
    if (podCIDRs.length > 0 && this.opts.updatePodCIDR) {
      try {
        await this.opts.updatePodCIDR(podCIDRs.join(','));
      } catch (err) {
        this.logger.error('Error updating pod CIDR', err);
      }
    }
    const { node, changed } = await this.updateNode(original);
    const shouldPatch = changed || this.clock.since(this.lastStatusReportTime) >= this.reportFrequencyMs;
    if (!shouldPatch) {
      this.latest = original;
      return;
    }
    await this.patchNodeStatus(original, node, signal);
  }

  /** updateNode: a copy of originalNode with the required labels and the setters applied, and whether it changed. */
  private async updateNode(originalNode: V1Node): Promise<{ node: V1Node; changed: boolean }> {
    const node = structuredClone(originalNode);
    node.metadata ??= {};
    const labels = (node.metadata.labels ??= {});
    let labelsChanged = false;
    if (labels[LABEL_OS] !== this.os) {
      labels[LABEL_OS] = this.os;
      labelsChanged = true;
    }
    if (labels[LABEL_ARCH] !== this.arch) {
      labels[LABEL_ARCH] = this.arch;
      labelsChanged = true;
    }
    await this.setNodeStatus(node);
    const changed = labelsChanged || nodeStatusHasChanged(originalNode, node);
    return { node, changed };
  }

  /** PatchNodeStatus, plus a metadata patch of the main resource when labels/annotations changed. */
  private async patchNodeStatus(original: V1Node, node: V1Node, signal: AbortSignal): Promise<V1Node> {
    const updated = await this.patchNode(original, node, signal);
    this.lastStatusReportTime = this.clock.now();
    this.latest = updated;
    return updated;
  }

  private async patchNode(original: V1Node, node: V1Node, signal: AbortSignal): Promise<V1Node> {
    const { metadataPatch, statusPatch } = prepareNodePatches(original, node);
    let updated: V1Node | undefined;
    if (metadataPatch) updated = await this.client.patchNode(this.nodeName, metadataPatch, { signal });
    if (statusPatch || !updated) {
      try {
        updated = await this.client.patchNodeStatus(this.nodeName, statusPatch ?? {}, { signal });
      } catch (err) {
        throw new Error(`failed to patch status ${JSON.stringify(JSON.stringify(statusPatch ?? {}))} for node ${JSON.stringify(this.nodeName)}: ${apiErrorMessage(err)}`, {
          cause: err,
        });
      }
    }
    return updated;
  }

  /** Runs the setters in Go's order; a failing setter is logged and the others still run. */
  private async setNodeStatus(node: V1Node): Promise<void> {
    const now = this.clock.now();
    const recordEvent: NodeEventFunc = (type, reason, message) => {
      this.logger.v(2).info('Recording event message for node', { event: reason });
      this.opts.recordEvent?.({ type, reason, message: message ?? `Node ${this.nodeName} status is now: ${reason}` });
    };
    const attempt = async (name: string, fn: () => void | Promise<void>): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        this.logger.error('Failed to set some node status fields', err, { setter: name });
      }
    };
    let info: MachineInfo | undefined;
    try {
      info = await this.machineInfo();
    } catch (err) {
      this.logger.error('Error getting machine info', err);
    }
    await attempt('NodeAddress', async () => {
      const ips = this.opts.internalIPs?.length ? this.opts.internalIPs : await resolveNodeIPs({
        nodeName: this.nodeName,
        hostname: this.hostname,
        nodeIPs: this.nodeIPs,
        interfaceAddresses: this.opts.interfaceAddresses ?? (() => hostInterfaceAddresses().map((a) => a.address)),
        lookupHost: this.opts.lookupHost ?? ((name) => lookupHostWithTimeout(name)),
        defaultRouteAddresses:
          this.opts.interfaceAddresses ??
          (() =>
            hostInterfaceAddresses()
              .filter((a) => !a.internal)
              .map((a) => a.address)),
      });
      setAddresses(node, ips, this.hostname);
    });
    await attempt('MachineInfo', () =>
      setMachineInfo(node, {
        nodeName: this.nodeName,
        info,
        maxPods: this.opts.maxPods ?? 110,
        podsPerCore: this.opts.podsPerCore ?? 0,
        reservation: (capacity) =>
          nodeAllocatableReservation(capacity, { kubeReserved: this.kubeReserved, systemReserved: this.systemReserved, evictionHard: this.evictionHard }),
        recordEvent,
        devicePluginResourceCapacity: this.opts.devicePluginResourceCapacity,
      }),
    );
    await attempt('VersionInfo', async () => {
      if (!info) throw new Error('error getting version info: machine info unavailable');
      let runtimeVersion: string | undefined;
      if (this.opts.runtimeService) {
        try {
          const v = await this.opts.runtimeService.version('v1');
          this.runtimeName = v.runtimeName;
          runtimeVersion = v.runtimeVersion;
        } catch (err) {
          this.logger.v(4).info('Container runtime version unavailable', { err: apiErrorMessage(err) });
        }
      }
      setVersionInfo(node, {
        kernelVersion: info.kernelVersion,
        osImage: info.osImage,
        runtimeName: this.runtimeName,
        runtimeVersion,
        kubeletVersion: this.opts.kubeletVersion ?? DEFAULT_KUBELET_VERSION,
        os: this.os,
        arch: this.arch,
      });
    });
    await attempt('DaemonEndpoints', () => setDaemonEndpoints(node, this.opts.kubeletPort ?? 10250));
    await attempt('Images', async () => {
      let images: NodeImage[];
      try {
        images = await this.listImages();
      } catch (err) {
        setImages(node, undefined, 0);
        throw new Error(`error getting image list: ${apiErrorMessage(err)}`, { cause: err });
      }
      setImages(node, images, this.opts.nodeStatusMaxImages ?? DEFAULT_NODE_STATUS_MAX_IMAGES);
    });
    const pressure = this.opts.pressure ?? {};
    await attempt('MemoryPressureCondition', () => setPressureCondition(node, MEMORY_PRESSURE, pressure.memory?.() ?? false, now, recordEvent));
    await attempt('DiskPressureCondition', () => setPressureCondition(node, DISK_PRESSURE, pressure.disk?.() ?? false, now, recordEvent));
    await attempt('PIDPressureCondition', () => setPressureCondition(node, PID_PRESSURE, pressure.pid?.() ?? false, now, recordEvent));
    await attempt('ReadyCondition', () => {
      const health = this.opts.healthChecks?.() ?? {};
      setReadyCondition(node, {
        now,
        errors: [...(health.runtimeErrors ?? []), ...(health.networkErrors ?? []), ...(health.storageErrors ?? []), ...(health.shutdownErrors ?? [])],
        recordEvent,
      });
    });
    await attempt('VolumesInUse', () => {
      const volumes = this.opts.volumesInUse;
      if (volumes?.synced()) setVolumesInUse(node, volumes.list());
    });
    await attempt('recordNodeSchedulableEvent', () => {
      const unschedulable = node.spec?.unschedulable ?? false;
      if (this.lastNodeUnschedulable !== unschedulable) {
        recordEvent('Normal', unschedulable ? 'NodeNotSchedulable' : 'NodeSchedulable');
        this.lastNodeUnschedulable = unschedulable;
      }
    });
  }

  private async listImages(): Promise<NodeImage[]> {
    if (this.opts.imageList) return this.opts.imageList();
    if (!this.opts.imageService) return [];
    const images = await this.opts.imageService.listImages();
    return images.map((i) => ({ id: i.id, repoTags: i.repoTags ?? [], repoDigests: i.repoDigests ?? [], size: Number(i.size) }));
  }

  /**
   * fastStatusUpdateOnce: every 100 ms, until Ready is posted or nodeReadyGracePeriod passed, checks
   * whether the kubelet's current state turns the (cached) node Ready and patches at once if so.
   */
  private async fastStatusUpdateOnce(signal: AbortSignal): Promise<void> {
    const start = this.clock.now();
    while (!signal.aborted) {
      let done = false;
      try {
        done = await this.fastNodeStatusUpdate(this.clock.since(start) >= NODE_READY_GRACE_PERIOD_MS, signal);
      } catch (err) {
        if (!signal.aborted) this.logger.error('Fast node status update failed', err);
      }
      if (done) return;
      try {
        await this.clock.sleep(100, signal);
      } catch {
        return;
      }
    }
  }

  private async fastNodeStatusUpdate(timeout: boolean, signal: AbortSignal): Promise<boolean> {
    let resync = false;
    const done = await this.mutex.run(async () => {
      if (signal.aborted) return true;
      if (timeout) {
        this.logger.error('Node not becoming ready in time after startup');
        return true;
      }
      const original = this.latest;
      if (!original) return false;
      const ready = original.status?.conditions?.find((c) => c.type === 'Ready');
      if (!ready) return false;
      if (ready.status === 'True') return true;
      const { node, changed } = await this.updateNode(original);
      if (!changed) return false;
      if (node.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') return false;
      this.logger.info('Fast updating node status as it just became ready');
      try {
        await this.patchNodeStatus(original, node, signal);
      } catch (err) {
        if (!signal.aborted) this.logger.error('Error updating node status, will retry with syncNodeStatus', err);
        resync = true;
      }
      return true;
    });
    if (resync && !signal.aborted) await this.syncNodeStatus();
    return done;
  }
}

function conditionsWithoutHeartbeat(status: Json | undefined): Json[] {
  const list = (status as { conditions?: Json[] } | undefined)?.conditions ?? [];
  return list
    .map((c) => {
      const copy = { ...(c as JsonObject) };
      delete copy.lastHeartbeatTime;
      return copy;
    })
    .sort((a, b) => (String(a.type) < String(b.type) ? -1 : String(a.type) > String(b.type) ? 1 : 0));
}

/** nodeStatusHasChanged: conditions ignoring heartbeats (in any order), the rest of the status semantically. */
export function nodeStatusHasChanged(original: V1Node, node: V1Node): boolean {
  const a = (nodeToWire({ status: original.status ?? {} }).status ?? {}) as JsonObject;
  const b = (nodeToWire({ status: node.status ?? {} }).status ?? {}) as JsonObject;
  const ca = (a.conditions as Json[] | undefined) ?? [];
  const cb = (b.conditions as Json[] | undefined) ?? [];
  if (ca.length !== cb.length) return true;
  if (!semanticEqual(conditionsWithoutHeartbeat(a), conditionsWithoutHeartbeat(b))) return true;
  const ra = { ...a };
  const rb = { ...b };
  delete ra.conditions;
  delete rb.conditions;
  return !semanticEqual(ra, rb);
}

/**
 * The patches that take `original` to `node` (Go: preparePatchBytesforNodeStatus): spec changes are
 * dropped; status changes become a strategic merge patch of the status subresource (addresses,
 * whose merge key is wrong upstream, are replaced whole); label and annotation changes become a
 * strategic merge patch of the main resource. Go sends those in the status patch, which
 * kube-apiserver accepts for nodes; the main resource is where every API server takes them.
 */
export function prepareNodePatches(original: V1Node, node: V1Node): { statusPatch?: JsonObject; metadataPatch?: JsonObject } {
  const oldWire = nodeToWire(original);
  const diffNode = structuredClone(node);
  diffNode.spec = original.spec;
  diffNode.metadata = original.metadata;
  const oldAddresses = original.status?.addresses ?? [];
  const newAddresses = node.status?.addresses ?? [];
  const manuallyPatchAddresses = oldAddresses.length > 0 && !semanticEqual(oldAddresses as unknown as Json, newAddresses as unknown as Json);
  if (manuallyPatchAddresses) {
    diffNode.status ??= {};
    diffNode.status.addresses = original.status?.addresses;
  }
  let statusPatch: JsonObject | undefined = createTwoWayMergePatch(oldWire, nodeToWire(diffNode), nodePatchSchema);
  if (manuallyPatchAddresses) {
    const status = ((statusPatch.status as JsonObject | undefined) ??= {});
    status.addresses = [...(newAddresses.map((a) => ({ address: a.address, type: a.type })) as unknown as Json[]), { $patch: 'replace' }];
  }
  if (Object.keys(statusPatch).length === 0) statusPatch = undefined;

  const metaOld: JsonObject = {};
  const metaNew: JsonObject = {};
  for (const k of ['labels', 'annotations'] as const) {
    if (original.metadata?.[k]) metaOld[k] = original.metadata[k] as Json;
    if (node.metadata?.[k]) metaNew[k] = node.metadata[k] as Json;
  }
  const metaDiff = createTwoWayMergePatch(metaOld, metaNew);
  const metadataPatch = Object.keys(metaDiff).length > 0 ? { metadata: metaDiff } : undefined;
  return { statusPatch, metadataPatch };
}
