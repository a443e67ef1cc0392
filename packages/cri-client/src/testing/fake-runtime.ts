import { criError, type CriErrorCode } from '../errors.js';
import type * as api from '../runtimeapi.js';
import type { CallOptions, ExecSyncResult, ImageService, RuntimeService } from '../services.js';

/**
 * Anything with `now()` in ms: a core Clock or FakeClock fits. Its `setTimeout`, when present, times
 * the fakes' slow operations (graceful stops, slow pulls); without it they use the process timers.
 */
export interface NowSource {
  now(): number;
  setTimeout?(fn: () => void, ms: number): { cancel(): void };
}

export interface RecordedCall {
  method: string;
  args: unknown[];
}

/**
 * Shared call recording and error injection, as the Go kubelet's fakes do (`Called`, `InjectError`).
 * Errors queued for a method are returned by its next calls, one each, before the method runs.
 */
export class CallRecorder {
  readonly calls: RecordedCall[] = [];
  private readonly errors = new Map<string, Error[]>();
  private readonly persistentErrors = new Map<string, Error>();

  record(method: string, args: unknown[]): void {
    this.calls.push({ method, args });
    const queued = this.errors.get(method);
    if (queued && queued.length > 0) throw queued.shift()!;
    const persistent = this.persistentErrors.get(method);
    if (persistent) throw persistent;
  }

  inject(method: string, error: Error, persistent: boolean): void {
    if (persistent) this.persistentErrors.set(method, error);
    else this.errors.set(method, [...(this.errors.get(method) ?? []), error]);
  }

  clearErrors(): void {
    this.errors.clear();
    this.persistentErrors.clear();
  }

  methods(): string[] {
    return this.calls.map((call) => call.method);
  }
}

export abstract class FakeBase {
  protected readonly recorder = new CallRecorder();

  constructor(
    protected readonly service: string,
    protected readonly clock: NowSource = Date,
  ) {}

  /** Every call made so far, in order. */
  get calls(): RecordedCall[] {
    return this.recorder.calls;
  }

  /** The method names called so far, in order (Go: `Called`). */
  get called(): string[] {
    return this.recorder.methods();
  }

  resetCalls(): void {
    this.recorder.calls.length = 0;
  }

  /**
   * Makes the next call of `method` (e.g. 'stopContainer') fail with `error`, or with a typed CriError of
   * the given code. With `persistent`, every call fails until clearErrors().
   */
  injectError(method: string, error: Error | CriErrorCode, options: { persistent?: boolean } = {}): void {
    const value = typeof error === 'string' ? criError({ rpc: `${this.service}/${method}`, code: error, details: `injected ${error}` }) : error;
    this.recorder.inject(method, value, options.persistent ?? false);
  }

  clearErrors(): void {
    this.recorder.clearErrors();
  }

  /**
   * Records a call and raises an injected error. A call whose signal is already aborted never reaches
   * the runtime: it fails with the Canceled error the gRPC client gives, and is not recorded.
   */
  protected record(method: string, args: unknown[], options?: CallOptions): void {
    if (options?.signal?.aborted) throw this.canceled(method, options.signal);
    this.recorder.record(method, args);
  }

  /** The error a cancelled call fails with, as RemoteRuntimeService/RemoteImageService give it. */
  protected canceled(method: string, signal: AbortSignal): Error {
    const reason: unknown = signal.reason;
    const details = reason instanceof Error ? reason.message : 'the call was canceled before it started';
    return criError({ rpc: `${this.service}/${rpcName(method)}`, code: 'Canceled', details, cause: reason });
  }

  /** Schedules fn on the injected clock when it has timers, else on the process timers. */
  protected schedule(fn: () => void, ms: number): { cancel(): void } {
    if (this.clock.setTimeout) return this.clock.setTimeout(fn, ms);
    const timer = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(timer) };
  }

  /**
   * Settles with `work`, unless the call's signal aborts first: then it rejects with the Canceled
   * error at once and `onAbort` runs (to drop what the call was waiting for).
   */
  protected abortable<T>(method: string, work: Promise<T>, options?: CallOptions, onAbort?: () => void): Promise<T> {
    const signal = options?.signal;
    if (!signal) return work;
    if (signal.aborted) {
      onAbort?.();
      return Promise.reject(this.canceled(method, signal));
    }
    return new Promise<T>((resolve, reject) => {
      const abort = (): void => {
        onAbort?.();
        reject(this.canceled(method, signal));
      };
      signal.addEventListener('abort', abort, { once: true });
      work.then(
        (value) => {
          signal.removeEventListener('abort', abort);
          resolve(value);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', abort);
          reject(err);
        },
      );
    });
  }

  /** Resolves after ms on the clock; rejects with the Canceled error when the call's signal aborts. */
  protected delay(method: string, ms: number, options?: CallOptions): Promise<void> {
    let timer: { cancel(): void } | undefined;
    const done = new Promise<void>((resolve) => {
      timer = this.schedule(resolve, ms);
    });
    return this.abortable(method, done, options, () => timer?.cancel());
  }

  protected nowNanos(): number {
    return this.clock.now() * 1_000_000;
  }

  protected notFound(method: string, kind: string, id: string): Error {
    return criError({
      rpc: `${this.service}/${method}`,
      object: `${kind} ${JSON.stringify(id)}`,
      code: 'NotFound',
      details: `${kind} ${JSON.stringify(id)} not found`,
    });
  }
}

export interface FakeSandbox {
  status: api.PodSandboxStatus;
  runtimeHandler: string;
}

export interface FakeContainer {
  status: api.ContainerStatus;
  sandboxId: string;
  config: api.ContainerConfigInit;
}

/**
 * How a container's process reacts to StopContainer's stop signal (SIGTERM): it exits `exitAfterMs`
 * later with `exitCode` (default 0), or never (`Infinity`: it ignores SIGTERM); StopContainer kills it
 * (exit code 137) when its timeout runs out first.
 */
export interface FakeStopBehavior {
  exitAfterMs: number;
  exitCode?: number;
}

/** A container being stopped: the graceful exit timer and the StopContainer calls waiting for the exit. */
interface Stopping {
  exitTimer?: { cancel(): void };
  waiters: Set<{ resolve(): void; killTimer?: { cancel(): void } }>;
}

/** The answer of ExecSync for a container: fixed, or a function of the command (which may take time). */
export type FakeExecResult =
  | ExecSyncResult
  | ((cmd: string[], signal?: AbortSignal) => ExecSyncResult | Promise<ExecSyncResult>);

/** `stopContainer` -> `StopContainer`, the RPC name errors carry. */
const rpcName = (method: string): string => method.charAt(0).toUpperCase() + method.slice(1);

const labelsMatch = (labels: Record<string, string>, selector: Record<string, string> | undefined) =>
  !selector || Object.entries(selector).every(([key, value]) => labels[key] === value);

/** Sandbox ids are built from the metadata, as the Go fake does, so tests can predict them. */
export function buildSandboxName(metadata: api.PodSandboxMetadataInit | null | undefined): string {
  return [metadata?.name ?? '', metadata?.namespace ?? '', metadata?.uid ?? '', String(metadata?.attempt ?? 0)].join('_');
}

export function buildContainerName(metadata: api.ContainerMetadataInit | null | undefined, sandboxId: string): string {
  return [metadata?.name ?? '', sandboxId, String(metadata?.attempt ?? 0)].join('_');
}

const emptyImageSpec = (image = ''): api.ImageSpec => ({ image, annotations: {}, userSpecifiedImage: '', runtimeHandler: '' });

/**
 * An in-memory RuntimeService for unit tests: containers and sandboxes move through their states
 * as a real runtime's would, every call is recorded, any call can be made to fail.
 */
export class FakeRuntimeService extends FakeBase implements RuntimeService {
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  /** What ExecSync answers, by container id; default: empty output, exit code 0. */
  readonly execResults = new Map<string, FakeExecResult>();
  /**
   * How containers react to StopContainer, by container id or container name (the id wins). Without
   * an entry a container exits at once with 137, as if killed.
   */
  readonly stopBehaviors = new Map<string, FakeStopBehavior>();
  private readonly stopping = new Map<string, Stopping>();
  runtimeConditions: api.RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  versionResponse: api.VersionResponse = { version: '0.1.0', runtimeName: 'fakeRuntime', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  podCidr = '';
  /**
   * What RuntimeConfig answers: a cgroup driver, or undefined (the default) for a runtime without the RPC,
   * which fails with Unimplemented as containerd 1.6 does.
   */
  cgroupDriver: api.CgroupDriver | undefined = undefined;
  /** The IP new pod-network sandboxes get; host-network ones get none. */
  podSandboxIp = '192.168.192.168';
  private readonly eventStreams = new Set<{ push(event: api.ContainerEventResponse): void; end(): void }>();

  constructor(clock?: NowSource) {
    super('RuntimeService', clock);
  }

  /** Moves a container to a state directly, as if its process had started or died. */
  setContainerState(id: string, state: api.ContainerState, exitCode = 0, reason = ''): void {
    const entry = this.containers.get(id);
    if (!entry) throw new Error(`FakeRuntimeService: no container ${JSON.stringify(id)}`);
    const status = entry.status;
    status.state = state;
    if (state === 'CONTAINER_RUNNING') status.startedAt = this.nowNanos();
    if (state === 'CONTAINER_EXITED') {
      status.finishedAt = this.nowNanos();
      status.exitCode = exitCode;
      status.reason = reason || (exitCode === 0 ? 'Completed' : 'Error');
      this.finishStopping(id);
    }
    this.emit(id, state === 'CONTAINER_RUNNING' ? 'CONTAINER_STARTED_EVENT' : state === 'CONTAINER_EXITED' ? 'CONTAINER_STOPPED_EVENT' : 'CONTAINER_CREATED_EVENT');
  }

  async version(apiVersion: string, options?: CallOptions): Promise<api.VersionResponse> {
    this.record('version', [apiVersion], options);
    return { ...this.versionResponse };
  }

  async runPodSandbox(config: api.PodSandboxConfigInit, runtimeHandler = '', options?: CallOptions): Promise<string> {
    this.record('runPodSandbox', [config, runtimeHandler], options);
    const id = buildSandboxName(config.metadata);
    const metadata = config.metadata ?? {};
    const namespaces = config.linux?.securityContext?.namespaceOptions as
      | { network?: api.NamespaceMode; pid?: api.NamespaceMode; ipc?: api.NamespaceMode; targetId?: string }
      | undefined;
    this.sandboxes.set(id, {
      runtimeHandler,
      status: {
        id,
        metadata: { name: metadata.name ?? '', uid: metadata.uid ?? '', namespace: metadata.namespace ?? '', attempt: metadata.attempt ?? 0 },
        state: 'SANDBOX_READY',
        createdAt: this.nowNanos(),
        // As real runtimes: a host-network sandbox reports no IP of its own.
        network: { ip: namespaces?.network === 'NODE' ? '' : this.podSandboxIp, additionalIps: [] },
        linux: {
          namespaces: {
            options: {
              network: namespaces?.network ?? 'POD',
              pid: namespaces?.pid ?? 'POD',
              ipc: namespaces?.ipc ?? 'POD',
              targetId: namespaces?.targetId ?? '',
              usernsOptions: null,
            },
          },
        },
        labels: { ...(config.labels ?? {}) },
        annotations: { ...(config.annotations ?? {}) },
        runtimeHandler,
      },
    });
    return id;
  }

  async stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    this.record('stopPodSandbox', [podSandboxId], options);
    const entry = this.sandboxes.get(podSandboxId);
    if (!entry) return; // idempotent, as the CRI requires
    entry.status.state = 'SANDBOX_NOTREADY';
    for (const [id, c] of this.containers) {
      if (c.sandboxId === podSandboxId && c.status.state === 'CONTAINER_RUNNING') this.setContainerState(id, 'CONTAINER_EXITED', 137);
    }
  }

  async removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    this.record('removePodSandbox', [podSandboxId], options);
    for (const [id, c] of this.containers) {
      if (c.sandboxId === podSandboxId) {
        this.containers.delete(id);
        this.finishStopping(id);
        this.emit(id, 'CONTAINER_DELETED_EVENT', c);
      }
    }
    this.sandboxes.delete(podSandboxId);
  }

  async podSandboxStatus(podSandboxId: string, verbose = false, options?: CallOptions): Promise<api.PodSandboxStatusResponse> {
    this.record('podSandboxStatus', [podSandboxId, verbose], options);
    const entry = this.sandboxes.get(podSandboxId);
    if (!entry) throw this.notFound('PodSandboxStatus', 'pod sandbox', podSandboxId);
    // As a runtime with container events answers (and the evented PLEG reads): the sandbox's containers at its time.
    return { status: structuredClone(entry.status), info: {}, containersStatuses: this.containerStatusesOf(podSandboxId), timestamp: this.nowNanos() };
  }

  async listPodSandbox(filter?: api.PodSandboxFilterInit, options?: CallOptions): Promise<api.PodSandbox[]> {
    this.record('listPodSandbox', [filter], options);
    const result: api.PodSandbox[] = [];
    for (const { status, runtimeHandler } of this.sandboxes.values()) {
      if (filter?.id && filter.id !== status.id) continue;
      if (filter?.state && filter.state.state !== undefined && filter.state.state !== status.state) continue;
      if (!labelsMatch(status.labels, filter?.labelSelector)) continue;
      result.push(structuredClone({
        id: status.id,
        metadata: status.metadata,
        state: status.state,
        createdAt: status.createdAt,
        labels: status.labels,
        annotations: status.annotations,
        runtimeHandler,
      }));
    }
    return result;
  }

  async createContainer(
    podSandboxId: string,
    config: api.ContainerConfigInit,
    sandboxConfig: api.PodSandboxConfigInit,
    options?: CallOptions,
  ): Promise<string> {
    this.record('createContainer', [podSandboxId, config, sandboxConfig], options);
    if (!this.sandboxes.has(podSandboxId)) throw this.notFound('CreateContainer', 'pod sandbox', podSandboxId);
    const id = buildContainerName(config.metadata, podSandboxId);
    const image = config.image?.image ?? '';
    this.containers.set(id, {
      sandboxId: podSandboxId,
      config,
      status: {
        id,
        metadata: { name: config.metadata?.name ?? '', attempt: config.metadata?.attempt ?? 0 },
        state: 'CONTAINER_CREATED',
        createdAt: this.nowNanos(),
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        image: emptyImageSpec(image),
        imageRef: image,
        reason: '',
        message: '',
        labels: { ...(config.labels ?? {}) },
        annotations: { ...(config.annotations ?? {}) },
        mounts: (config.mounts ?? []).map((m) => ({
          containerPath: m.containerPath ?? '',
          hostPath: m.hostPath ?? '',
          readonly: m.readonly ?? false,
          selinuxRelabel: m.selinuxRelabel ?? false,
          propagation: (m.propagation ?? 'PROPAGATION_PRIVATE') as api.MountPropagation,
          uidMappings: [],
          gidMappings: [],
          recursiveReadOnly: m.recursiveReadOnly ?? false,
          image: null,
        })),
        logPath: sandboxConfig.logDirectory && config.logPath ? `${sandboxConfig.logDirectory}/${config.logPath}` : '',
        resources: null,
        imageId: image,
        user: null,
        imageSource: '',
      },
    });
    this.emit(id, 'CONTAINER_CREATED_EVENT');
    return id;
  }

  async startContainer(containerId: string, options?: CallOptions): Promise<void> {
    this.record('startContainer', [containerId], options);
    if (!this.containers.has(containerId)) throw this.notFound('StartContainer', 'container', containerId);
    this.setContainerState(containerId, 'CONTAINER_RUNNING');
  }

  /** Makes a container ignore SIGTERM: StopContainer only ends it when its timeout runs out. */
  ignoreSigterm(idOrName: string): void {
    this.stopBehaviors.set(idOrName, { exitAfterMs: Infinity });
  }

  /**
   * Stops a running container as a runtime does: the stop signal first, then, when the container has
   * not exited `timeoutSeconds` later (on the injected clock), SIGKILL (exit code 137). Without a stop
   * behavior the container exits at once. Several calls may wait on one container; the first deadline
   * to pass kills it and every call returns. An aborted call returns at once (Canceled) and its
   * deadline is dropped, as when the kubelet cancels the RPC.
   */
  async stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void> {
    this.record('stopContainer', [containerId, timeoutSeconds], options);
    const entry = this.containers.get(containerId);
    if (!entry) throw this.notFound('StopContainer', 'container', containerId);
    if (entry.status.state !== 'CONTAINER_RUNNING') return;
    const behavior = this.stopBehaviors.get(containerId) ?? this.stopBehaviors.get(entry.status.metadata?.name ?? '');
    if (!behavior || timeoutSeconds <= 0) {
      this.setContainerState(containerId, 'CONTAINER_EXITED', 137);
      return;
    }
    let stopping = this.stopping.get(containerId);
    if (!stopping) {
      const started: Stopping = { waiters: new Set() };
      this.stopping.set(containerId, started);
      stopping = started;
      if (Number.isFinite(behavior.exitAfterMs)) {
        started.exitTimer = this.schedule(() => this.exitIfRunning(containerId, behavior.exitCode ?? 0), behavior.exitAfterMs);
      }
    }
    const waiters = stopping.waiters;
    const waiter: { resolve(): void; killTimer?: { cancel(): void } } = { resolve: () => undefined };
    const exited = new Promise<void>((resolve) => {
      waiter.resolve = resolve;
    });
    waiter.killTimer = this.schedule(() => this.exitIfRunning(containerId, 137), timeoutSeconds * 1000);
    waiters.add(waiter);
    await this.abortable('stopContainer', exited, options, () => {
      waiter.killTimer?.cancel();
      waiters.delete(waiter);
    });
  }

  private exitIfRunning(containerId: string, exitCode: number): void {
    const entry = this.containers.get(containerId);
    if (entry?.status.state === 'CONTAINER_RUNNING') this.setContainerState(containerId, 'CONTAINER_EXITED', exitCode);
    else this.finishStopping(containerId);
  }

  /** The container exited (or is gone): every StopContainer waiting on it returns, no timer is left. */
  private finishStopping(containerId: string): void {
    const stopping = this.stopping.get(containerId);
    if (!stopping) return;
    this.stopping.delete(containerId);
    stopping.exitTimer?.cancel();
    for (const waiter of stopping.waiters) {
      waiter.killTimer?.cancel();
      waiter.resolve();
    }
  }

  async removeContainer(containerId: string, options?: CallOptions): Promise<void> {
    this.record('removeContainer', [containerId], options);
    const entry = this.containers.get(containerId);
    if (!entry) return;
    this.containers.delete(containerId);
    this.finishStopping(containerId);
    this.emit(containerId, 'CONTAINER_DELETED_EVENT', entry);
  }

  async listContainers(filter?: api.ContainerFilterInit, options?: CallOptions): Promise<api.Container[]> {
    this.record('listContainers', [filter], options);
    const result: api.Container[] = [];
    for (const { status, sandboxId } of this.containers.values()) {
      if (filter?.id && filter.id !== status.id) continue;
      if (filter?.podSandboxId && filter.podSandboxId !== sandboxId) continue;
      if (filter?.state && filter.state.state !== undefined && filter.state.state !== status.state) continue;
      if (!labelsMatch(status.labels, filter?.labelSelector)) continue;
      result.push(structuredClone({
        id: status.id,
        podSandboxId: sandboxId,
        metadata: status.metadata,
        image: status.image,
        imageRef: status.imageRef,
        state: status.state,
        createdAt: status.createdAt,
        labels: status.labels,
        annotations: status.annotations,
        imageId: status.imageId,
      }));
    }
    return result;
  }

  async containerStatus(containerId: string, verbose = false, options?: CallOptions): Promise<api.ContainerStatusResponse> {
    this.record('containerStatus', [containerId, verbose], options);
    const entry = this.containers.get(containerId);
    if (!entry) throw this.notFound('ContainerStatus', 'container', containerId);
    return { status: structuredClone(entry.status), info: {} };
  }

  async updateContainerResources(
    containerId: string,
    resources: { linux?: api.LinuxContainerResourcesInit; annotations?: Record<string, string> },
    options?: CallOptions,
  ): Promise<void> {
    this.record('updateContainerResources', [containerId, resources], options);
    if (!this.containers.has(containerId)) throw this.notFound('UpdateContainerResources', 'container', containerId);
  }

  async reopenContainerLog(containerId: string, options?: CallOptions): Promise<void> {
    this.record('reopenContainerLog', [containerId], options);
    if (!this.containers.has(containerId)) throw this.notFound('ReopenContainerLog', 'container', containerId);
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult> {
    this.record('execSync', [containerId, cmd, timeoutSeconds], options);
    if (!this.containers.has(containerId)) throw this.notFound('ExecSync', 'container', containerId);
    const result = this.execResults.get(containerId);
    if (typeof result === 'function') {
      // A command that takes time: the call returns Canceled as soon as its signal aborts.
      const controller = new AbortController();
      const running = Promise.resolve().then(() => result(cmd, controller.signal));
      return this.abortable('execSync', running, options, () => controller.abort(options?.signal?.reason));
    }
    return result ?? { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
  }

  async exec(request: api.ExecRequestInit, options?: CallOptions): Promise<api.ExecResponse> {
    this.record('exec', [request], options);
    return { url: `http://127.0.0.1:0/exec/${request.containerId ?? ''}` };
  }

  async attach(request: api.AttachRequestInit, options?: CallOptions): Promise<api.AttachResponse> {
    this.record('attach', [request], options);
    return { url: `http://127.0.0.1:0/attach/${request.containerId ?? ''}` };
  }

  async portForward(request: api.PortForwardRequestInit, options?: CallOptions): Promise<api.PortForwardResponse> {
    this.record('portForward', [request], options);
    return { url: `http://127.0.0.1:0/portforward/${request.podSandboxId ?? ''}` };
  }

  private statsFor(entry: FakeContainer): api.ContainerStats {
    const timestamp = this.nowNanos();
    return {
      attributes: { id: entry.status.id, metadata: entry.status.metadata, labels: entry.status.labels, annotations: entry.status.annotations },
      cpu: { timestamp, usageCoreNanoSeconds: { value: 0 }, usageNanoCores: { value: 0 } },
      memory: { timestamp, workingSetBytes: { value: 0 }, availableBytes: null, usageBytes: { value: 0 }, rssBytes: null, pageFaults: null, majorPageFaults: null },
      writableLayer: null,
      swap: null,
    };
  }

  async containerStats(containerId: string, options?: CallOptions): Promise<api.ContainerStats> {
    this.record('containerStats', [containerId], options);
    const entry = this.containers.get(containerId);
    if (!entry) throw this.notFound('ContainerStats', 'container', containerId);
    return this.statsFor(entry);
  }

  async listContainerStats(filter?: api.ContainerStatsFilterInit, options?: CallOptions): Promise<api.ContainerStats[]> {
    this.record('listContainerStats', [filter], options);
    return [...this.containers.values()]
      .filter((c) => c.status.state === 'CONTAINER_RUNNING')
      .filter((c) => (!filter?.id || filter.id === c.status.id) && (!filter?.podSandboxId || filter.podSandboxId === c.sandboxId))
      .filter((c) => labelsMatch(c.status.labels, filter?.labelSelector))
      .map((c) => this.statsFor(c));
  }

  private sandboxStats(entry: FakeSandbox): api.PodSandboxStats {
    const containers = [...this.containers.values()].filter((c) => c.sandboxId === entry.status.id).map((c) => this.statsFor(c));
    const { id, metadata, labels, annotations } = entry.status;
    return { attributes: { id, metadata, labels, annotations }, linux: { cpu: null, memory: null, network: null, process: null, containers } };
  }

  async podSandboxStats(podSandboxId: string, options?: CallOptions): Promise<api.PodSandboxStats> {
    this.record('podSandboxStats', [podSandboxId], options);
    const entry = this.sandboxes.get(podSandboxId);
    if (!entry) throw this.notFound('PodSandboxStats', 'pod sandbox', podSandboxId);
    return this.sandboxStats(entry);
  }

  async listPodSandboxStats(filter?: api.PodSandboxStatsFilterInit, options?: CallOptions): Promise<api.PodSandboxStats[]> {
    this.record('listPodSandboxStats', [filter], options);
    return [...this.sandboxes.values()]
      .filter((s) => (!filter?.id || filter.id === s.status.id) && labelsMatch(s.status.labels, filter?.labelSelector))
      .map((s) => this.sandboxStats(s));
  }

  async updateRuntimeConfig(runtimeConfig: api.RuntimeConfigInit, options?: CallOptions): Promise<void> {
    this.record('updateRuntimeConfig', [runtimeConfig], options);
    this.podCidr = runtimeConfig.networkConfig?.podCidr ?? '';
  }

  async runtimeConfig(options?: CallOptions): Promise<api.RuntimeConfigResponse> {
    this.record('runtimeConfig', [], options);
    if (this.cgroupDriver === undefined) throw criError({ rpc: 'RuntimeService/RuntimeConfig', code: 'Unimplemented', details: 'unknown method RuntimeConfig for service runtime.v1.RuntimeService' });
    return { linux: { cgroupDriver: this.cgroupDriver } };
  }

  async status(verbose = false, options?: CallOptions): Promise<api.StatusResponse> {
    this.record('status', [verbose], options);
    return { status: { conditions: structuredClone(this.runtimeConditions) }, info: {}, runtimeHandlers: [], features: null };
  }

  /** Streams every state change made after the call; an injected error fails the stream at once. */
  getContainerEvents(options?: { signal?: AbortSignal }): AsyncIterable<api.ContainerEventResponse> {
    this.record('getContainerEvents', []);
    const queue: api.ContainerEventResponse[] = [];
    let wake: (() => void) | undefined;
    let ended = false;
    const stream = {
      push: (event: api.ContainerEventResponse) => { queue.push(event); wake?.(); },
      end: () => { ended = true; wake?.(); },
    };
    this.eventStreams.add(stream);
    const streams = this.eventStreams;
    const signal = options?.signal;
    signal?.addEventListener('abort', stream.end, { once: true });
    return {
      async *[Symbol.asyncIterator]() {
        try {
          while (true) {
            while (queue.length > 0) yield queue.shift()!;
            if (ended || signal?.aborted) return;
            await new Promise<void>((resolve) => { wake = resolve; });
            wake = undefined;
          }
        } finally {
          streams.delete(stream);
          signal?.removeEventListener('abort', stream.end);
        }
      },
    };
  }

  private containerStatusesOf(sandboxId: string): api.ContainerStatus[] {
    return [...this.containers.values()].filter((c) => c.sandboxId === sandboxId).map((c) => structuredClone(c.status));
  }

  /** Ends every open event stream, as a runtime restart would. */
  endEventStreams(): void {
    for (const stream of this.eventStreams) stream.end();
  }

  private emit(containerId: string, type: api.ContainerEventType, removed?: FakeContainer): void {
    if (this.eventStreams.size === 0) return;
    const entry = removed ?? this.containers.get(containerId);
    const sandbox = entry ? this.sandboxes.get(entry.sandboxId) : undefined;
    const siblings = entry ? this.containerStatusesOf(entry.sandboxId) : [];
    const event: api.ContainerEventResponse = {
      containerId,
      containerEventType: type,
      createdAt: this.nowNanos(),
      podSandboxStatus: sandbox ? structuredClone(sandbox.status) : null,
      containersStatuses: siblings,
    };
    for (const stream of this.eventStreams) stream.push(event);
  }
}

export interface FakeImage {
  image: api.Image;
}

/** An in-memory ImageService for unit tests; PullImage of an image in `unpullable` fails like a registry miss. */
export class FakeImageService extends FakeBase implements ImageService {
  readonly images = new Map<string, api.Image>();
  readonly unpullable = new Set<string>();
  /** How long PullImage of an image takes on the clock, in ms, by the reference pulled; default: no time. */
  readonly pullDelays = new Map<string, number>();
  imageFsUsage = { usedBytes: 0, inodesUsed: 0, mountpoint: '/var/lib/fake-runtime' };

  constructor(clock?: NowSource) {
    super('ImageService', clock);
  }

  /** Adds images as if pulled; `size` defaults to 1 MiB. */
  setImages(...images: Array<{ id?: string; tags?: string[]; size?: number; pinned?: boolean } | string>): void {
    for (const item of images) {
      const spec = typeof item === 'string' ? { tags: [item] } : item;
      const tags = spec.tags ?? [];
      const id = spec.id ?? `sha256:${(tags[0] ?? 'image').replace(/[^a-z0-9]/gi, '')}`;
      this.images.set(id, {
        id,
        repoTags: tags,
        repoDigests: [],
        size: spec.size ?? 1024 * 1024,
        uid: null,
        username: '',
        spec: null,
        pinned: spec.pinned ?? false,
        imageSource: '',
      });
    }
  }

  private find(ref: string): api.Image | undefined {
    return this.images.get(ref) ?? [...this.images.values()].find((image) => image.repoTags.includes(ref) || image.repoDigests.includes(ref));
  }

  async listImages(filter?: api.ImageFilterInit, options?: CallOptions): Promise<api.Image[]> {
    this.record('listImages', [filter], options);
    const wanted = filter?.image?.image;
    return [...this.images.values()].filter((image) => !wanted || this.find(wanted) === image).map((image) => structuredClone(image));
  }

  async imageStatus(spec: api.ImageSpecInit, verbose = false, options?: CallOptions): Promise<api.ImageStatusResponse> {
    this.record('imageStatus', [spec, verbose], options);
    const image = this.find(spec.image ?? '');
    return { image: image ? structuredClone(image) : null, info: {} };
  }

  async pullImage(
    spec: api.ImageSpecInit,
    auth?: api.AuthConfigInit,
    sandboxConfig?: api.PodSandboxConfigInit,
    options?: CallOptions,
  ): Promise<string> {
    this.record('pullImage', [spec, auth, sandboxConfig], options);
    const ref = spec.image ?? '';
    const delayMs = this.pullDelays.get(ref) ?? 0;
    if (delayMs > 0) await this.delay('pullImage', delayMs, options);
    if (this.unpullable.has(ref)) {
      throw criError({
        rpc: 'ImageService/PullImage',
        object: `image ${JSON.stringify(ref)}`,
        code: 'NotFound',
        details: `failed to pull and unpack image ${JSON.stringify(ref)}: not found`,
      });
    }
    if (!this.find(ref)) this.setImages(ref);
    return this.find(ref)!.id;
  }

  async removeImage(spec: api.ImageSpecInit, options?: CallOptions): Promise<void> {
    this.record('removeImage', [spec], options);
    const image = this.find(spec.image ?? '');
    if (image) this.images.delete(image.id);
  }

  async imageFsInfo(options?: CallOptions): Promise<api.ImageFsInfoResponse> {
    this.record('imageFsInfo', [], options);
    const used = this.imageFsUsage.usedBytes || [...this.images.values()].reduce((sum, image) => sum + image.size, 0);
    return {
      imageFilesystems: [
        {
          timestamp: this.nowNanos(),
          fsId: { mountpoint: this.imageFsUsage.mountpoint },
          usedBytes: { value: used },
          inodesUsed: { value: this.imageFsUsage.inodesUsed || this.images.size },
        },
      ],
      containerFilesystems: [],
    };
  }
}
