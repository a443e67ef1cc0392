// The generic runtime manager: core's ContainerRuntime over CRI (Go: kuberuntime_manager.go,
// kuberuntime_container.go, kuberuntime_sandbox.go).
import * as os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { V1Container, V1LifecycleHandler, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  abortReason,
  containerSpecFieldPath,
  createLogger,
  findContainerStatusByName,
  formatContainerID,
  formatDuration,
  hasRestartableInitContainer,
  isNotExist,
  isRestartableInitContainer,
  KubeletEventReason,
  noopEventRecorder,
  podRef,
  podSyncError,
  realClock,
  type Backoff,
  type Clock,
  type ContainerID,
  type ContainerRuntime,
  type ContainerState,
  type ContainerStatus,
  type EventRecorder,
  type EventType,
  type Logger,
  type PodStatus,
  type PodSyncResult,
  type RuntimeContainer,
  type RuntimePod,
  type RuntimeSandbox,
  type RuntimeStatus,
  type SyncResult,
  buildContainerLogsDirectory,
} from '@kubelet-ts/core';
import { isNotFound, readCriLog, type ImageService, type RuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import {
  ContainerConfigError,
  defaultPodDnsConfig,
  generatePodSandboxConfig,
  linuxContainerResources,
  containerSecurityContext,
  makeEnvironmentVariables,
  type ConfigMapAndSecretSource,
  type NodeInfoForPods,
} from './container-config.js';
import { DEFAULT_POD_LOGS_ROOT_DIRECTORY, expandAll, KUBERNETES_POD_UID_LABEL } from '@kubelet-ts/core';
import { nodeFs, type RuntimeFs } from './fs.js';
import { applyImageUser, imageUser, verifyRunAsNonRoot, type ImageUser } from './security-context.js';
import { makeHostsMount, podHostnameAndDomain, shouldMountHostsFile } from './hosts.js';
import type { ServiceSource } from './service-env.js';
import { hashContainer } from './hash.js';
import {
  MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH,
  MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH,
  MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES,
  MINIMUM_GRACE_PERIOD_SECONDS,
  buildContainerLogsPath,
  errorMessage,
  formatPod,
  getContainerSpec,
  getStableKey,
  isHostNetworkPod,
  nanosToMillis,
} from './helpers.js';
import { ImageManager } from './image-manager.js';
import { HandlerRunner, lifecycleUserAgent } from './lifecycle.js';
import { TerminationOrdering } from './termination-order.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
} from './labels.js';
import {
  computePodActions,
  type ContainerKillReason,
  type CriSandboxStatus,
  type NamespaceMode,
  type PodActions,
  type ProbeResultLookup,
} from './pod-actions.js';

/** The kubelet runtime API version sent in Version (Go: kubeRuntimeAPIVersion). */
export const KUBE_RUNTIME_API_VERSION = '0.1.0';

/** A container's share of the device plugins' allocations (Go: cm.DeviceRunContainerOptions). */
export interface DeviceRunContainerOptions {
  envs: Array<{ name: string; value: string }>;
  mounts: Array<{ containerPath: string; hostPath: string; readOnly: boolean }>;
  devices: Array<{ pathOnHost: string; pathInContainer: string; permissions: string }>;
  annotations: Array<{ name: string; value: string }>;
}

export interface GenericRuntimeManagerOptions {
  runtimeService: RuntimeService;
  imageService: ImageService;
  clock?: Clock;
  logger?: Logger;
  /** Root of the pod log directories (Go --pod-logs-dir). Default /var/log/pods. */
  podLogsRootDirectory?: string;
  /**
   * The CRI runtime handler for a pod's RunPodSandbox (Go: runtimeClassManager.LookupRuntimeHandler); a string
   * applies to every pod. Wire RuntimeClassManager.runtimeHandlerFor (or standaloneRuntimeHandler without an API
   * server). A throw or rejection fails the pod's sandbox creation (CreatePodSandboxError, retried on the next sync).
   * Default: '' (the runtime's default handler) for every pod.
   */
  runtimeHandler?: string | ((pod: V1Pod) => string | Promise<string>);
  /** Liveness probe results by container id (`type://id`); the prober provides it. */
  livenessResults?: ProbeResultLookup;
  /** Startup probe results by container id (`type://id`). */
  startupResults?: ProbeResultLookup;
  /** Volume mounts for a container, given its environment for subPathExpr (the volume manager provides them). Default: none. */
  mountsFor?: (pod: V1Pod, container: V1Container, env: ReadonlyMap<string, string>) => runtimeapi.MountInit[] | Promise<runtimeapi.MountInit[]>;
  /**
   * What the device plugins allocated to a container (Go: containerManager.GetResources' DeviceRunContainerOptions):
   * their envs come before the container's, their mounts before the volumes', their device nodes go to
   * ContainerConfig.devices and their annotations under the kubelet's. A throw fails the container
   * (CreateContainerConfigError). Default: none.
   */
  deviceRunContainerOptionsFor?: (pod: V1Pod, container: V1Container) => Promise<DeviceRunContainerOptions | undefined>;
  /** The per pod+image pull backoff. Default: 10 s doubling to 300 s. */
  imagePullBackoff?: Backoff;
  /** Where Pulling/Pulled/Created/Started/Killing/BackOff/Failed events go. Default: dropped. */
  recorder?: EventRecorder;
  /** File system access for log directories and termination messages. Default: node:fs. */
  fs?: RuntimeFs;
  /**
   * The kubelet root directory (Go --root-dir). When set, each container gets a termination-log file
   * under `<root>/pods/<uid>/containers/<name>/` mounted at its terminationMessagePath.
   */
  kubeletRootDirectory?: string;
  /** Values for configMapKeyRef/secretKeyRef/envFrom. Without it such references fail (CreateContainerConfigError). */
  configMapsAndSecrets?: ConfigMapAndSecretSource;
  /**
   * DNS settings for a pod's sandbox; may throw to fail the sandbox (Go: GetPodDNS). Wire
   * DnsConfigurer.getPodDNS. Default: spec.dnsConfig (dnsPolicy None), else the runtime's default.
   */
  dnsConfigFor?: (pod: V1Pod) => runtimeapi.DNSConfigInit | undefined;
  /** The cluster domain (Go --cluster-domain) for pod FQDNs in the hostname and /etc/hosts. Default ''. */
  clusterDomain?: string;
  /**
   * The cluster's services for the service environment variables (Go: serviceLister + serviceHasSynced).
   * Before it has synced, containers of non-static pods fail with CreateContainerConfigError. Default:
   * none (no service variables, as a kubelet without an API server).
   */
  services?: ServiceSource;
  /** The pod's cgroup parent. Default: '' (the runtime's default). */
  cgroupParentFor?: (pod: V1Pod) => string;
  /**
   * A fix to name next to a sandbox the runtime refused, given the error's message, or undefined. The kubelet
   * uses it for a runtime whose cgroup driver differs from its own. Default: none.
   */
  sandboxErrorHint?: (message: string) => string | undefined;
  /** The node's IPs for status.hostIP(s) in the downward API. Default: the pod's status. */
  hostIPs?: () => string[];
  /** Node allocatable for resourceFieldRef without limits. Default: this machine's CPUs and memory. */
  nodeAllocatable?: { milliCpu: number; memoryBytes: number };
  /** Memory capacity for OOM score adjustment. Default: os.totalmem(). */
  machineMemoryCapacityBytes?: number;
  /** One image pull at a time (Go --serialize-image-pulls). Default true. */
  serializeImagePulls?: boolean;
  /** Lets a sandbox failure of a pod being deleted pass silently (Go: podStateProvider). */
  isPodTerminationRequested?: (podUid: string) => boolean;
  /** The kubelet version for the User-Agent of httpGet lifecycle hooks (`kube-lifecycle/<major>.<minor>`). Default: this package's. */
  kubeletVersion?: string;
  /**
   * The EventedPLEG feature gate (Go: features.EventedPLEG): a pod's status takes its containers' statuses and its
   * timestamp from the newest sandbox's PodSandboxStatus, as the evented PLEG expects, instead of listing the
   * containers (one CRI round trip less per inspection). Default false.
   */
  eventedPleg?: boolean;
}

/** Rejects with the signal's reason once it has aborted: a cancelled sync or kill does not go on. */
function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

interface StartSpec {
  container: V1Container;
  kind: 'container' | 'init container' | 'ephemeral container';
  /** For ephemeral containers: the container whose namespaces to share. */
  targetContainerName?: string;
}

interface StartFailure {
  reason: string;
  message: string;
}

const runtimeStateToCore: Record<string, ContainerState> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

function toCoreState(state: string | number | undefined): ContainerState {
  return runtimeStateToCore[String(state)] ?? 'unknown';
}

/** Newest first; on equal creation times (coarse clocks) the later attempt first. */
function sortContainerStatuses(statuses: ContainerStatus[]): ContainerStatus[] {
  return statuses.sort((a, b) => b.createdAt - a.createdAt || b.restartCount - a.restartCount);
}

/** A running pod from a status (Go: ConvertPodStatusToRunningPod). */
export function convertPodStatusToRunningPod(runtimeName: string, podStatus: PodStatus): RuntimePod {
  const containers: RuntimeContainer[] = podStatus.containerStatuses
    .filter((c) => c.state === 'running')
    .map((c) => ({ id: c.id, name: c.name, image: c.image, imageId: c.imageId, imageRef: c.imageRef, hash: c.hash, state: c.state, createdAt: c.createdAt }));
  const sandboxes: RuntimeSandbox[] = podStatus.sandboxStatuses.map((s) => ({
    id: { type: runtimeName, id: s.id },
    state: s.state === 'SANDBOX_READY' ? 'running' : 'exited',
    createdAt: s.createdAt,
  }));
  return { id: podStatus.id, name: podStatus.name, namespace: podStatus.namespace, createdAt: 0, containers, sandboxes };
}

/** Pod IPs of a sandbox: its primary IP then the additional ones (Go: determinePodSandboxIPs). */
export function determinePodSandboxIPs(status: runtimeapi.PodSandboxStatus): string[] {
  const ips: string[] = [];
  if (status.network?.ip) ips.push(status.network.ip);
  for (const extra of status.network?.additionalIps ?? []) if (extra.ip) ips.push(extra.ip);
  return ips;
}

/** A CRI sandbox status in the core model, with the network namespace mode the runtime reports. */
export function toCoreSandboxStatus(status: runtimeapi.PodSandboxStatus): CriSandboxStatus {
  const result: CriSandboxStatus = {
    id: status.id,
    name: status.metadata?.name ?? '',
    namespace: status.metadata?.namespace ?? '',
    uid: status.metadata?.uid ?? '',
    attempt: status.metadata?.attempt ?? 0,
    state: status.state === 'SANDBOX_READY' ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    createdAt: nanosToMillis(status.createdAt),
    labels: { ...(status.labels ?? {}) },
    annotations: { ...(status.annotations ?? {}) },
    networkNamespace: (status.linux?.namespaces?.options?.network ?? 'POD') as NamespaceMode,
  };
  if (status.network) {
    result.ip = status.network.ip ?? '';
    result.additionalIps = (status.network.additionalIps ?? []).map((p) => p.ip);
  }
  return result;
}

/**
 * The kubelet's generic runtime manager over a CRI runtime (Go: kubeGenericRuntimeManager). Container
 * ids are qualified by the runtime name from Version, fetched once (init() or the first call).
 */
export class GenericRuntimeManager implements ContainerRuntime {
  readonly imageManager: ImageManager;
  private readonly runtimeService: RuntimeService;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private readonly fs: RuntimeFs;
  private readonly podLogsRoot: string;
  private readonly node: NodeInfoForPods;
  private livenessResults?: ProbeResultLookup;
  private startupResults?: ProbeResultLookup;
  private runtimeNameCache?: string;
  private versionPromise?: Promise<runtimeapi.VersionResponse>;
  private readonly handlerRunner: HandlerRunner;

  constructor(private readonly opts: GenericRuntimeManagerOptions) {
    this.runtimeService = opts.runtimeService;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? createLogger({ name: 'kuberuntime', clock: this.clock, minSeverity: 'warning' });
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.fs = opts.fs ?? nodeFs;
    this.podLogsRoot = opts.podLogsRootDirectory ?? DEFAULT_POD_LOGS_ROOT_DIRECTORY;
    this.livenessResults = opts.livenessResults;
    this.startupResults = opts.startupResults;
    this.node = {
      hostIPs: opts.hostIPs,
      allocatableMilliCpu: opts.nodeAllocatable?.milliCpu ?? os.cpus().length * 1000,
      allocatableMemoryBytes: opts.nodeAllocatable?.memoryBytes ?? os.totalmem(),
      memoryCapacityBytes: opts.machineMemoryCapacityBytes ?? os.totalmem(),
    };
    this.imageManager = new ImageManager({
      imageService: opts.imageService,
      logger: this.logger.with({ component: 'image-manager' }),
      recorder: this.recorder,
      clock: this.clock,
      backoff: opts.imagePullBackoff,
      serializeImagePulls: opts.serializeImagePulls,
    });
    this.handlerRunner = new HandlerRunner({
      execSync: (id, cmd, timeout, options) => this.runtimeService.execSync(id, cmd, timeout, options),
      podIPs: async (pod, signal) => (await this.podStatusFor(pod.metadata?.uid ?? '', pod.metadata?.name ?? '', pod.metadata?.namespace ?? '', signal)).ips,
      sleep: (ms, signal) => this.clock.sleep(ms, signal),
      recorder: this.recorder,
      logger: this.logger,
      userAgent: opts.kubeletVersion !== undefined ? lifecycleUserAgent(opts.kubeletVersion) : undefined,
    });
  }

  /** Plugs in the prober's results after construction (the prober needs the runtime to exist first). */
  setProbeResults(results: { liveness?: ProbeResultLookup; startup?: ProbeResultLookup }): void {
    if (results.liveness) this.livenessResults = results.liveness;
    if (results.startup) this.startupResults = results.startup;
  }

  /** Fetches the runtime's name and version once; later calls reuse it. */
  async init(): Promise<void> {
    await this.runtimeName();
  }

  /** The runtime name, '' until init() or any other call has fetched it. */
  type(): string {
    return this.runtimeNameCache ?? '';
  }

  private async runtimeName(): Promise<string> {
    if (this.runtimeNameCache !== undefined) return this.runtimeNameCache;
    const response = await this.fetchVersion();
    // Concurrent first callers share one Version call; only the first to finish logs it.
    if (this.runtimeNameCache !== undefined) return this.runtimeNameCache;
    this.runtimeNameCache = response.runtimeName;
    this.logger.info('Container runtime initialized', {
      containerRuntime: response.runtimeName,
      version: response.runtimeVersion,
      apiVersion: response.runtimeApiVersion,
    });
    return response.runtimeName;
  }

  private fetchVersion(): Promise<runtimeapi.VersionResponse> {
    if (!this.versionPromise) {
      this.versionPromise = this.runtimeService.version(KUBE_RUNTIME_API_VERSION);
      // a failed lookup is retried by the next caller
      this.versionPromise.catch(() => (this.versionPromise = undefined));
    }
    return this.versionPromise;
  }

  async version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }> {
    const response = await this.runtimeService.version(KUBE_RUNTIME_API_VERSION);
    this.runtimeNameCache ??= response.runtimeName;
    return { runtimeName: response.runtimeName, runtimeVersion: response.runtimeVersion, runtimeApiVersion: response.runtimeApiVersion };
  }

  async status(): Promise<RuntimeStatus> {
    const response = await this.runtimeService.status(false);
    if (!response.status) throw new Error('runtime status is nil');
    return { conditions: response.status.conditions.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })) };
  }

  // ---------------------------------------------------------------------------------------------
  // GetPods / GetPodStatus

  async getPods(all: boolean): Promise<RuntimePod[]> {
    const runtimeName = await this.runtimeName();
    const pods = new Map<string, RuntimePod>();
    const sandboxes = await this.runtimeService.listPodSandbox(all ? {} : { state: { state: 'SANDBOX_READY' } });
    for (const s of sandboxes) {
      if (!s.metadata) continue;
      const uid = s.metadata.uid;
      let pod = pods.get(uid);
      if (!pod) {
        pod = { id: uid, name: s.metadata.name, namespace: s.metadata.namespace, createdAt: 0, containers: [], sandboxes: [] };
        pods.set(uid, pod);
      }
      pod.sandboxes.push({ id: { type: runtimeName, id: s.id }, state: s.state === 'SANDBOX_READY' ? 'running' : 'exited', createdAt: nanosToMillis(s.createdAt) });
      pod.createdAt = nanosToMillis(s.createdAt);
    }
    const containers = await this.runtimeService.listContainers(all ? {} : { state: { state: 'CONTAINER_RUNNING' } });
    for (const c of containers) {
      if (!c.metadata) continue;
      const labeled = getContainerInfoFromLabels(c.labels);
      let pod = pods.get(labeled.podUid);
      if (!pod) {
        pod = { id: labeled.podUid, name: labeled.podName, namespace: labeled.podNamespace, createdAt: 0, containers: [], sandboxes: [] };
        pods.set(labeled.podUid, pod);
      }
      pod.containers.push({
        id: { type: runtimeName, id: c.id },
        name: c.metadata.name,
        image: c.image?.image ?? '',
        imageId: c.imageId || c.imageRef,
        imageRef: c.imageRef,
        hash: getContainerInfoFromAnnotations(c.annotations).hash,
        state: toCoreState(c.state),
        createdAt: nanosToMillis(c.createdAt),
      });
    }
    return [...pods.values()].sort((a, b) => b.createdAt - a.createdAt);
  }

  async getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus> {
    return this.podStatusFor(uid, name, namespace);
  }

  /**
   * Go: GetPodStatus. The sandboxes' statuses and the containers' listing are asked at once, then every container's
   * status at once: two round trips whatever the number of sandboxes and containers, where Go makes each call in turn.
   * The result is the same: errors are reported in Go's order (sandboxes first, then containers), a sandbox or
   * container removed between listing and status is left out.
   *
   * With `eventedPleg` (Go: the EventedPLEG feature gate) the newest sandbox's PodSandboxStatus carries the pod's
   * container statuses and the runtime's timestamp, and no container is listed; a runtime that sets no timestamp
   * (no pod events) gets the containers listed, as in Go.
   */
  private async podStatusFor(uid: string, name: string, namespace: string, signal?: AbortSignal): Promise<PodStatus> {
    const runtimeName = await this.runtimeName();
    let timestamp = this.clock.now();
    const evented = this.opts.eventedPleg === true;
    const sandboxesListed = this.runtimeService.listPodSandbox({ labelSelector: { [KUBERNETES_POD_UID_LABEL]: uid } }, { signal });
    // Without evented PLEG the containers are always listed: ask for them alongside the sandboxes.
    const containersListed = evented ? undefined : this.listPodContainerStatuses(uid, runtimeName, signal);
    // A rejection is handled below, in Go's order; until then it must not count as unhandled.
    containersListed?.catch(() => undefined);
    const sandboxes = await sandboxesListed;
    sandboxes.sort((a, b) => Number(b.createdAt) - Number(a.createdAt));
    const responses = await Promise.allSettled(sandboxes.map((sandbox) => this.runtimeService.podSandboxStatus(sandbox.id, false, { signal })));
    const sandboxStatuses: CriSandboxStatus[] = [];
    let ips: string[] = [];
    let containerStatuses: ContainerStatus[] | undefined;
    for (const [idx, settled] of responses.entries()) {
      if (settled.status === 'rejected') {
        const err = settled.reason;
        throwIfAborted(signal);
        if (isNotFound(err)) continue; // removed between list and status: as if never listed
        this.logger.error('PodSandboxStatus of sandbox for pod', err, { podSandboxID: sandboxes[idx].id, pod: `${namespace}/${name}` });
        throw err;
      }
      const response = settled.value;
      if (!response.status) throw new Error('pod sandbox status is nil');
      sandboxStatuses.push(toCoreSandboxStatus(response.status));
      if (idx === 0 && response.status.state === 'SANDBOX_READY') ips = determinePodSandboxIPs(response.status);
      if (idx === 0 && evented && nanosToMillis(response.timestamp as number | undefined) > 0) {
        // The runtime's own view of the pod's containers, at its own time (Go: resp.ContainersStatuses, resp.Timestamp).
        timestamp = nanosToMillis(response.timestamp as number | undefined);
        containerStatuses = sortContainerStatuses(
          await Promise.all((response.containersStatuses ?? []).map((s) => this.convertToCoreContainerStatus(s, runtimeName))),
        );
      }
    }
    if (evented) {
      if (containerStatuses === undefined) {
        const v4 = this.logger.v(4);
        if (v4.enabled) v4.info('Runtime does not set pod status timestamp', { pod: `${namespace}/${name}` });
      }
      // Go lists the containers only when the newest sandbox's status carried no timestamp (or no sandbox is left).
      containerStatuses ??= await this.listPodContainerStatuses(uid, runtimeName, signal);
    } else {
      containerStatuses = await (containersListed as Promise<ContainerStatus[]>);
    }
    return { id: uid, name, namespace, ips, containerStatuses, sandboxStatuses, timestamp };
  }

  /** The status of one container (Go: GetContainerStatus). */
  async getContainerStatus(id: ContainerID): Promise<ContainerStatus> {
    const response = await this.runtimeService.containerStatus(id.id, false);
    if (!response.status) throw new Error('container status is nil');
    return this.convertToCoreContainerStatus(response.status, await this.runtimeName());
  }

  /** A pod status from a CRI container event, for the evented PLEG (Go: GeneratePodStatus). */
  async generatePodStatus(event: runtimeapi.ContainerEventResponse): Promise<PodStatus> {
    const runtimeName = await this.runtimeName();
    const sandbox = event.podSandboxStatus;
    if (!sandbox) throw new Error('container event without a pod sandbox status');
    const containerStatuses = await Promise.all(event.containersStatuses.map((s) => this.convertToCoreContainerStatus(s, runtimeName)));
    containerStatuses.sort((a, b) => b.createdAt - a.createdAt);
    return {
      id: sandbox.metadata?.uid ?? '',
      name: sandbox.metadata?.name ?? '',
      namespace: sandbox.metadata?.namespace ?? '',
      ips: determinePodSandboxIPs(sandbox),
      sandboxStatuses: [toCoreSandboxStatus(sandbox)],
      containerStatuses,
      timestamp: nanosToMillis(event.createdAt) || this.clock.now(),
    };
  }

  /** The statuses of the pod's containers (Go: getPodContainerStatuses): listed, then every status asked at once. */
  private async listPodContainerStatuses(uid: string, runtimeName: string, signal?: AbortSignal): Promise<ContainerStatus[]> {
    const containers = await this.runtimeService.listContainers({ labelSelector: { [KUBERNETES_POD_UID_LABEL]: uid } }, { signal });
    const responses = await Promise.allSettled(containers.map((c) => this.runtimeService.containerStatus(c.id, false, { signal })));
    const statuses: Promise<ContainerStatus>[] = [];
    for (const settled of responses) {
      if (settled.status === 'rejected') {
        throwIfAborted(signal);
        if (isNotFound(settled.reason)) continue; // removed between list and status
        throw settled.reason;
      }
      const response = settled.value;
      if (!response.status) throw new Error('container status is nil');
      statuses.push(this.convertToCoreContainerStatus(response.status, runtimeName));
    }
    return sortContainerStatuses(await Promise.all(statuses));
  }

  /** Go: toKubeContainerStatus + the termination message of exited containers. */
  private async convertToCoreContainerStatus(status: runtimeapi.ContainerStatus, runtimeName: string): Promise<ContainerStatus> {
    const annotated = getContainerInfoFromAnnotations(status.annotations);
    const labeled = getContainerInfoFromLabels(status.labels);
    const state = toCoreState(status.state);
    const result: ContainerStatus = {
      id: { type: runtimeName, id: status.id },
      name: labeled.containerName || status.metadata?.name || '',
      state,
      createdAt: nanosToMillis(status.createdAt),
      exitCode: 0,
      image: status.image?.image ?? '',
      imageId: status.imageId || status.imageRef,
      imageRef: status.imageRef,
      hash: annotated.hash,
      restartCount: annotated.restartCount,
    };
    if (status.logPath) result.logPath = status.logPath;
    if (state !== 'created') result.startedAt = nanosToMillis(status.startedAt);
    if (state === 'exited') {
      result.reason = status.reason;
      result.message = status.message;
      result.exitCode = status.exitCode;
      result.finishedAt = nanosToMillis(status.finishedAt);
      const fallbackToLogs = annotated.terminationMessagePolicy === 'FallbackToLogsOnError' && result.exitCode !== 0 && result.reason !== 'ContainerCannotRun';
      const [fileMessage, checkLogs] = await this.getTerminationMessage(status, annotated.terminationMessagePath, fallbackToLogs);
      const message = checkLogs ? await this.readLastStringFromContainerLogs(status.logPath) : fileMessage;
      if (message !== '') result.message = result.message ? `${result.message}: ${message}` : message;
    }
    return result;
  }

  /** Go: getTerminationMessage: the file mounted at terminationMessagePath, or whether to read the logs. */
  private async getTerminationMessage(status: runtimeapi.ContainerStatus, path: string, fallbackToLogs: boolean): Promise<[string, boolean]> {
    if (path === '') return ['', fallbackToLogs];
    const mount = (status.mounts ?? []).find((m) => m.containerPath === path);
    if (!mount) return ['', fallbackToLogs];
    try {
      const data = (await this.fs.readTail(mount.hostPath, MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH)).toString('utf8');
      return [data, fallbackToLogs && data.length === 0];
    } catch (err) {
      if (isNotExist(err)) return ['', fallbackToLogs];
      return [`Error on reading termination log ${mount.hostPath}: ${errorMessage(err)}`, false];
    }
  }

  /** The last lines of a CRI log, at most 80 lines and 2 KiB (Go: readLastStringFromContainerLogs). */
  private async readLastStringFromContainerLogs(path: string): Promise<string> {
    if (!path) return '';
    let data: Buffer;
    try {
      data = await this.fs.readTail(path, 256 * 1024);
    } catch (err) {
      return `Error on reading termination message from logs: ${errorMessage(err)}`;
    }
    let text = data.toString('utf8');
    if (data.length === 256 * 1024) text = text.slice(text.indexOf('\n') + 1); // drop a cut first line
    const lines: string[] = [];
    const onError = (err: Error): void => this.logger.error('Failed when parsing line in log file', err, { path });
    for await (const entry of readCriLog((async function* () {
      yield text;
    })(), { onError })) lines.push(entry.text + (entry.partial ? '' : '\n'));
    const tail = lines.slice(-MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES).join('');
    const bytes = Buffer.from(tail, 'utf8');
    return bytes.length > MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH
      ? bytes.subarray(bytes.length - MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH).toString('utf8')
      : tail;
  }

  // ---------------------------------------------------------------------------------------------
  // SyncPod

  /** What SyncPod would do for the pod now (Go: computePodActions). */
  computePodActions(pod: V1Pod, podStatus: PodStatus): PodActions {
    return computePodActions(pod, podStatus, { livenessResults: this.livenessResults, startupResults: this.startupResults });
  }

  /** The CRI sandbox config of a pod (Go: generatePodSandboxConfig). */
  generatePodSandboxConfig(pod: V1Pod, attempt: number): runtimeapi.PodSandboxConfigInit {
    return generatePodSandboxConfig(pod, attempt, {
      podLogsRootDirectory: this.podLogsRoot,
      cgroupParent: this.opts.cgroupParentFor?.(pod),
      dnsConfig: this.opts.dnsConfigFor ? this.opts.dnsConfigFor(pod) : defaultPodDnsConfig(pod),
      clusterDomain: this.opts.clusterDomain,
    });
  }

  /** The pod's runtime handler; a lookup that throws rejects. */
  private async runtimeHandlerFor(pod: V1Pod): Promise<string> {
    const handler = this.opts.runtimeHandler;
    return typeof handler === 'function' ? await handler(pod) : (handler ?? '');
  }

  private event(pod: V1Pod, type: EventType, reason: string, message: string, container?: V1Container, containerId?: string): void {
    // A runtime's message often names the container id, which would make every event unique.
    const text = containerId && container ? message.split(containerId).join(container.name) : message;
    this.recorder.event(pod, type, reason, text, container ? { fieldPath: containerSpecFieldPath(pod, container.name), containerName: container.name } : undefined);
  }

  /**
   * Drives the runtime toward the pod spec (Go: SyncPod): compute actions, kill the pod or unwanted
   * containers, create the sandbox, then start ephemeral, init and app containers. Every runtime call
   * carries `options.signal`; once it aborts, the sync stops and rejects with the signal's reason.
   */
  async syncPod(pod: V1Pod, podStatus: PodStatus, pullSecrets: V1Secret[], backoff: Backoff, options?: { signal?: AbortSignal }): Promise<PodSyncResult> {
    const signal = options?.signal;
    throwIfAborted(signal);
    const result: PodSyncResult = { syncResults: [] };
    const log = this.logger.with({ pod: podRef(pod) });
    let runtimeName: string;
    try {
      runtimeName = await this.runtimeName();
    } catch (err) {
      throwIfAborted(signal);
      result.syncError = err as Error;
      return result;
    }
    throwIfAborted(signal);
    const changes = this.computePodActions(pod, podStatus);
    if (log.v(3).enabled) log.v(3).info('computePodActions got for pod', { podActions: describeActions(changes) });
    if (changes.createSandbox) {
      if (changes.sandboxId !== '') this.event(pod, 'Normal', KubeletEventReason.SandboxChanged, 'Pod sandbox changed, it will be killed and re-created.');
      else log.v(4).info('SyncPod received new pod, will create a sandbox for it');
    }

    // Step 2: kill the pod if the sandbox changed or everything is done.
    if (changes.killPod) {
      log.v(4).info(changes.createSandbox ? 'Stopping PodSandbox for pod, will start new one' : 'Stopping PodSandbox for pod, because all other containers are dead');
      const killResult = await this.killPodWithSyncResult(pod, convertPodStatusToRunningPod(runtimeName, podStatus), undefined, { signal });
      result.syncResults.push(...killResult.syncResults);
      const killError = podSyncError(killResult);
      if (killError) {
        log.error('killPodWithSyncResult failed', killError);
        return result;
      }
      if (changes.createSandbox) await this.purgeInitContainers(pod, podStatus, signal);
    } else {
      // Step 3: kill the containers that must not keep running.
      for (const [id, info] of changes.containersToKill) {
        log.v(3).info('Killing unwanted container for pod', { containerName: info.name, containerID: id });
        const killResult: SyncResult = { action: 'KillContainer', target: info.name };
        result.syncResults.push(killResult);
        try {
          await this.killContainer(pod, info.id, info.name, info.message, info.reason, undefined, { signal });
        } catch (err) {
          throwIfAborted(signal);
          killResult.error = 'KillContainerError';
          killResult.message = errorMessage(err);
          log.error('killContainer for pod failed', err, { containerName: info.name, containerID: id });
          return result;
        }
      }
    }

    await this.pruneInitContainersBeforeStart(pod, podStatus, signal);
    throwIfAborted(signal);

    let podIPs = podStatus.ips;
    // Step 4: create the sandbox.
    let sandboxId = changes.sandboxId;
    // The config the new sandbox was created with serves its containers too (Go generates it a second time).
    let createdSandboxConfig: runtimeapi.PodSandboxConfigInit | undefined;
    if (changes.createSandbox) {
      const createResult: SyncResult = { action: 'CreatePodSandbox', target: formatPod(pod) };
      result.syncResults.push(createResult);
      const created = await this.createPodSandbox(pod, changes.attempt, signal);
      if ('error' in created) {
        throwIfAborted(signal);
        if (this.opts.isPodTerminationRequested?.(pod.metadata?.uid ?? '')) {
          log.v(4).info('Pod was deleted and sandbox failed to be created');
          return result;
        }
        const hint = this.opts.sandboxErrorHint?.(errorMessage(created.error));
        const withHint = (message: string) => (hint ? `${message}: ${hint}` : message);
        createResult.error = 'CreatePodSandboxError';
        createResult.message = withHint(created.message);
        log.error('CreatePodSandbox for pod failed', created.error, hint ? { hint } : undefined);
        this.event(pod, 'Warning', KubeletEventReason.FailedCreatePodSandBox, withHint(`Failed to create pod sandbox: ${errorMessage(created.error)}`));
        return result;
      }
      sandboxId = created.id;
      createdSandboxConfig = created.config;
      log.v(4).info('Created PodSandbox for pod', { podSandboxID: sandboxId });
      let sandboxStatus: runtimeapi.PodSandboxStatusResponse;
      try {
        sandboxStatus = await this.runtimeService.podSandboxStatus(sandboxId, false, { signal });
      } catch (err) {
        throwIfAborted(signal);
        this.event(pod, 'Warning', KubeletEventReason.FailedStatusPodSandBox, `Unable to get pod sandbox status: ${errorMessage(err)}`);
        log.error('Failed to get pod sandbox status; Skipping pod', err);
        result.syncError = err as Error;
        return result;
      }
      if (!sandboxStatus.status) {
        result.syncError = new Error('pod sandbox status is nil');
        return result;
      }
      if (!isHostNetworkPod(pod)) podIPs = determinePodSandboxIPs(sandboxStatus.status);
    }
    const podIP = podIPs[0] ?? '';

    const configResult: SyncResult = { action: 'ConfigPodSandbox', target: sandboxId };
    result.syncResults.push(configResult);
    let sandboxConfig: runtimeapi.PodSandboxConfigInit;
    try {
      sandboxConfig = createdSandboxConfig ?? this.generatePodSandboxConfig(pod, changes.attempt);
    } catch (err) {
      configResult.error = 'ConfigPodSandboxError';
      configResult.message = `GeneratePodSandboxConfig for pod ${JSON.stringify(formatPod(pod))} failed: ${errorMessage(err)}`;
      return result;
    }

    const start = async (spec: StartSpec): Promise<boolean> => {
      throwIfAborted(signal);
      const startResult: SyncResult = { action: 'StartContainer', target: spec.container.name };
      result.syncResults.push(startResult);
      const backoffFailure = this.doBackOff(pod, spec.container, podStatus, backoff);
      if (backoffFailure) {
        startResult.error = backoffFailure.reason;
        startResult.message = backoffFailure.message;
        log.v(4).info('Backing Off restarting container in pod', { containerType: spec.kind, container: spec.container.name });
        return false;
      }
      log.v(4).info('Creating container in pod', { containerType: spec.kind, container: spec.container.name });
      const failure = await this.startContainer(sandboxId, sandboxConfig, spec, pod, podStatus, pullSecrets, podIP, podIPs, signal);
      if (failure) {
        startResult.error = failure.reason;
        startResult.message = failure.message;
        if (failure.reason === 'ImagePullBackOff') log.v(3).info('Container start failed in pod', { containerType: spec.kind, container: spec.container.name, containerMessage: failure.message, err: failure.reason });
        else log.error(`${spec.kind} start failed in pod`, new Error(`${failure.reason}: ${failure.message}`), { container: spec.container.name });
        return false;
      }
      return true;
    };

    // Step 5: ephemeral containers, before init containers so debugging works while init fails.
    for (const idx of changes.ephemeralContainersToStart) {
      const ephemeral = pod.spec?.ephemeralContainers?.[idx];
      if (ephemeral) await start({ container: ephemeral as V1Container, kind: 'ephemeral container', targetContainerName: ephemeral.targetContainerName });
    }
    // Step 6: init containers in order; a failed sidecar does not stop the next one.
    for (const idx of changes.initContainersToStart) {
      const container = pod.spec?.initContainers?.[idx];
      if (!container) continue;
      if (!(await start({ container, kind: 'init container' }))) {
        if (isRestartableInitContainer(container)) continue;
        log.v(4).info('Failed to initialize the pod, as the init container failed to start, aborting', { initContainerName: container.name });
        return result;
      }
      log.v(4).info('Completed init container for pod', { containerName: container.name });
    }
    // Step 8: app containers.
    for (const idx of changes.containersToStart) {
      const container = pod.spec?.containers?.[idx];
      if (container) await start({ container, kind: 'container' });
    }
    return result;
  }

  /** CrashLoopBackOff (Go: doBackOff): a failure when the container's last exit is within its backoff. */
  private doBackOff(pod: V1Pod, container: V1Container, podStatus: PodStatus, backoff: Backoff): StartFailure | undefined {
    let last: ContainerStatus | undefined;
    for (const c of podStatus.containerStatuses) {
      if (c.name === container.name && c.state === 'exited' && (!last || c.createdAt > last.createdAt)) last = c;
    }
    if (!last) return undefined;
    const finishedAt = last.finishedAt ?? 0;
    const key = getStableKey(pod, container, hashContainer(container));
    if (backoff.isInBackOffSince(key, finishedAt)) {
      this.event(pod, 'Warning', KubeletEventReason.BackOffStartContainer, `Back-off restarting failed container ${container.name} in pod ${formatPod(pod)}`, container);
      const message = `back-off ${formatDuration(Math.round(backoff.get(key)))} restarting failed container=${container.name} pod=${formatPod(pod)}`;
      this.logger.v(3).info('Back-off restarting failed container', { err: message });
      return { reason: 'CrashLoopBackOff', message };
    }
    backoff.next(key, finishedAt);
    return undefined;
  }

  private async createPodSandbox(
    pod: V1Pod,
    attempt: number,
    signal?: AbortSignal,
  ): Promise<{ id: string; config: runtimeapi.PodSandboxConfigInit } | { error: unknown; message: string }> {
    let config: runtimeapi.PodSandboxConfigInit;
    try {
      config = this.generatePodSandboxConfig(pod, attempt);
    } catch (error) {
      return { error, message: `Failed to generate sandbox config for pod ${JSON.stringify(formatPod(pod))}: ${errorMessage(error)}` };
    }
    try {
      await this.fs.mkdirAll(config.logDirectory ?? '', 0o755);
    } catch (error) {
      return { error, message: `Failed to create log directory for pod ${JSON.stringify(formatPod(pod))}: ${errorMessage(error)}` };
    }
    let runtimeHandler: string;
    try {
      runtimeHandler = await this.runtimeHandlerFor(pod);
    } catch (error) {
      return { error, message: `Failed to create sandbox for pod ${JSON.stringify(formatPod(pod))}: ${errorMessage(error)}` };
    }
    if (runtimeHandler !== '') this.logger.v(2).info('Running pod with runtime handler', { pod: podRef(pod), runtimeHandler });
    try {
      const id = await this.runtimeService.runPodSandbox(config, runtimeHandler, { signal });
      return { id, config };
    } catch (error) {
      return { error, message: `Failed to create sandbox for pod ${JSON.stringify(formatPod(pod))}: ${errorMessage(error)}` };
    }
  }

  /** Go: calcRestartCountByLogDir: one more than the highest `<n>.log` left in the log directory. */
  private async restartCountFromLogDir(dir: string): Promise<number> {
    let names: string[];
    try {
      names = await this.fs.readdir(dir);
    } catch {
      return 0;
    }
    let count = 0;
    for (const name of names) {
      const match = /^(\d+)\.log(\..*)?$/.exec(name);
      if (match) count = Math.max(count, Number(match[1]) + 1);
    }
    return count;
  }

  /**
   * Pulls the image, creates and starts the container, and runs its postStart hook (Go:
   * startContainer). Returns the failure, undefined on success.
   */
  private async startContainer(
    sandboxId: string,
    sandboxConfig: runtimeapi.PodSandboxConfigInit,
    spec: StartSpec,
    pod: V1Pod,
    podStatus: PodStatus,
    pullSecrets: V1Secret[],
    podIP: string,
    podIPs: string[],
    signal?: AbortSignal,
  ): Promise<StartFailure | undefined> {
    const container = spec.container;
    const runtimeName = await this.runtimeName();
    // The image's runtime handler (ImageSpec.runtime_handler): the sandbox's; a lookup failing now (its RuntimeClass
    // deleted since) pulls for the default handler, as Go v1.20 pulls with none.
    const imageRuntimeHandler = await this.runtimeHandlerFor(pod).catch(() => '');
    const image = await this.imageManager.ensureImageExists(pod, container, pullSecrets, sandboxConfig, imageRuntimeHandler, { signal });
    if (!image.ok) {
      this.event(pod, 'Warning', KubeletEventReason.FailedToCreateContainer, `Error: ${image.reason}`, container);
      return { reason: image.reason, message: image.message };
    }

    const status = findContainerStatusByName(podStatus, container.name);
    const restartCount = status
      ? status.restartCount + 1
      : await this.restartCountFromLogDir(
          buildContainerLogsDirectory(this.podLogsRoot, pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', pod.metadata?.uid ?? '', container.name),
        );

    let config: runtimeapi.ContainerConfigInit;
    try {
      config = await this.generateContainerConfig(container, pod, restartCount, podIP, podIPs, image, spec, podStatus);
    } catch (err) {
      throwIfAborted(signal);
      const message = errorMessage(err);
      this.event(pod, 'Warning', KubeletEventReason.FailedToCreateContainer, `Error: ${message}`, container);
      return { reason: 'CreateContainerConfigError', message };
    }

    let containerId: string;
    try {
      containerId = await this.runtimeService.createContainer(sandboxId, config, sandboxConfig, { signal });
    } catch (err) {
      throwIfAborted(signal);
      const message = errorMessage(err);
      this.event(pod, 'Warning', KubeletEventReason.FailedToCreateContainer, `Error: ${message}`, container);
      return { reason: 'CreateContainerError', message };
    }
    this.event(pod, 'Normal', KubeletEventReason.CreatedContainer, `Created container: ${container.name}`, container, containerId);

    try {
      await this.runtimeService.startContainer(containerId, { signal });
    } catch (err) {
      throwIfAborted(signal);
      const message = errorMessage(err);
      this.event(pod, 'Warning', KubeletEventReason.FailedToStartContainer, `Error: ${message}`, container, containerId);
      return { reason: 'RunContainerError', message };
    }
    this.event(pod, 'Normal', KubeletEventReason.StartedContainer, `Started container ${container.name}`, container, containerId);

    const postStart = container.lifecycle?.postStart;
    if (postStart) {
      const id: ContainerID = { type: runtimeName, id: containerId };
      try {
        await this.runHandler(pod, container, id, postStart, signal);
      } catch (err) {
        throwIfAborted(signal);
        const message = errorMessage(err);
        this.logger.error('Failed to execute PostStartHook', err, { pod: podRef(pod), containerName: container.name, containerID: formatContainerID(id) });
        // The message may hold secrets: the event does not carry it.
        this.event(pod, 'Warning', KubeletEventReason.FailedPostStartHook, 'PostStartHook failed', container, containerId);
        try {
          await this.killContainer(pod, id, container.name, 'FailedPostStartHook', 'FailedPostStartHook', undefined, { signal });
        } catch (killErr) {
          throwIfAborted(signal);
          this.logger.error('Failed to kill container', killErr, { pod: podRef(pod), containerName: container.name });
        }
        return { reason: 'PostStartHookError', message };
      }
    }
    return undefined;
  }

  /** The CRI ContainerConfig (Go: generateContainerConfig + applyPlatformSpecificContainerConfig). */
  private async generateContainerConfig(
    container: V1Container,
    pod: V1Pod,
    restartCount: number,
    podIP: string,
    podIPs: string[],
    image: { imageRef: string; image?: runtimeapi.Image | null },
    spec: StartSpec,
    podStatus: PodStatus,
  ): Promise<runtimeapi.ContainerConfigInit> {
    let deviceOpts: DeviceRunContainerOptions | undefined;
    try {
      deviceOpts = await this.opts.deviceRunContainerOptionsFor?.(pod, container);
    } catch (err) {
      throw new ContainerConfigError(errorMessage(err));
    }
    const env = await makeEnvironmentVariables(pod, container, {
      podIP,
      podIPs,
      node: this.node,
      sources: this.opts.configMapsAndSecrets,
      services: this.opts.services,
      recorder: this.recorder,
    });
    const meta = pod.metadata ?? {};
    const logDir = buildContainerLogsDirectory(this.podLogsRoot, meta.namespace ?? '', meta.name ?? '', meta.uid ?? '', container.name);
    try {
      await this.fs.mkdirAll(logDir, 0o755);
    } catch (err) {
      throw new ContainerConfigError(`create container log directory for container ${container.name} failed: ${errorMessage(err)}`);
    }
    let volumeMounts: runtimeapi.MountInit[];
    try {
      volumeMounts = (await this.opts.mountsFor?.(pod, container, env)) ?? [];
    } catch (err) {
      throw new ContainerConfigError(errorMessage(err));
    }
    const mounts: runtimeapi.MountInit[] = [
      ...(deviceOpts?.mounts ?? []).map((m) => ({ containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readOnly, selinuxRelabel: false })),
      ...volumeMounts,
    ];
    const hostsMount = await this.makeEtcHostsMount(pod, container, podIPs);
    if (hostsMount) mounts.push(hostsMount);
    const terminationMount = await this.makeTerminationMessageMount(pod, container);
    if (terminationMount) mounts.push(terminationMount);

    // Go: getImageUser + verifyRunAsNonRoot, then the image's user goes to the runtime.
    const user = await this.imageUserOf(container, image.image);
    const nonRootError = verifyRunAsNonRoot(pod, container, user);
    if (nonRootError !== undefined) throw new ContainerConfigError(nonRootError);
    const securityContext = containerSecurityContext(pod, container);
    applyImageUser(securityContext, user);
    if (spec.targetContainerName) {
      // An ephemeral container targeting another shares its process namespace.
      const target = findContainerStatusByName(podStatus, spec.targetContainerName);
      if (!target) throw new ContainerConfigError(`unable to find target container ${spec.targetContainerName}`);
      securityContext.namespaceOptions = { ...securityContext.namespaceOptions, pid: 'TARGET', targetId: target.id.id };
    }
    return {
      metadata: { name: container.name, attempt: restartCount },
      image: { image: image.imageRef, userSpecifiedImage: container.image ?? '' },
      command: expandAll(container.command, env),
      args: expandAll(container.args, env),
      workingDir: container.workingDir ?? '',
      labels: newContainerLabels(container, pod),
      // Go: device plugin annotations first; the kubelet's own win a conflict.
      annotations: { ...Object.fromEntries((deviceOpts?.annotations ?? []).map((a) => [a.name, a.value])), ...newContainerAnnotations(container, pod, restartCount) },
      mounts,
      logPath: buildContainerLogsPath(container.name, restartCount),
      stdin: container.stdin === true,
      stdinOnce: container.stdinOnce === true,
      tty: container.tty === true,
      envs: [...(deviceOpts?.envs ?? []).map((e) => ({ key: e.name, value: e.value })), ...[...env].map(([key, value]) => ({ key, value }))],
      ...(deviceOpts?.devices.length
        ? { devices: deviceOpts.devices.map((d) => ({ containerPath: d.pathInContainer, hostPath: d.pathOnHost, permissions: d.permissions })) }
        : {}),
      linux: { resources: linuxContainerResources(pod, container, this.node), securityContext },
    };
  }

  /** The image's user from its ImageStatus, read again when the image manager did not (Go: getImageUser). */
  private async imageUserOf(container: V1Container, known: runtimeapi.Image | null | undefined): Promise<ImageUser> {
    if (known !== undefined) return imageUser(known);
    try {
      return imageUser((await this.opts.imageService.imageStatus({ image: container.image ?? '' })).image);
    } catch (err) {
      throw new ContainerConfigError(`failed to get the user of image ${JSON.stringify(container.image ?? '')}: ${errorMessage(err)}`);
    }
  }

  /**
   * The managed /etc/hosts (Go: makeMounts + makeHostsMount): `<root>/pods/<uid>/etc-hosts`, rewritten
   * for each container start; none without a kubelet root directory. Failing to write it fails the
   * container (CreateContainerConfigError), as in Go.
   */
  private async makeEtcHostsMount(pod: V1Pod, container: V1Container, podIPs: string[]): Promise<runtimeapi.MountInit | undefined> {
    const root = this.opts.kubeletRootDirectory;
    const { hostname, domain } = podHostnameAndDomain(pod, this.opts.clusterDomain ?? '');
    const mount = shouldMountHostsFile(pod, container, podIPs);
    this.logger.v(3).info('Creating hosts mount for container', { pod: podRef(pod), containerName: container.name, podIPs, path: mount });
    if (!root || !mount) return undefined;
    const podDir = `${root.replace(/\/$/, '')}/pods/${pod.metadata?.uid ?? ''}`;
    await this.fs.mkdirAll(podDir, 0o750);
    return makeHostsMount(this.fs, podDir, {
      podIPs,
      hostname,
      domain,
      hostAliases: pod.spec?.hostAliases,
      hostNetwork: isHostNetworkPod(pod),
    });
  }

  /** A fresh termination-log file mounted at terminationMessagePath (Go: makeMounts). */
  private async makeTerminationMessageMount(pod: V1Pod, container: V1Container): Promise<runtimeapi.MountInit | undefined> {
    const root = this.opts.kubeletRootDirectory;
    if (!root || !container.terminationMessagePath) return undefined;
    const dir = `${root.replace(/\/$/, '')}/pods/${pod.metadata?.uid ?? ''}/containers/${container.name}`;
    const hostPath = `${dir}/${randomBytes(4).toString('hex')}`;
    try {
      await this.fs.mkdirAll(dir, 0o750);
      await this.fs.createFile(hostPath, 0o666);
    } catch (err) {
      this.logger.error('Error on creating termination-log file', err, { path: hostPath });
      return undefined;
    }
    return { hostPath, containerPath: container.terminationMessagePath, selinuxRelabel: false };
  }

  /** Runs a lifecycle handler (Go: HandlerRunner.Run): exec, httpGet and sleep. */
  private runHandler(pod: V1Pod, container: V1Container, id: ContainerID, handler: V1LifecycleHandler, signal?: AbortSignal): Promise<void> {
    return this.handlerRunner.run(id, pod, container, handler, signal);
  }

  // ---------------------------------------------------------------------------------------------
  // KillPod / killContainer

  /**
   * Kills every container and stops every sandbox of the pod; throws when a step failed (Go: KillPod).
   * When `options.signal` aborts, the kill stops waiting (preStop hooks, sidecar ordering, StopContainer
   * calls are cancelled) and rejects with the signal's reason.
   */
  async killPod(pod: V1Pod | undefined, runningPod: RuntimePod, gracePeriodOverrideSeconds?: number, options?: { signal?: AbortSignal }): Promise<void> {
    const result = await this.killPodWithSyncResult(pod, runningPod, gracePeriodOverrideSeconds, options);
    const err = podSyncError(result);
    if (err) throw err;
  }

  /** Go: killPodWithSyncResult: the containers (killContainersWithSyncResult), then StopPodSandbox for every sandbox. */
  async killPodWithSyncResult(
    pod: V1Pod | undefined,
    runningPod: RuntimePod,
    gracePeriodOverrideSeconds?: number,
    options?: { signal?: AbortSignal },
  ): Promise<PodSyncResult> {
    const signal = options?.signal;
    throwIfAborted(signal);
    const result: PodSyncResult = { syncResults: [] };
    result.syncResults.push(...(await this.killContainersWithSyncResult(pod, runningPod, gracePeriodOverrideSeconds, signal)));

    const sandboxResult: SyncResult = { action: 'KillPodSandbox', target: runningPod.id };
    result.syncResults.push(sandboxResult);
    for (const sandbox of runningPod.sandboxes) {
      try {
        await this.runtimeService.stopPodSandbox(sandbox.id.id, { signal });
      } catch (err) {
        throwIfAborted(signal);
        if (isNotFound(err)) continue;
        sandboxResult.error = 'KillPodSandboxError';
        sandboxResult.message = errorMessage(err);
        this.logger.error('Failed to stop sandbox', err, { podSandboxID: sandbox.id.id });
      }
    }
    return result;
  }

  /**
   * Kills the running containers in parallel (Go: killContainersWithSyncResult). A pod with sidecars
   * stops them last, in reverse spec order, each once the containers before it have terminated or
   * its grace period has run out (TerminationOrdering).
   */
  private async killContainersWithSyncResult(
    pod: V1Pod | undefined,
    runningPod: RuntimePod,
    gracePeriodOverrideSeconds: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<SyncResult[]> {
    const ordering =
      pod && hasRestartableInitContainer(pod)
        ? new TerminationOrdering(pod, runningPod.containers.map((c) => c.name), this.clock)
        : undefined;
    const settled = await Promise.allSettled(
      runningPod.containers.map(async (container): Promise<SyncResult> => {
        const r: SyncResult = { action: 'KillContainer', target: container.name };
        try {
          await this.killContainer(pod, container.id, container.name, '', 'Unknown', gracePeriodOverrideSeconds, { signal, ordering });
        } catch (err) {
          throwIfAborted(signal);
          r.error = 'KillContainerError';
          r.message = errorMessage(err);
          this.logger.error('Kill container failed', err, {
            pod: `${runningPod.namespace}/${runningPod.name}`,
            podUID: runningPod.id,
            containerName: container.name,
            containerID: formatContainerID(container.id),
          });
        }
        return r;
      }),
    );
    throwIfAborted(signal);
    return settled.map((s) => {
      // Only an abort rejects, and that was rethrown above.
      if (s.status === 'rejected') throw s.reason;
      return s.value;
    });
  }

  /** The grace period in seconds before any override (Go: setTerminationGracePeriod). */
  static terminationGracePeriod(pod: V1Pod, container: V1Container | undefined, reason: ContainerKillReason): number {
    const deletion = pod.metadata?.deletionGracePeriodSeconds;
    if (deletion !== undefined && deletion !== null) return deletion;
    const podGrace = pod.spec?.terminationGracePeriodSeconds;
    if (podGrace !== undefined && podGrace !== null) {
      if (reason === 'StartupProbe' && container?.startupProbe?.terminationGracePeriodSeconds != null) return container.startupProbe.terminationGracePeriodSeconds;
      if (reason === 'LivenessProbe' && container?.livenessProbe?.terminationGracePeriodSeconds != null) return container.livenessProbe.terminationGracePeriodSeconds;
      return podGrace;
    }
    return MINIMUM_GRACE_PERIOD_SECONDS;
  }

  /**
   * Stops a container: the preStop hook within the grace period, then (for a sidecar in a pod kill)
   * its turn within what is left, then StopContainer with the rest, at least 2 s (Go: killContainer).
   * Without the pod, what is needed comes from the container's labels and annotations. With
   * `options.signal`, an abort cancels every wait and call and rejects with the signal's reason.
   */
  async killContainer(
    pod: V1Pod | undefined,
    id: ContainerID,
    containerName: string,
    message: string,
    reason: ContainerKillReason,
    gracePeriodOverrideSeconds?: number,
    options?: { signal?: AbortSignal; ordering?: TerminationOrdering },
  ): Promise<void> {
    const signal = options?.signal;
    const ordering = options?.ordering;
    throwIfAborted(signal);
    let containerSpec: V1Container | undefined;
    if (pod) {
      containerSpec = getContainerSpec(pod, containerName);
      if (!containerSpec) {
        throw new Error(
          `failed to get containerSpec ${JSON.stringify(containerName)} (id=${JSON.stringify(formatContainerID(id))}) in pod ${JSON.stringify(formatPod(pod))} when killing container for reason ${JSON.stringify(message)}`,
        );
      }
    } else {
      [pod, containerSpec] = await this.restoreSpecsFromContainerLabels(id, signal);
    }

    let gracePeriod = GenericRuntimeManager.terminationGracePeriod(pod, containerSpec, reason);
    this.event(pod, 'Normal', KubeletEventReason.KillingContainer, message || `Stopping container ${containerSpec.name}`, containerSpec, id.id);
    if (gracePeriodOverrideSeconds !== undefined) {
      gracePeriod = gracePeriodOverrideSeconds;
      this.logger.v(3).info('Killing container with a grace period override', { pod: podRef(pod), containerName, containerID: formatContainerID(id), gracePeriod });
    }
    if (containerSpec.lifecycle?.preStop && gracePeriod > 0) {
      gracePeriod -= await this.executePreStopHook(pod, id, containerSpec, gracePeriod, signal);
    }
    // A sidecar waits for its turn, within what is left; the wait is truncated to whole seconds.
    if (ordering && gracePeriod > 0) {
      gracePeriod -= Math.trunc(await ordering.waitForTurn(containerName, gracePeriod, signal));
    }
    if (gracePeriod < MINIMUM_GRACE_PERIOD_SECONDS) gracePeriod = MINIMUM_GRACE_PERIOD_SECONDS;
    this.logger.v(2).info('Killing container with a grace period', { pod: podRef(pod), containerName, containerID: formatContainerID(id), gracePeriod });
    try {
      await this.runtimeService.stopContainer(id.id, gracePeriod, { signal });
    } catch (err) {
      throwIfAborted(signal);
      if (!isNotFound(err)) {
        this.logger.error('Container termination failed with gracePeriod', err, { pod: podRef(pod), containerName, containerID: formatContainerID(id), gracePeriod });
        throw err;
      }
    }
    this.logger.v(3).info('Container exited normally', { pod: podRef(pod), containerName, containerID: formatContainerID(id) });
    ordering?.containerTerminated(containerName);
  }

  /**
   * Runs the preStop hook for at most the grace period; returns the whole seconds it took (Go:
   * executePreStopHook). A hook still running when the grace period ends is abandoned; an abort of
   * `signal` abandons it and rejects with the signal's reason.
   */
  private async executePreStopHook(pod: V1Pod, id: ContainerID, container: V1Container, gracePeriod: number, signal?: AbortSignal): Promise<number> {
    this.logger.v(3).info('Running preStop hook', { pod: podRef(pod), podUID: pod.metadata?.uid, containerName: container.name, containerID: formatContainerID(id) });
    const started = this.clock.now();
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const hook = this.runHandler(pod, container, id, container.lifecycle!.preStop!, controller.signal).then(
      () => 'done' as const,
      (err: unknown) => {
        if (!controller.signal.aborted) {
          this.logger.error('PreStop hook failed', err, { pod: podRef(pod), containerName: container.name, containerID: formatContainerID(id) });
          // The message may hold secrets: the event does not carry it.
          this.event(pod, 'Warning', KubeletEventReason.FailedPreStopHook, 'PreStopHook failed', container, id.id);
        }
        return 'done' as const;
      },
    );
    const timeout = this.clock.sleep(gracePeriod * 1000, controller.signal).then(
      () => 'timeout' as const,
      () => 'aborted' as const,
    );
    try {
      const outcome = await Promise.race([hook, timeout]);
      throwIfAborted(signal);
      if (outcome === 'timeout') {
        this.logger.v(2).info('PreStop hook not completed in grace period', { pod: podRef(pod), containerName: container.name, containerID: formatContainerID(id), gracePeriod });
      } else {
        this.logger.v(3).info('PreStop hook completed', { pod: podRef(pod), containerName: container.name, containerID: formatContainerID(id) });
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      controller.abort();
    }
    return Math.floor((this.clock.now() - started) / 1000);
  }

  /** The parts of pod and container a kill needs, from the container's labels (Go: restoreSpecsFromContainerLabels). */
  private async restoreSpecsFromContainerLabels(id: ContainerID, signal?: AbortSignal): Promise<[V1Pod, V1Container]> {
    const response = await this.runtimeService.containerStatus(id.id, false, { signal });
    if (!response.status) throw new Error('container status is nil');
    const l = getContainerInfoFromLabels(response.status.labels);
    const a = getContainerInfoFromAnnotations(response.status.annotations);
    const pod: V1Pod = {
      metadata: { uid: l.podUid, name: l.podName, namespace: l.podNamespace, deletionGracePeriodSeconds: a.podDeletionGracePeriod },
      spec: { containers: [], terminationGracePeriodSeconds: a.podTerminationGracePeriod },
    };
    const container: V1Container = { name: l.containerName, ports: a.containerPorts, terminationMessagePath: a.terminationMessagePath };
    if (a.preStopHandler) container.lifecycle = { preStop: a.preStopHandler };
    pod.spec!.containers = [container];
    return [pod, container];
  }

  // ---------------------------------------------------------------------------------------------
  // Container removal

  /** Hands the node's pod CIDR to the runtime's network plugin (Go: UpdatePodCIDR). */
  async updatePodCIDR(podCIDR: string): Promise<void> {
    this.logger.info('Updating runtime config through cri with podcidr', { CIDR: podCIDR });
    await this.runtimeService.updateRuntimeConfig({ networkConfig: { podCidr: podCIDR } });
  }

  /** Removes a container (Go: removeContainer, without log rotation cleanup). */
  async deleteContainer(id: ContainerID): Promise<void> {
    await this.runtimeService.removeContainer(id.id);
  }

  /** Runs a command in a container, returning stdout and stderr (Go: RunInContainer). */
  async runInContainer(id: ContainerID, cmd: string[], timeoutSeconds: number): Promise<Buffer> {
    const result = await this.runtimeService.execSync(id.id, cmd, timeoutSeconds);
    const output = Buffer.concat([result.stdout, result.stderr]);
    if (result.exitCode !== 0) {
      const err = new Error(`command '${cmd.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString('utf8')}`) as Error & { exitCode: number; output: Buffer };
      err.exitCode = result.exitCode;
      err.output = output;
      throw err;
    }
    return output;
  }

  /** Keeps only the newest exited instance of each init container (Go: pruneInitContainersBeforeStart). */
  private async pruneInitContainersBeforeStart(pod: V1Pod, podStatus: PodStatus, signal?: AbortSignal): Promise<void> {
    for (const name of new Set((pod.spec?.initContainers ?? []).map((c) => c.name))) {
      const instances = podStatus.containerStatuses
        .filter((s) => s.name === name && (s.state === 'exited' || s.state === 'unknown'))
        .sort((a, b) => b.createdAt - a.createdAt);
      for (const status of instances.slice(1)) {
        try {
          await this.runtimeService.removeContainer(status.id.id, { signal });
        } catch (err) {
          throwIfAborted(signal);
          this.logger.error('Failed to remove pod init container', err, { containerName: name, pod: podRef(pod) });
        }
      }
    }
  }

  /** Removes every init container instance (Go: purgeInitContainers), before a new sandbox. */
  private async purgeInitContainers(pod: V1Pod, podStatus: PodStatus, signal?: AbortSignal): Promise<void> {
    const names = new Set((pod.spec?.initContainers ?? []).map((c) => c.name));
    for (const status of podStatus.containerStatuses) {
      if (!names.has(status.name)) continue;
      try {
        await this.runtimeService.removeContainer(status.id.id, { signal });
      } catch (err) {
        throwIfAborted(signal);
        this.logger.error('Failed to remove pod init container', err, { containerName: status.name, pod: podRef(pod) });
      }
    }
  }
}

function describeActions(a: PodActions): Record<string, unknown> {
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    sandboxId: a.sandboxId,
    attempt: a.attempt,
    initContainersToStart: a.initContainersToStart,
    containersToStart: a.containersToStart,
    ephemeralContainersToStart: a.ephemeralContainersToStart,
    containersToKill: [...a.containersToKill.keys()],
  };
}
