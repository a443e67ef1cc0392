import { criError, type CriErrorCode } from '../errors.js';
import type * as api from '../runtimeapi.js';
import type { CallOptions, ExecSyncResult, ImageService, RuntimeService } from '../services.js';

/** Anything with `now()` in ms: a core Clock or FakeClock fits. */
export interface NowSource {
  now(): number;
}

export interface RecordedCall {
  method: string;
  args: unknown[];
}

/**
 * Shared call recording and error injection, as the Go kubelet's fakes do (`Called`, `InjectError`).
 * Errors queued for a method are returned by its next calls, one each, before the method runs.
 */
class CallRecorder {
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

  protected record(method: string, args: unknown[]): void {
    this.recorder.record(method, args);
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
  readonly execResults = new Map<string, ExecSyncResult | ((cmd: string[]) => ExecSyncResult)>();
  runtimeConditions: api.RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  versionResponse: api.VersionResponse = { version: '0.1.0', runtimeName: 'fakeRuntime', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  podCidr = '';
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
    }
    this.emit(id, state === 'CONTAINER_RUNNING' ? 'CONTAINER_STARTED_EVENT' : state === 'CONTAINER_EXITED' ? 'CONTAINER_STOPPED_EVENT' : 'CONTAINER_CREATED_EVENT');
  }

  async version(apiVersion: string, _options?: CallOptions): Promise<api.VersionResponse> {
    this.record('version', [apiVersion]);
    return { ...this.versionResponse };
  }

  async runPodSandbox(config: api.PodSandboxConfigInit, runtimeHandler = '', _options?: CallOptions): Promise<string> {
    this.record('runPodSandbox', [config, runtimeHandler]);
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
        network: { ip: namespaces?.network === 'NODE' ? '' : '192.168.192.168', additionalIps: [] },
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

  async stopPodSandbox(podSandboxId: string, _options?: CallOptions): Promise<void> {
    this.record('stopPodSandbox', [podSandboxId]);
    const entry = this.sandboxes.get(podSandboxId);
    if (!entry) return; // idempotent, as the CRI requires
    entry.status.state = 'SANDBOX_NOTREADY';
    for (const [id, c] of this.containers) {
      if (c.sandboxId === podSandboxId && c.status.state === 'CONTAINER_RUNNING') this.setContainerState(id, 'CONTAINER_EXITED', 137);
    }
  }

  async removePodSandbox(podSandboxId: string, _options?: CallOptions): Promise<void> {
    this.record('removePodSandbox', [podSandboxId]);
    for (const [id, c] of this.containers) {
      if (c.sandboxId === podSandboxId) {
        this.containers.delete(id);
        this.emit(id, 'CONTAINER_DELETED_EVENT', c);
      }
    }
    this.sandboxes.delete(podSandboxId);
  }

  async podSandboxStatus(podSandboxId: string, verbose = false, _options?: CallOptions): Promise<api.PodSandboxStatusResponse> {
    this.record('podSandboxStatus', [podSandboxId, verbose]);
    const entry = this.sandboxes.get(podSandboxId);
    if (!entry) throw this.notFound('PodSandboxStatus', 'pod sandbox', podSandboxId);
    return { status: structuredClone(entry.status), info: {}, containersStatuses: [], timestamp: this.nowNanos() };
  }

  async listPodSandbox(filter?: api.PodSandboxFilterInit, _options?: CallOptions): Promise<api.PodSandbox[]> {
    this.record('listPodSandbox', [filter]);
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
    _options?: CallOptions,
  ): Promise<string> {
    this.record('createContainer', [podSandboxId, config, sandboxConfig]);
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

  async startContainer(containerId: string, _options?: CallOptions): Promise<void> {
    this.record('startContainer', [containerId]);
    if (!this.containers.has(containerId)) throw this.notFound('StartContainer', 'container', containerId);
    this.setContainerState(containerId, 'CONTAINER_RUNNING');
  }

  async stopContainer(containerId: string, timeoutSeconds: number, _options?: CallOptions): Promise<void> {
    this.record('stopContainer', [containerId, timeoutSeconds]);
    const entry = this.containers.get(containerId);
    if (!entry) throw this.notFound('StopContainer', 'container', containerId);
    if (entry.status.state === 'CONTAINER_RUNNING') this.setContainerState(containerId, 'CONTAINER_EXITED', 137);
  }

  async removeContainer(containerId: string, _options?: CallOptions): Promise<void> {
    this.record('removeContainer', [containerId]);
    const entry = this.containers.get(containerId);
    if (!entry) return;
    this.containers.delete(containerId);
    this.emit(containerId, 'CONTAINER_DELETED_EVENT', entry);
  }

  async listContainers(filter?: api.ContainerFilterInit, _options?: CallOptions): Promise<api.Container[]> {
    this.record('listContainers', [filter]);
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

  async containerStatus(containerId: string, verbose = false, _options?: CallOptions): Promise<api.ContainerStatusResponse> {
    this.record('containerStatus', [containerId, verbose]);
    const entry = this.containers.get(containerId);
    if (!entry) throw this.notFound('ContainerStatus', 'container', containerId);
    return { status: structuredClone(entry.status), info: {} };
  }

  async updateContainerResources(
    containerId: string,
    resources: { linux?: api.LinuxContainerResourcesInit; annotations?: Record<string, string> },
    _options?: CallOptions,
  ): Promise<void> {
    this.record('updateContainerResources', [containerId, resources]);
    if (!this.containers.has(containerId)) throw this.notFound('UpdateContainerResources', 'container', containerId);
  }

  async reopenContainerLog(containerId: string, _options?: CallOptions): Promise<void> {
    this.record('reopenContainerLog', [containerId]);
    if (!this.containers.has(containerId)) throw this.notFound('ReopenContainerLog', 'container', containerId);
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, _options?: CallOptions): Promise<ExecSyncResult> {
    this.record('execSync', [containerId, cmd, timeoutSeconds]);
    if (!this.containers.has(containerId)) throw this.notFound('ExecSync', 'container', containerId);
    const result = this.execResults.get(containerId);
    if (typeof result === 'function') return result(cmd);
    return result ?? { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
  }

  async exec(request: api.ExecRequestInit, _options?: CallOptions): Promise<api.ExecResponse> {
    this.record('exec', [request]);
    return { url: `http://127.0.0.1:0/exec/${request.containerId ?? ''}` };
  }

  async attach(request: api.AttachRequestInit, _options?: CallOptions): Promise<api.AttachResponse> {
    this.record('attach', [request]);
    return { url: `http://127.0.0.1:0/attach/${request.containerId ?? ''}` };
  }

  async portForward(request: api.PortForwardRequestInit, _options?: CallOptions): Promise<api.PortForwardResponse> {
    this.record('portForward', [request]);
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

  async containerStats(containerId: string, _options?: CallOptions): Promise<api.ContainerStats> {
    this.record('containerStats', [containerId]);
    const entry = this.containers.get(containerId);
    if (!entry) throw this.notFound('ContainerStats', 'container', containerId);
    return this.statsFor(entry);
  }

  async listContainerStats(filter?: api.ContainerStatsFilterInit, _options?: CallOptions): Promise<api.ContainerStats[]> {
    this.record('listContainerStats', [filter]);
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

  async podSandboxStats(podSandboxId: string, _options?: CallOptions): Promise<api.PodSandboxStats> {
    this.record('podSandboxStats', [podSandboxId]);
    const entry = this.sandboxes.get(podSandboxId);
    if (!entry) throw this.notFound('PodSandboxStats', 'pod sandbox', podSandboxId);
    return this.sandboxStats(entry);
  }

  async listPodSandboxStats(filter?: api.PodSandboxStatsFilterInit, _options?: CallOptions): Promise<api.PodSandboxStats[]> {
    this.record('listPodSandboxStats', [filter]);
    return [...this.sandboxes.values()]
      .filter((s) => (!filter?.id || filter.id === s.status.id) && labelsMatch(s.status.labels, filter?.labelSelector))
      .map((s) => this.sandboxStats(s));
  }

  async updateRuntimeConfig(runtimeConfig: api.RuntimeConfigInit, _options?: CallOptions): Promise<void> {
    this.record('updateRuntimeConfig', [runtimeConfig]);
    this.podCidr = runtimeConfig.networkConfig?.podCidr ?? '';
  }

  async status(verbose = false, _options?: CallOptions): Promise<api.StatusResponse> {
    this.record('status', [verbose]);
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

  /** Ends every open event stream, as a runtime restart would. */
  endEventStreams(): void {
    for (const stream of this.eventStreams) stream.end();
  }

  private emit(containerId: string, type: api.ContainerEventType, removed?: FakeContainer): void {
    if (this.eventStreams.size === 0) return;
    const entry = removed ?? this.containers.get(containerId);
    const sandbox = entry ? this.sandboxes.get(entry.sandboxId) : undefined;
    const siblings = [...this.containers.values()].filter((c) => entry && c.sandboxId === entry.sandboxId).map((c) => structuredClone(c.status));
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

  async listImages(filter?: api.ImageFilterInit, _options?: CallOptions): Promise<api.Image[]> {
    this.record('listImages', [filter]);
    const wanted = filter?.image?.image;
    return [...this.images.values()].filter((image) => !wanted || this.find(wanted) === image).map((image) => structuredClone(image));
  }

  async imageStatus(spec: api.ImageSpecInit, verbose = false, _options?: CallOptions): Promise<api.ImageStatusResponse> {
    this.record('imageStatus', [spec, verbose]);
    const image = this.find(spec.image ?? '');
    return { image: image ? structuredClone(image) : null, info: {} };
  }

  async pullImage(
    spec: api.ImageSpecInit,
    auth?: api.AuthConfigInit,
    sandboxConfig?: api.PodSandboxConfigInit,
    _options?: CallOptions,
  ): Promise<string> {
    this.record('pullImage', [spec, auth, sandboxConfig]);
    const ref = spec.image ?? '';
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

  async removeImage(spec: api.ImageSpecInit, _options?: CallOptions): Promise<void> {
    this.record('removeImage', [spec]);
    const image = this.find(spec.image ?? '');
    if (image) this.images.delete(image.id);
  }

  async imageFsInfo(_options?: CallOptions): Promise<api.ImageFsInfoResponse> {
    this.record('imageFsInfo', []);
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
