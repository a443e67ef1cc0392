import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, rmSync, statfsSync, statSync, unlinkSync } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import {
  CRI_API_VERSION,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  RemoteImageService,
  RemoteRuntimeService,
  criCodec,
  formatCriLogLine,
  grpcJs,
  grpcStatusFor,
  inProcessClient,
  loadCriServices,
  type runtimeapi as api,
} from '@kubelet-ts/cri-client';
import { defaultLogger, realClock, removeStaleSocket, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';
import { RuntimeError, failedPrecondition, invalidArgument, notFound } from './errors.js';
import { ImageStore } from './images.js';
import {
  PodSimulation,
  annotatedImageSize,
  defaultImageSize,
  defaultSimulation,
  probeResult,
  type ContainerSimulation,
  type SimulatedProbeResult,
  type SimulatedProbeType,
} from './simulation.js';
import { ContainerLogWriter, LineSplitter } from './log-writer.js';
import { HostProcess, execCommand, processStartTime, signalGroup } from './process.js';
import { readGroupUsage, type GroupUsage } from './procfs.js';
import { StateFile } from './state-file.js';
import { PodIPAllocator } from './pod-ips.js';
import type { PortForwardStream, StreamingIO, StreamingServer } from './streaming.js';
import { runProcessExec } from './streaming-process.js';
import { runSimulatedCommand } from './streaming-simulated.js';
import { LOCAL_RUNTIME_NAME, LOCAL_RUNTIME_VERSION } from './version.js';

/**
 * Behaviour of containers in simulated mode: the defaults of every container, which a pod's
 * `simulated.kubelet-ts.io/*` annotations override (see the README's "Simulated mode").
 */
export interface SimulatedOptions {
  /** StartContainer returns (and the container is RUNNING) after this long. Default 0. */
  startDelayMs?: number;
  /** Bytes per second of simulated image pulls: a pull takes the image's size / this. Default 0: instant. */
  imagePullBytesPerSecond?: number;
  /** A stopped container exits this long after StopContainer (killed at the stop timeout if shorter). Default 0. */
  stopDelayMs?: number;
  /** When set, every container exits this long after it started, with `exitCode`. Default: run forever. */
  exitAfterMs?: number;
  /** Exit code of containers that exit on their own (exitAfterMs). Default 0. */
  exitCode?: number;
  /**
   * The IPv4 range simulated pods get their IPs from, one each (a fleet gives each node its own); the node's pod CIDR,
   * once the kubelet sets one through UpdateRuntimeConfig, is used instead. Default none: 127.0.0.1, as in process
   * mode (which an API server refuses as an Endpoints address).
   */
  podCIDR?: string;
}

export interface LocalRuntimeOptions {
  /**
   * Path of the unix socket start() serves on; a stale socket file there is removed. Not needed for
   * startInProcess(), which serves callers in this process only.
   */
  socketPath?: string;
  /** 'process': containers are host processes. 'simulated': no processes, state only. */
  mode: 'process' | 'simulated';
  /** Where sandbox directories, the image list and the state file live. */
  rootDir: string;
  /** Timestamps and CRI-visible timers (stop and exec timeouts, simulated delays). Default: the real clock. */
  clock?: Clock;
  logger?: Logger;
  simulated?: SimulatedOptions;
  /** Images whose pull fails as not found (besides any name containing `doesnotexist`). */
  unpullableImages?: string[];
  /**
   * Keep sandbox/container metadata in `<rootDir>/state.json` and images in `<rootDir>/images.json`
   * so a restarted runtime still lists them. Default: true in process mode, false in simulated mode.
   */
  persistState?: boolean;
  /** stop(): time between SIGTERM and SIGKILL for running containers. Default 2000 ms. */
  stopGracePeriodMs?: number;
  /** Events queued per GetContainerEvents stream before further events are dropped (and counted). Default 10000. */
  maxEventBacklog?: number;
}

interface SandboxRecord {
  id: string;
  nameKey: string;
  metadata: api.PodSandboxMetadataInit;
  state: api.PodSandboxState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
  hostname: string;
  logDirectory: string;
  /** The sandbox's directory (process mode); '' in simulated mode. */
  dir: string;
  namespaceOptions: api.NamespaceOptionInit | null;
  ip: string;
}

interface ContainerRecord {
  id: string;
  sandboxId: string;
  nameKey: string;
  metadata: api.ContainerMetadataInit;
  image: api.ImageSpecInit;
  imageRef: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: api.MountInit[];
  /** Full path of the log file, '' when the kubelet asked for none. */
  logPath: string;
  command: string[];
  args: string[];
  envs: { key: string; value: string }[];
  workingDir: string;
  state: api.ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  resources: api.LinuxContainerResourcesInit | null;
  pid?: number;
  pidStartTime?: string;
}

/** What only exists while a container is starting or running. */
interface LiveContainer {
  proc?: HostProcess;
  log?: ContainerLogWriter;
  timers: TimerHandle[];
  stopping: boolean;
  /** Ends a simulated start delay early (shutdown). */
  wake?: () => void;
  /** Resolves when the container has exited and its record says so. */
  exited: Promise<void>;
  markExited: () => void;
}

interface PersistedState {
  sandboxes: SandboxRecord[];
  containers: ContainerRecord[];
  podCidr?: string;
}

type EventStream = grpc.ServerWritableStream<api.GetEventsRequest, api.ContainerEventResponseInit>;

const MAX_EXEC_OUTPUT_BYTES = 16 * 1024 * 1024;
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const newId = (): string => randomBytes(32).toString('hex');

function matchesLabels(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  for (const key in selector) {
    if (labels[key] !== selector[key]) return false;
  }
  return true;
}

/**
 * An embedded CRI runtime.v1 server (RuntimeService + ImageService over gRPC on a unix socket).
 * In process mode a container is a host process with NO isolation; in simulated mode containers are
 * state only, cheap enough for thousands of pods.
 */
export class LocalRuntime {
  readonly mode: 'process' | 'simulated';
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly rootDir: string;
  private readonly socketPath: string | undefined;
  private readonly sim: Required<Omit<SimulatedOptions, 'exitAfterMs' | 'podCIDR'>> & { exitAfterMs?: number };
  /** The behaviour of containers of pods without simulation annotations (one shared object). */
  private readonly defaultSim: ContainerSimulation;
  /** Simulated mode: each sandbox's parsed annotations (absent for pods without any), each container's behaviour. */
  private readonly podSims = new WeakMap<SandboxRecord, PodSimulation>();
  private readonly containerSims = new WeakMap<ContainerRecord, ContainerSimulation>();
  /** Simulated pulls in progress, by normalized image name. */
  private readonly pulls = new Map<string, Promise<string>>();
  private readonly stopGracePeriodMs: number;
  private readonly maxEventBacklog: number;
  private readonly persist: boolean;

  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly sandboxContainers = new Map<string, Set<string>>();
  private readonly sandboxNames = new Map<string, string>();
  private readonly containerNames = new Map<string, string>();
  private readonly live = new Map<string, LiveContainer>();
  private readonly execKills = new Set<() => void>();
  private readonly streams = new Set<EventStream>();
  private readonly cpuSamples = new Map<string, { at: number; cpuNanos: number }>();
  private readonly images: ImageStore;
  private readonly stateFile: StateFile<PersistedState>;

  private server: grpc.Server | undefined;
  /** The CRI streaming server (exec, attach), started by the first Exec or Attach. */
  private streamingStart: Promise<StreamingServer> | undefined;
  /** Serving callers: over the socket (start) or in process (startInProcess). */
  private serving = false;
  private prepared = false;
  private stopping: Promise<void> | undefined;
  private podCidr = '';
  /** Simulated mode: where pod IPs come from (SimulatedOptions.podCIDR, then the node's pod CIDR). */
  private podIPs: PodIPAllocator | undefined;
  private droppedEventCount = 0;
  private readonly startedPids = new Set<number>();

  constructor(options: LocalRuntimeOptions) {
    if (options.mode !== 'process' && options.mode !== 'simulated') {
      throw new Error(`unknown local runtime mode ${JSON.stringify(options.mode)}: want "process" or "simulated"`);
    }
    this.mode = options.mode;
    this.clock = options.clock ?? realClock;
    this.logger = options.logger ?? defaultLogger;
    this.rootDir = resolve(options.rootDir);
    this.socketPath = options.socketPath === undefined ? undefined : resolve(options.socketPath);
    this.sim = {
      startDelayMs: options.simulated?.startDelayMs ?? 0,
      stopDelayMs: options.simulated?.stopDelayMs ?? 0,
      exitAfterMs: options.simulated?.exitAfterMs,
      exitCode: options.simulated?.exitCode ?? 0,
      imagePullBytesPerSecond: Math.max(0, options.simulated?.imagePullBytesPerSecond ?? 0),
    };
    this.defaultSim = defaultSimulation(this.sim);
    if (this.mode === 'simulated' && options.simulated?.podCIDR) this.podIPs = new PodIPAllocator(options.simulated.podCIDR);
    this.stopGracePeriodMs = options.stopGracePeriodMs ?? 2000;
    this.maxEventBacklog = options.maxEventBacklog ?? 10_000;
    this.persist = options.persistState ?? this.mode === 'process';
    this.images = new ImageStore({
      rootDir: this.rootDir,
      unpullableImages: options.unpullableImages,
      now: () => this.clock.now(),
      persist: this.persist,
    });
    this.stateFile = new StateFile(join(this.rootDir, 'state.json'), () => ({
      sandboxes: [...this.sandboxes.values()],
      containers: [...this.containers.values()],
      podCidr: this.podCidr,
    }));
  }

  /** The CRI endpoint of this runtime: `unix://<socketPath>`, or `inprocess://<rootDir>` without a socket path. */
  get endpoint(): string {
    return this.socketPath === undefined ? `inprocess://${this.rootDir}` : `unix://${this.socketPath}`;
  }

  /** Events not delivered because a GetContainerEvents stream had maxEventBacklog events queued. */
  get droppedEvents(): number {
    return this.droppedEventCount;
  }

  /** Pids of every container process this runtime started (for tests checking that none outlive stop()). */
  get processIds(): number[] {
    return [...this.startedPids];
  }

  /** The pod CIDR last set through UpdateRuntimeConfig. */
  get podCIDR(): string {
    return this.podCidr;
  }

  /** New simulated sandboxes take their IPs from the node's pod CIDR (the ones running keep theirs). */
  private usePodCIDR(cidr: string): void {
    const ipv4 = cidr.split(',').map((c) => c.trim()).find((c) => c.includes('.'));
    if (!ipv4) return;
    try {
      const allocator = new PodIPAllocator(ipv4);
      for (const sandbox of this.sandboxes.values()) if (sandbox.ip) allocator.reserve(sandbox.ip);
      this.podIPs = allocator;
    } catch (error) {
      this.logger.warn('Not using the pod CIDR for simulated pod IPs', { podCidr: cidr, err: (error as Error).message });
    }
  }

  /** Binds the socket and serves. Rejects when the socket is in use by a live server. */
  async start(): Promise<void> {
    if (this.server) throw new Error('local runtime already started');
    if (this.stopping) throw new Error('local runtime was stopped; create a new one');
    if (this.socketPath === undefined) throw new Error('local runtime has no socketPath to serve on; use startInProcess()');
    mkdirSync(this.rootDir, { recursive: true });
    mkdirSync(dirname(this.socketPath), { recursive: true });
    await removeStaleSocket(this.socketPath);
    this.prepare();

    const pkg = loadCriServices();
    // grpc-js (cri-client's) is loaded when a runtime starts, not with the package.
    const server = new (grpcJs().Server)({
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    });
    server.addService(pkg.RuntimeService.service, this.runtimeHandlers());
    server.addService(pkg.ImageService.service, this.imageHandlers());
    await new Promise<void>((resolvePromise, reject) => {
      server.bindAsync(this.endpoint, grpcJs().ServerCredentials.createInsecure(), (error) => {
        if (error) reject(new Error(`local runtime cannot listen on ${this.endpoint}: ${error.message}`));
        else resolvePromise();
      });
    });
    this.server = server;
    this.serving = true;
    this.logger.info('Local runtime serving', { endpoint: this.endpoint, mode: this.mode, rootDir: this.rootDir });
  }

  /** Loads persisted images and state, once (start and startInProcess may both be used). */
  private prepare(): void {
    if (this.prepared) return;
    this.prepared = true;
    // The root directory exists (ImageFsInfo names it as the image filesystem); simulated mode writes no file in it.
    mkdirSync(this.rootDir, { recursive: true });
    this.images.load();
    if (this.persist) this.loadState();
  }

  /**
   * Serves this process only, with no socket and no gRPC: a cri-client RuntimeService and ImageService whose
   * calls reach this runtime's handlers directly, through the same codec as over gRPC (the same response objects
   * and typed errors as RemoteRuntimeService/RemoteImageService on the socket). May be called more than once, and
   * besides start(). stop() ends it: later calls fail with Unavailable, event streams end.
   */
  async startInProcess(options: { timeoutMs?: number; pullTimeoutMs?: number } = {}): Promise<{
    runtimeService: RemoteRuntimeService;
    imageService: RemoteImageService;
  }> {
    if (this.stopping) throw new Error('local runtime was stopped; create a new one');
    this.prepare();
    const defs = criServiceDefinitions();
    const endpoint = `inprocess://${this.rootDir}`;
    const timeoutMs = options.timeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    const runtimeService = new RemoteRuntimeService({ endpoint, timeoutMs, client: inProcessClient(defs.RuntimeService, this.runtimeHandlers()) });
    const imageService = new RemoteImageService({
      endpoint,
      timeoutMs,
      pullTimeoutMs: options.pullTimeoutMs,
      client: inProcessClient(defs.ImageService, this.imageHandlers()),
    });
    if (!this.serving) this.logger.v(2).info('Local runtime serving in process', { mode: this.mode, rootDir: this.rootDir });
    this.serving = true;
    return { runtimeService, imageService };
  }

  /**
   * Stops every container process (SIGTERM, SIGKILL after stopGracePeriodMs), ends the event
   * streams, shuts the server down and removes the socket. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    // Streaming sessions end first: their exec'd commands are killed.
    const streaming = this.streamingStart;
    this.streamingStart = undefined;
    if (streaming) await (await streaming.catch(() => undefined))?.stop();
    for (const stream of this.streams) stream.end();
    this.streams.clear();

    // Running containers: simulated ones just stop their timers; processes get SIGTERM, then SIGKILL.
    const exits: Promise<void>[] = [];
    for (const [id, live] of this.live) {
      for (const timer of live.timers) timer.cancel();
      live.timers = [];
      live.wake?.();
      const record = this.containers.get(id);
      if (live.proc) {
        live.proc.signal('SIGTERM');
        exits.push(live.exited);
      } else if (record && record.state === 'CONTAINER_RUNNING') {
        this.finishContainer(record, 137, 'Error', 'the local runtime stopped');
      }
    }
    for (const kill of this.execKills) kill();
    if (exits.length > 0) {
      let graceTimer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolvePromise) => {
        graceTimer = setTimeout(resolvePromise, this.stopGracePeriodMs);
      });
      await Promise.race([Promise.all(exits), grace]);
      clearTimeout(graceTimer);
      for (const live of this.live.values()) live.proc?.signal('SIGKILL');
      await Promise.all(exits);
    }
    if (this.persist) this.stateFile.flush();

    const server = this.server;
    this.server = undefined;
    if (server) {
      await new Promise<void>((resolvePromise) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolvePromise();
        }, 1000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolvePromise();
        });
      });
    }
    if (server && this.socketPath !== undefined) {
      try {
        unlinkSync(this.socketPath);
      } catch {
        // already gone
      }
    }
    this.logger.info('Local runtime stopped', { endpoint: this.endpoint });
  }

  // ---------------------------------------------------------------------------------------------
  // State

  private nowNs(): number {
    return Math.round(this.clock.now() * 1e6);
  }

  private saveState(): void {
    if (this.persist) this.stateFile.save();
  }

  private loadState(): void {
    const state = this.stateFile.load();
    if (!state) return;
    this.podCidr = state.podCidr ?? '';
    for (const sandbox of state.sandboxes ?? []) {
      this.sandboxes.set(sandbox.id, sandbox);
      if (sandbox.ip) this.podIPs?.reserve(sandbox.ip);
      this.sandboxNames.set(sandbox.nameKey, sandbox.id);
      this.sandboxContainers.set(sandbox.id, new Set());
    }
    for (const container of state.containers ?? []) {
      if (!this.sandboxes.has(container.sandboxId)) continue;
      this.containers.set(container.id, container);
      this.containerNames.set(container.nameKey, container.id);
      this.sandboxContainers.get(container.sandboxId)?.add(container.id);
      if (container.state === 'CONTAINER_RUNNING') {
        // The previous runtime died without stopping it: kill what is left, if it is still the same process.
        if (container.pid && container.pidStartTime && processStartTime(container.pid) === container.pidStartTime) {
          signalGroup(container.pid, 'SIGKILL');
        }
        container.state = 'CONTAINER_EXITED';
        container.exitCode = 255;
        container.reason = 'Unknown';
        container.message = 'the local runtime restarted while the container was running';
        container.finishedAt = this.nowNs();
      }
    }
  }

  private getSandbox(id: string): SandboxRecord {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw notFound('sandbox', id);
    return sandbox;
  }

  private getContainer(id: string): ContainerRecord {
    const container = this.containers.get(id);
    if (!container) throw notFound('container', id);
    return container;
  }

  // ---------------------------------------------------------------------------------------------
  // Sandboxes

  private runPodSandbox(request: api.RunPodSandboxRequest): api.RunPodSandboxResponseInit {
    const config = request.config;
    const metadata = config?.metadata;
    if (!config || !metadata || !metadata.name) throw invalidArgument('sandbox config must include metadata with a name');
    const nameKey = [metadata.name, metadata.namespace, metadata.uid, metadata.attempt].join('_');
    const holder = this.sandboxNames.get(nameKey);
    if (holder) {
      throw new RuntimeError(
        'AlreadyExists',
        `failed to reserve sandbox name ${JSON.stringify(nameKey)}: name ${JSON.stringify(nameKey)} is reserved for ${JSON.stringify(holder)}`,
      );
    }
    const id = newId();
    let dir = '';
    if (this.mode === 'process') {
      dir = join(this.rootDir, 'sandboxes', id);
      mkdirSync(dir, { recursive: true });
      if (config.logDirectory) mkdirSync(config.logDirectory, { recursive: true });
    }
    const namespaceOptions = config.linux?.securityContext?.namespaceOptions ?? null;
    const hostNetwork = namespaceOptions?.network === 'NODE';
    const sandbox: SandboxRecord = {
      id,
      nameKey,
      metadata: { name: metadata.name, uid: metadata.uid, namespace: metadata.namespace, attempt: metadata.attempt },
      state: 'SANDBOX_READY',
      createdAt: this.nowNs(),
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      runtimeHandler: request.runtimeHandler,
      hostname: config.hostname,
      logDirectory: config.logDirectory,
      dir,
      namespaceOptions: namespaceOptions ? { ...namespaceOptions } : null,
      // No network namespaces: pods share the host's, reachable on loopback; simulated pods get an address of their
      // own when there is a range to take it from.
      ip: hostNetwork ? '' : (this.podIPs?.allocate() ?? '127.0.0.1'),
    };
    if (this.mode === 'simulated') {
      const podSim = new PodSimulation(config.annotations, `${metadata.namespace}/${metadata.name}`, this.sim, this.logger);
      if (!podSim.isDefault) this.podSims.set(sandbox, podSim);
    }
    this.sandboxes.set(id, sandbox);
    this.sandboxNames.set(nameKey, id);
    this.sandboxContainers.set(id, new Set());
    this.saveState();
    this.logger.v(3).info('Sandbox created', { podSandboxId: id, pod: `${metadata.namespace}/${metadata.name}` });
    return { podSandboxId: id };
  }

  private async stopPodSandbox(request: api.StopPodSandboxRequest): Promise<api.StopPodSandboxResponseInit> {
    const sandbox = this.sandboxes.get(request.podSandboxId);
    if (!sandbox) return {};
    const ids = [...(this.sandboxContainers.get(sandbox.id) ?? [])];
    await Promise.all(ids.map((id) => this.stopContainerById(id, 0)));
    sandbox.state = 'SANDBOX_NOTREADY';
    this.saveState();
    return {};
  }

  private async removePodSandbox(request: api.RemovePodSandboxRequest): Promise<api.RemovePodSandboxResponseInit> {
    const sandbox = this.sandboxes.get(request.podSandboxId);
    if (!sandbox) return {};
    const ids = [...(this.sandboxContainers.get(sandbox.id) ?? [])];
    await Promise.all(ids.map((id) => this.removeContainerById(id)));
    if (!this.sandboxes.has(sandbox.id)) return {};
    sandbox.state = 'SANDBOX_NOTREADY';
    this.sandboxes.delete(sandbox.id);
    if (sandbox.ip !== '' && sandbox.ip !== '127.0.0.1') this.podIPs?.release(sandbox.ip);
    this.sandboxContainers.delete(sandbox.id);
    if (this.sandboxNames.get(sandbox.nameKey) === sandbox.id) this.sandboxNames.delete(sandbox.nameKey);
    if (sandbox.dir) rmSync(sandbox.dir, { recursive: true, force: true });
    this.saveState();
    return {};
  }

  private podSandboxStatus(request: api.PodSandboxStatusRequest): api.PodSandboxStatusResponseInit {
    const sandbox = this.getSandbox(request.podSandboxId);
    return {
      status: this.sandboxStatus(sandbox),
      info: request.verbose ? { info: JSON.stringify({ mode: this.mode, dir: sandbox.dir }) } : {},
      containersStatuses: this.containerStatusesOf(sandbox.id),
      timestamp: this.nowNs(),
    };
  }

  private listPodSandbox(request: api.ListPodSandboxRequest): api.ListPodSandboxResponseInit {
    const filter = request.filter;
    const candidates: Iterable<SandboxRecord> = filter?.id
      ? [this.sandboxes.get(filter.id)].filter((s): s is SandboxRecord => s !== undefined)
      : this.sandboxes.values();
    const items: api.PodSandboxInit[] = [];
    for (const sandbox of candidates) {
      if (filter?.state && sandbox.state !== filter.state.state) continue;
      if (!matchesLabels(sandbox.labels, filter?.labelSelector)) continue;
      items.push({
        id: sandbox.id,
        metadata: sandbox.metadata,
        state: sandbox.state,
        createdAt: sandbox.createdAt,
        labels: sandbox.labels,
        annotations: sandbox.annotations,
        runtimeHandler: sandbox.runtimeHandler,
      });
    }
    return { items };
  }

  private sandboxStatus(sandbox: SandboxRecord): api.PodSandboxStatusInit {
    return {
      id: sandbox.id,
      metadata: sandbox.metadata,
      state: sandbox.state,
      createdAt: sandbox.createdAt,
      network: { ip: sandbox.ip, additionalIps: [] },
      linux: sandbox.namespaceOptions ? { namespaces: { options: sandbox.namespaceOptions } } : null,
      labels: sandbox.labels,
      annotations: sandbox.annotations,
      runtimeHandler: sandbox.runtimeHandler,
    };
  }

  private containerStatusesOf(sandboxId: string): api.ContainerStatusInit[] {
    const statuses: api.ContainerStatusInit[] = [];
    for (const id of this.sandboxContainers.get(sandboxId) ?? []) {
      const container = this.containers.get(id);
      if (container) statuses.push(this.containerStatus(container));
    }
    return statuses;
  }

  // ---------------------------------------------------------------------------------------------
  // Containers

  private createContainer(request: api.CreateContainerRequest): api.CreateContainerResponseInit {
    const sandbox = this.getSandbox(request.podSandboxId);
    if (sandbox.state !== 'SANDBOX_READY') {
      throw failedPrecondition(`sandbox ${JSON.stringify(sandbox.id)} is not ready: cannot create a container in it`);
    }
    const config = request.config;
    const metadata = config?.metadata;
    if (!config || !metadata || !metadata.name) throw invalidArgument('container config must include metadata with a name');
    if (this.mode === 'process' && config.command.length === 0 && config.args.length === 0) {
      throw invalidArgument(
        `container ${JSON.stringify(metadata.name)} has neither command nor args: the local runtime does not read ` +
          'the image entrypoint, so the pod spec must give the command to run',
      );
    }
    const sandboxMetadata = sandbox.metadata;
    const nameKey = [
      metadata.name,
      sandboxMetadata.name,
      sandboxMetadata.namespace,
      sandboxMetadata.uid,
      metadata.attempt,
    ].join('_');
    const holder = this.containerNames.get(nameKey);
    if (holder) {
      throw new RuntimeError(
        'AlreadyExists',
        `failed to reserve container name ${JSON.stringify(nameKey)}: name ${JSON.stringify(nameKey)} is reserved for ${JSON.stringify(holder)}`,
      );
    }
    const image = config.image?.image ?? '';
    let logPath = '';
    if (config.logPath) {
      logPath = join(sandbox.logDirectory, config.logPath);
      if (!isAbsolute(logPath)) logPath = join(sandbox.dir || this.rootDir, logPath);
    }
    const id = newId();
    const container: ContainerRecord = {
      id,
      sandboxId: sandbox.id,
      nameKey,
      metadata: { name: metadata.name, attempt: metadata.attempt },
      image: { image, annotations: { ...config.image?.annotations }, userSpecifiedImage: config.image?.userSpecifiedImage ?? '' },
      imageRef: this.images.refFor(image),
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      mounts: config.mounts.map((mount) => ({ ...mount })),
      logPath,
      command: [...config.command],
      args: [...config.args],
      envs: config.envs.map((kv) => ({ key: kv.key, value: kv.value })),
      workingDir: config.workingDir,
      state: 'CONTAINER_CREATED',
      createdAt: this.nowNs(),
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      message: '',
      resources: config.linux?.resources ? { ...config.linux.resources } : null,
    };
    if (this.mode === 'simulated') {
      const podSim = this.podSims.get(sandbox);
      if (podSim) this.containerSims.set(container, podSim.container(metadata.name));
    }
    this.containers.set(id, container);
    this.containerNames.set(nameKey, id);
    this.sandboxContainers.get(sandbox.id)?.add(id);
    this.saveState();
    this.emit('CONTAINER_CREATED_EVENT', container);
    return { containerId: id };
  }

  private async startContainer(request: api.StartContainerRequest): Promise<api.StartContainerResponseInit> {
    const container = this.getContainer(request.containerId);
    if (container.state !== 'CONTAINER_CREATED' || this.live.has(container.id)) {
      throw failedPrecondition(`container ${JSON.stringify(container.id)} is in ${container.state} state: only a created container can be started`);
    }
    const sandbox = this.getSandbox(container.sandboxId);
    if (sandbox.state !== 'SANDBOX_READY') {
      throw failedPrecondition(`sandbox ${JSON.stringify(sandbox.id)} of container ${JSON.stringify(container.id)} is not ready`);
    }
    let markExited!: () => void;
    const live: LiveContainer = {
      timers: [],
      stopping: false,
      exited: new Promise<void>((resolvePromise) => (markExited = resolvePromise)),
      markExited: () => markExited(),
    };
    this.live.set(container.id, live);
    if (this.mode === 'simulated') await this.startSimulated(container, live);
    else await this.startProcess(container, sandbox, live);
    return {};
  }

  /** How a simulated container behaves: its pod's annotations over the runtime's defaults. */
  private simOf(container: ContainerRecord): ContainerSimulation {
    return this.containerSims.get(container) ?? this.defaultSim;
  }

  private async startSimulated(container: ContainerRecord, live: LiveContainer): Promise<void> {
    const sim = this.simOf(container);
    if (sim.startDelayMs > 0) {
      await new Promise<void>((resolvePromise) => {
        live.wake = resolvePromise;
        live.timers.push(this.clock.setTimeout(resolvePromise, sim.startDelayMs));
      });
      live.timers = [];
      live.wake = undefined;
      if (this.stopping) {
        this.live.delete(container.id);
        live.markExited();
        throw new RuntimeError('Unavailable', 'the local runtime is shutting down');
      }
      if (this.containers.get(container.id) !== container) {
        this.live.delete(container.id);
        live.markExited();
        throw new RuntimeError('NotFound', `container ${JSON.stringify(container.id)} was removed while starting`);
      }
    }
    if (container.logPath) {
      // As a real runtime does on start: the container's output, in the CRI log format, for `kubectl logs`.
      const name = container.metadata.name ?? '';
      const text = sim.log ?? `simulated container ${name} started`;
      try {
        await mkdir(dirname(container.logPath), { recursive: true });
        await appendFile(container.logPath, this.logRecords(text));
      } catch (error) {
        this.finishContainer(container, 128, 'StartError', (error as Error).message);
        throw new RuntimeError('Unknown', `failed to create container log file ${JSON.stringify(container.logPath)}: ${(error as Error).message}`);
      }
    }
    if (this.containers.get(container.id) !== container || this.stopping) {
      // Removed, or the runtime stopped, while its log was written.
      this.live.delete(container.id);
      live.markExited();
      if (this.stopping) throw new RuntimeError('Unavailable', 'the local runtime is shutting down');
      throw new RuntimeError('NotFound', `container ${JSON.stringify(container.id)} was removed while starting`);
    }
    container.state = 'CONTAINER_RUNNING';
    container.startedAt = this.nowNs();
    if (sim.exitAfterMs !== undefined) {
      const code = sim.exitCode;
      const exit = (): void => this.finishContainer(container, code, code === 0 ? 'Completed' : 'Error', '');
      // Exits right after start (no exit-after): at once, yet after StartContainer has answered, as a process
      // that exits at once; a later exit is a timer on the clock.
      if (sim.exitAfterMs === 0) setImmediate(exit);
      else live.timers.push(this.clock.setTimeout(exit, sim.exitAfterMs));
    }
    this.saveState();
    this.emit('CONTAINER_STARTED_EVENT', container);
  }

  private async startProcess(container: ContainerRecord, sandbox: SandboxRecord, live: LiveContainer): Promise<void> {
    const argv = [...container.command, ...container.args];
    const cwd = container.workingDir || sandbox.dir;
    const fail = async (message: string): Promise<never> => {
      await live.log?.close();
      this.finishContainer(container, 128, 'StartError', message);
      throw new RuntimeError('Unknown', `failed to start container ${JSON.stringify(container.id)}: ${message}`);
    };
    try {
      if (!statSync(cwd).isDirectory()) return await fail(`working directory ${JSON.stringify(cwd)} is not a directory`);
    } catch {
      return await fail(`chdir to cwd (${JSON.stringify(cwd)}) set in config failed: no such file or directory`);
    }
    if (container.logPath) {
      try {
        live.log = new ContainerLogWriter(container.logPath, () => this.clock.now());
      } catch (error) {
        return await fail(`failed to create container log file ${JSON.stringify(container.logPath)}: ${(error as Error).message}`);
      }
    }
    let proc: HostProcess;
    try {
      proc = await HostProcess.start({
        command: argv[0],
        args: argv.slice(1),
        cwd,
        env: this.containerEnv(container, sandbox),
        stdout: live.log?.splitter('stdout'),
        stderr: live.log?.splitter('stderr'),
      });
    } catch (error) {
      return await fail((error as Error).message);
    }
    this.startedPids.add(proc.pid);
    live.proc = proc;
    if (this.containers.get(container.id) !== container) {
      // Removed while it was being spawned: it must not outlive its record.
      proc.signal('SIGKILL');
      await proc.exited;
      await live.log?.close();
      this.live.delete(container.id);
      live.markExited();
      throw new RuntimeError('NotFound', `container ${JSON.stringify(container.id)} was removed while starting`);
    }
    container.state = 'CONTAINER_RUNNING';
    container.startedAt = this.nowNs();
    container.pid = proc.pid;
    container.pidStartTime = processStartTime(proc.pid);
    void proc.exited.then(async (exit) => {
      await live.log?.close();
      this.finishContainer(container, exit.exitCode, exit.exitCode === 0 ? 'Completed' : 'Error', '');
    });
    this.saveState();
    this.emit('CONTAINER_STARTED_EVENT', container);
    if (this.stopping) proc.signal('SIGKILL');
  }

  private containerEnv(container: ContainerRecord, sandbox: SandboxRecord): Record<string, string> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? DEFAULT_PATH,
      HOSTNAME: sandbox.hostname || osHostname(),
    };
    if (process.env.HOME) env.HOME = process.env.HOME;
    for (const { key, value } of container.envs) env[key] = value;
    return env;
  }

  /** Records an exit (once), ends the live state and tells the event streams. */
  private finishContainer(container: ContainerRecord, exitCode: number, reason: string, message: string): void {
    if (container.state === 'CONTAINER_EXITED') return;
    container.state = 'CONTAINER_EXITED';
    container.exitCode = exitCode;
    container.reason = reason;
    container.message = message;
    container.finishedAt = this.nowNs();
    const live = this.live.get(container.id);
    if (live) {
      for (const timer of live.timers) timer.cancel();
      live.timers = [];
      this.live.delete(container.id);
      live.markExited();
    }
    this.cpuSamples.delete(container.id);
    if (this.mode === 'simulated' && container.logPath && container.startedAt > 0) {
      const line = this.logRecords(`simulated container ${container.metadata.name ?? ''} exited with code ${exitCode}`);
      try {
        // Synchronously: the line is in before the stop or remove answers (the kubelet may delete the file next).
        appendFileSync(container.logPath, line);
      } catch {
        // best effort, as a real container's last output
      }
    }
    this.saveState();
    if (this.containers.get(container.id) === container) this.emit('CONTAINER_STOPPED_EVENT', container);
  }

  private async stopContainer(request: api.StopContainerRequest): Promise<api.StopContainerResponseInit> {
    this.getContainer(request.containerId);
    await this.stopContainerById(request.containerId, Number(request.timeout));
    return {};
  }

  /** Stops a running container: SIGTERM, SIGKILL after timeoutSeconds (0: at once). No-op unless running. */
  private async stopContainerById(id: string, timeoutSeconds: number): Promise<void> {
    const container = this.containers.get(id);
    const live = this.live.get(id);
    if (!container || !live || container.state !== 'CONTAINER_RUNNING') return;
    const graceMs = Math.max(0, timeoutSeconds) * 1000;
    if (live.proc) {
      if (graceMs === 0) {
        live.proc.signal('SIGKILL');
      } else {
        live.proc.signal('SIGTERM');
        const proc = live.proc;
        live.timers.push(this.clock.setTimeout(() => proc.signal('SIGKILL'), graceMs));
      }
    } else if (!live.stopping || graceMs === 0) {
      // Simulated: the container takes stopDelayMs to exit, or is killed at the timeout.
      live.stopping = true;
      const graceful = this.sim.stopDelayMs <= graceMs;
      const delay = graceful ? this.sim.stopDelayMs : graceMs;
      const finish = (): void => this.finishContainer(container, graceful ? 0 : 137, graceful ? 'Completed' : 'Error', '');
      if (delay === 0) finish();
      else live.timers.push(this.clock.setTimeout(finish, delay));
    }
    await live.exited;
  }

  private async removeContainer(request: api.RemoveContainerRequest): Promise<api.RemoveContainerResponseInit> {
    await this.removeContainerById(request.containerId);
    return {};
  }

  private async removeContainerById(id: string): Promise<void> {
    const container = this.containers.get(id);
    if (!container) return;
    if (this.live.has(id)) await this.stopContainerById(id, 0);
    if (this.containers.get(id) !== container) return;
    this.containers.delete(id);
    if (this.containerNames.get(container.nameKey) === id) this.containerNames.delete(container.nameKey);
    this.sandboxContainers.get(container.sandboxId)?.delete(id);
    this.cpuSamples.delete(id);
    this.saveState();
    this.emit('CONTAINER_DELETED_EVENT', container);
  }

  private listContainers(request: api.ListContainersRequest): api.ListContainersResponseInit {
    const filter = request.filter;
    let candidates: Iterable<ContainerRecord>;
    if (filter?.id) {
      const found = this.containers.get(filter.id);
      candidates = found ? [found] : [];
    } else if (filter?.podSandboxId) {
      const ids = this.sandboxContainers.get(filter.podSandboxId) ?? new Set<string>();
      candidates = [...ids].map((id) => this.containers.get(id)).filter((c): c is ContainerRecord => c !== undefined);
    } else {
      candidates = this.containers.values();
    }
    const containers: api.ContainerInit[] = [];
    for (const container of candidates) {
      if (filter?.podSandboxId && container.sandboxId !== filter.podSandboxId) continue;
      if (filter?.state && container.state !== filter.state.state) continue;
      if (!matchesLabels(container.labels, filter?.labelSelector)) continue;
      containers.push({
        id: container.id,
        podSandboxId: container.sandboxId,
        metadata: container.metadata,
        image: container.image,
        imageRef: container.imageRef,
        imageId: container.imageRef,
        state: container.state,
        createdAt: container.createdAt,
        labels: container.labels,
        annotations: container.annotations,
      });
    }
    return { containers };
  }

  private containerStatusResponse(request: api.ContainerStatusRequest): api.ContainerStatusResponseInit {
    const container = this.getContainer(request.containerId);
    const info: Record<string, string> = {};
    if (request.verbose) {
      info.info = JSON.stringify({ pid: container.pid ?? 0, command: container.command, args: container.args, mode: this.mode });
    }
    return { status: this.containerStatus(container), info };
  }

  private containerStatus(container: ContainerRecord): api.ContainerStatusInit {
    return {
      id: container.id,
      metadata: container.metadata,
      state: container.state,
      createdAt: container.createdAt,
      startedAt: container.startedAt,
      finishedAt: container.finishedAt,
      exitCode: container.exitCode,
      image: container.image,
      imageRef: container.imageRef,
      imageId: container.imageRef,
      reason: container.reason,
      message: container.message,
      labels: container.labels,
      annotations: container.annotations,
      mounts: container.mounts,
      logPath: container.logPath,
      resources: container.resources ? { linux: container.resources } : null,
    };
  }

  private updateContainerResources(request: api.UpdateContainerResourcesRequest): api.UpdateContainerResourcesResponseInit {
    const container = this.getContainer(request.containerId);
    if (request.linux) container.resources = { ...request.linux };
    this.saveState();
    return {};
  }

  private async reopenContainerLog(request: api.ReopenContainerLogRequest): Promise<api.ReopenContainerLogResponseInit> {
    const container = this.getContainer(request.containerId);
    if (container.state !== 'CONTAINER_RUNNING') {
      throw failedPrecondition(`container ${JSON.stringify(container.id)} is not running: cannot reopen its log`);
    }
    await this.live.get(container.id)?.log?.reopen();
    return {};
  }

  private async execSync(request: api.ExecSyncRequest): Promise<api.ExecSyncResponseInit> {
    const container = this.getContainer(request.containerId);
    if (container.state !== 'CONTAINER_RUNNING') {
      throw failedPrecondition(`container ${JSON.stringify(container.id)} is in ${container.state} state: cannot exec in it`);
    }
    if (request.cmd.length === 0) throw invalidArgument('exec command must not be empty');
    if (this.mode === 'simulated') return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
    const sandbox = this.getSandbox(container.sandboxId);
    const timeoutSeconds = Number(request.timeout);
    const result = await execCommand({
      cmd: request.cmd,
      cwd: existsSync(container.workingDir || sandbox.dir) ? container.workingDir || sandbox.dir : this.rootDir,
      env: this.containerEnv(container, sandbox),
      timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : 0,
      maxOutputBytes: MAX_EXEC_OUTPUT_BYTES,
      setTimer: (fn, ms) => this.clock.setTimeout(fn, ms),
      onSpawn: (kill) => {
        this.execKills.add(kill);
        return () => this.execKills.delete(kill);
      },
    });
    if (result.timedOut) {
      throw new RuntimeError(
        'DeadlineExceeded',
        `failed to exec in container: timeout ${timeoutSeconds}s exceeded: command ${JSON.stringify(request.cmd.join(' '))} killed`,
      );
    }
    return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode };
  }

  // ---------------------------------------------------------------------------------------------
  // Streaming (exec, attach)

  /** The streaming server, started (and its module loaded) on first use. */
  private streamingServer(): Promise<StreamingServer> {
    if (!this.streamingStart) {
      const starting = (async () => {
        const { StreamingServer } = await import('./streaming.js');
        const server = new StreamingServer({
          runtime: {
            exec: (id, cmd, io) => this.streamExec(id, cmd, io),
            attach: (id, io) => this.streamAttach(id, io),
            portForward: (id, port, stream) => this.streamPortForward(id, port, stream),
          },
          clock: this.clock,
          logger: this.logger,
        });
        await server.start();
        return server;
      })();
      this.streamingStart = starting;
      starting.catch(() => {
        if (this.streamingStart === starting) this.streamingStart = undefined;
      });
    }
    return this.streamingStart;
  }

  /** Exec and Attach: only a running container (as containerd), then the streaming server's one-time URL. */
  private runningContainer(id: string, what: string): ContainerRecord {
    const container = this.getContainer(id);
    if (container.state !== 'CONTAINER_RUNNING') {
      throw failedPrecondition(`container ${JSON.stringify(container.id)} is in ${container.state} state: cannot ${what} it`);
    }
    return container;
  }

  private async exec(request: api.ExecRequest): Promise<api.ExecResponseInit> {
    this.runningContainer(request.containerId, 'exec in');
    if (request.cmd.length === 0) throw invalidArgument('exec command must not be empty');
    return { url: (await this.streamingServer()).getExec(request) };
  }

  private async attach(request: api.AttachRequest): Promise<api.AttachResponseInit> {
    this.runningContainer(request.containerId, 'attach to');
    return { url: (await this.streamingServer()).getAttach(request) };
  }

  private async portForward(request: api.PortForwardRequest): Promise<api.PortForwardResponseInit> {
    const sandbox = this.getSandbox(request.podSandboxId);
    if (sandbox.state !== 'SANDBOX_READY') throw failedPrecondition(`sandbox ${JSON.stringify(sandbox.id)} is not running`);
    return { url: (await this.streamingServer()).getPortForward(request) };
  }

  /**
   * One forwarded connection. Process mode: pods share the host's network, so it is a TCP connection to
   * 127.0.0.1:<port>, copied both ways until the pod's side closes. Simulated mode: nothing listens (refused).
   */
  private streamPortForward(podSandboxId: string, port: number, stream: PortForwardStream): Promise<void> {
    const sandbox = this.sandboxes.get(podSandboxId);
    if (!sandbox || sandbox.state !== 'SANDBOX_READY') throw new Error(`sandbox ${JSON.stringify(podSandboxId)} is not running`);
    const refused = (reason: string): Error =>
      new Error(`failed to connect to localhost:${port} inside namespace ${JSON.stringify(podSandboxId)}: ${reason}`);
    if (this.mode === 'simulated') return Promise.reject(refused('connection refused: a simulated pod has no processes listening'));
    return new Promise<void>((resolvePromise, reject) => {
      const socket = connect({ host: '127.0.0.1', port });
      let connected = false;
      const onAbort = (): void => {
        socket.destroy();
      };
      stream.signal.addEventListener('abort', onAbort, { once: true });
      socket.once('connect', () => {
        connected = true;
        stream.input.pipe(socket);
      });
      socket.on('data', (chunk: Buffer) => stream.write(chunk));
      socket.once('error', (error: NodeJS.ErrnoException) => {
        if (!connected) reject(refused(`dial tcp4 127.0.0.1:${port}: connect: ${error.code === 'ECONNREFUSED' ? 'connection refused' : error.message}`));
      });
      socket.once('close', () => {
        stream.signal.removeEventListener('abort', onAbort);
        stream.input.unpipe(socket);
        stream.input.resume();
        resolvePromise();
      });
    });
  }

  /** A streaming exec session: the command runs now (simulated: the README's tiny interpreter). */
  private streamExec(containerId: string, cmd: string[], io: StreamingIO): Promise<number> {
    const container = this.containers.get(containerId);
    if (!container || container.state !== 'CONTAINER_RUNNING') {
      throw new Error(`failed to exec in container: container ${JSON.stringify(containerId)} is ${container ? `in ${container.state} state` : 'not found'}`);
    }
    const sandbox = this.getSandbox(container.sandboxId);
    if (this.mode === 'simulated') {
      const hostname = sandbox.hostname || (sandbox.metadata.name ?? '');
      const env: [string, string][] = [['PATH', DEFAULT_PATH], ['HOSTNAME', hostname], ...container.envs.map(({ key, value }): [string, string] => [key, value])];
      return runSimulatedCommand(cmd, { hostname, env }, io);
    }
    return runProcessExec({
      cmd,
      cwd: existsSync(container.workingDir || sandbox.dir) ? container.workingDir || sandbox.dir : this.rootDir,
      env: this.containerEnv(container, sandbox),
      io,
      onSpawn: (kill) => {
        this.execKills.add(kill);
        return () => this.execKills.delete(kill);
      },
    });
  }

  /**
   * A streaming attach session: the container's output from now until it exits or the client goes away (process
   * mode; a simulated container writes nothing). The container's stdin is not open: the client's input is dropped.
   */
  private async streamAttach(containerId: string, io: StreamingIO): Promise<void> {
    const container = this.containers.get(containerId);
    const live = this.live.get(containerId);
    if (!container || container.state !== 'CONTAINER_RUNNING' || !live) {
      throw new Error(`container ${JSON.stringify(containerId)} is ${container ? `in ${container.state} state` : 'not found'}`);
    }
    io.stdin?.resume();
    const stderr = io.stderr ?? (io.tty ? io.stdout : undefined);
    const unsubscribe = live.proc?.onOutput((stream, chunk) => (stream === 'stdout' ? io.stdout : stderr)?.(chunk));
    try {
      if (io.signal.aborted) return;
      await Promise.race([live.exited, new Promise((resolve) => io.signal.addEventListener('abort', resolve, { once: true }))]);
    } finally {
      unsubscribe?.();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Simulation

  /** CRI log records (stdout, one per line) of `text`, stamped now. */
  private logRecords(text: string): string {
    const now = this.clock.now();
    let out = '';
    const splitter = new LineSplitter((tag, line) => (out += formatCriLogLine(now, 'stdout', tag, line)));
    splitter.push(Buffer.from(text.endsWith('\n') ? text : `${text}\n`));
    splitter.end();
    return out;
  }

  /**
   * Simulated mode: the result of a container's readiness, liveness or startup probe, as its pod's
   * `simulated.kubelet-ts.io/<type>` annotation says (`success` by default), whatever the probe's handler. A
   * container that is unknown or not running fails. `containerId` may carry the kubelet's `<runtime>://` prefix.
   */
  simulatedProbeResult(containerId: string, type: SimulatedProbeType): SimulatedProbeResult {
    const scheme = containerId.indexOf('://');
    const container = this.containers.get(scheme >= 0 ? containerId.slice(scheme + 3) : containerId);
    if (!container || container.state !== 'CONTAINER_RUNNING') return 'failure';
    const behaviour = this.simOf(container)[type];
    if (!behaviour) return 'failure';
    return probeResult(behaviour, this.clock.now() - container.startedAt / 1e6);
  }

  /**
   * Simulated mode: the usage of all running containers together (CPU time used so far, CPU rate, working set), for
   * the node's own stats (so eviction sees memory pressure). Zero in process mode.
   */
  simulatedUsage(): { cpuUsageCoreNanoSeconds: number; cpuNanoCores: number; memoryWorkingSetBytes: number } {
    let cpuUsageCoreNanoSeconds = 0;
    let cpuNanoCores = 0;
    let memoryWorkingSetBytes = 0;
    if (this.mode !== 'simulated') return { cpuUsageCoreNanoSeconds, cpuNanoCores, memoryWorkingSetBytes };
    const now = this.nowNs();
    for (const id of this.live.keys()) {
      const container = this.containers.get(id);
      if (!container || container.state !== 'CONTAINER_RUNNING') continue;
      const usage = this.simulatedUsageOf(container, now);
      cpuUsageCoreNanoSeconds += usage.cpuNanos;
      cpuNanoCores += usage.nanoCores;
      memoryWorkingSetBytes += usage.memoryBytes;
    }
    return { cpuUsageCoreNanoSeconds, cpuNanoCores, memoryWorkingSetBytes };
  }

  /**
   * PullImage. Simulated: the image's size from the pod's `simulated.kubelet-ts.io/image-size` (else 5 to 200 MiB
   * from its name), and the pull takes size / imagePullBytesPerSecond on the clock; concurrent pulls of one image
   * share it.
   */
  private async pullImage(request: api.PullImageRequest): Promise<string> {
    const image = request.image?.image ?? '';
    if (this.mode !== 'simulated') return this.images.pull(image);
    const normalized = this.images.pullable(image);
    const pulled = this.images.pulledId(normalized);
    if (pulled) return pulled;
    const inFlight = this.pulls.get(normalized);
    if (inFlight) return inFlight;
    const metadata = request.sandboxConfig?.metadata;
    const pod = metadata ? `${metadata.namespace}/${metadata.name}` : '';
    const size = annotatedImageSize(request.sandboxConfig?.annotations, pod, this.logger) ?? defaultImageSize(normalized);
    const bandwidth = this.sim.imagePullBytesPerSecond;
    if (bandwidth <= 0) return this.images.pull(image, size);
    const pull = (async () => {
      try {
        await this.clock.sleep((size / bandwidth) * 1000);
        if (this.stopping) throw new RuntimeError('Unavailable', 'the local runtime is shutting down');
        return this.images.pull(image, size);
      } finally {
        this.pulls.delete(normalized);
      }
    })();
    this.pulls.set(normalized, pull);
    return pull;
  }

  // ---------------------------------------------------------------------------------------------
  // Stats

  private usageOf(containers: ContainerRecord[]): Map<number, GroupUsage> {
    if (this.mode !== 'process') return new Map();
    const pgids: number[] = [];
    for (const container of containers) {
      if (container.state === 'CONTAINER_RUNNING' && container.pid) pgids.push(container.pid);
    }
    return readGroupUsage(pgids);
  }

  /**
   * A simulated container's usage at `nowNs`: while running, its CPU rate and working set, the CPU time
   * accumulating from its start; once exited, the CPU time it used and nothing else. Computed on read: no timers.
   */
  private simulatedUsageOf(container: ContainerRecord, nowNs: number): { cpuNanos: number; nanoCores: number; memoryBytes: number } {
    if (container.startedAt === 0) return { cpuNanos: 0, nanoCores: 0, memoryBytes: 0 };
    const sim = this.simOf(container);
    const running = container.state === 'CONTAINER_RUNNING';
    const endNs = running ? nowNs : container.finishedAt;
    const cpuNanos = Math.round((sim.cpuNanoCores * Math.max(0, endNs - container.startedAt)) / 1e9);
    return running ? { cpuNanos, nanoCores: sim.cpuNanoCores, memoryBytes: sim.memoryBytes } : { cpuNanos, nanoCores: 0, memoryBytes: 0 };
  }

  private containerStats(container: ContainerRecord, usage: Map<number, GroupUsage>, now: number): api.ContainerStatsInit {
    let cpuNanos: number;
    let rss: number;
    let nanoCores = 0;
    if (this.mode === 'simulated') {
      const simulated = this.simulatedUsageOf(container, now);
      cpuNanos = simulated.cpuNanos;
      rss = simulated.memoryBytes;
      nanoCores = simulated.nanoCores;
    } else {
      const group = container.state === 'CONTAINER_RUNNING' && container.pid ? usage.get(container.pid) : undefined;
      cpuNanos = Math.round(group?.cpuNanos ?? 0);
      rss = group?.rssBytes ?? 0;
      const previous = this.cpuSamples.get(container.id);
      if (previous && now > previous.at) nanoCores = Math.round(((cpuNanos - previous.cpuNanos) / (now - previous.at)) * 1e9);
      if (group) this.cpuSamples.set(container.id, { at: now, cpuNanos });
    }
    return {
      attributes: {
        id: container.id,
        metadata: container.metadata,
        labels: container.labels,
        annotations: container.annotations,
      },
      cpu: { timestamp: now, usageCoreNanoSeconds: { value: cpuNanos }, usageNanoCores: { value: Math.max(0, nanoCores) } },
      memory: {
        timestamp: now,
        workingSetBytes: { value: rss },
        usageBytes: { value: rss },
        rssBytes: { value: rss },
        pageFaults: { value: 0 },
        majorPageFaults: { value: 0 },
      },
      writableLayer: {
        timestamp: now,
        fsId: { mountpoint: this.rootDir },
        usedBytes: { value: 0 },
        inodesUsed: { value: 0 },
      },
    };
  }

  private containerStatsResponse(request: api.ContainerStatsRequest): api.ContainerStatsResponseInit {
    const container = this.getContainer(request.containerId);
    return { stats: this.containerStats(container, this.usageOf([container]), this.nowNs()) };
  }

  private listContainerStats(request: api.ListContainerStatsRequest): api.ListContainerStatsResponseInit {
    const filter = request.filter;
    const selected: ContainerRecord[] = [];
    for (const container of this.containers.values()) {
      if (filter?.id && container.id !== filter.id) continue;
      if (filter?.podSandboxId && container.sandboxId !== filter.podSandboxId) continue;
      if (!matchesLabels(container.labels, filter?.labelSelector)) continue;
      // Like containerd: stats only for containers that are running.
      if (container.state !== 'CONTAINER_RUNNING') continue;
      selected.push(container);
    }
    const usage = this.usageOf(selected);
    const now = this.nowNs();
    return { stats: selected.map((container) => this.containerStats(container, usage, now)) };
  }

  private sandboxStats(sandbox: SandboxRecord, usage: Map<number, GroupUsage>, now: number): api.PodSandboxStatsInit {
    const containers: api.ContainerStatsInit[] = [];
    let cpu = 0;
    let nanoCores = 0;
    let memory = 0;
    let processes = 0;
    for (const id of this.sandboxContainers.get(sandbox.id) ?? []) {
      const container = this.containers.get(id);
      if (!container || container.state !== 'CONTAINER_RUNNING') continue;
      const stats = this.containerStats(container, usage, now);
      containers.push(stats);
      cpu += Number(stats.cpu?.usageCoreNanoSeconds?.value ?? 0);
      nanoCores += Number(stats.cpu?.usageNanoCores?.value ?? 0);
      memory += Number(stats.memory?.workingSetBytes?.value ?? 0);
      if (this.mode === 'simulated') processes++;
      else processes += container.pid ? (usage.get(container.pid)?.processes ?? 0) : 0;
    }
    return {
      attributes: { id: sandbox.id, metadata: sandbox.metadata, labels: sandbox.labels, annotations: sandbox.annotations },
      linux: {
        cpu: { timestamp: now, usageCoreNanoSeconds: { value: cpu }, usageNanoCores: { value: nanoCores } },
        memory: {
          timestamp: now,
          workingSetBytes: { value: memory },
          usageBytes: { value: memory },
          rssBytes: { value: memory },
          pageFaults: { value: 0 },
          majorPageFaults: { value: 0 },
        },
        network: { timestamp: now, defaultInterface: null, interfaces: [] },
        process: { timestamp: now, processCount: { value: processes } },
        containers,
      },
    };
  }

  private containersOfSandboxes(sandboxes: SandboxRecord[]): ContainerRecord[] {
    const result: ContainerRecord[] = [];
    for (const sandbox of sandboxes) {
      for (const id of this.sandboxContainers.get(sandbox.id) ?? []) {
        const container = this.containers.get(id);
        if (container) result.push(container);
      }
    }
    return result;
  }

  private podSandboxStatsResponse(request: api.PodSandboxStatsRequest): api.PodSandboxStatsResponseInit {
    const sandbox = this.getSandbox(request.podSandboxId);
    const usage = this.usageOf(this.containersOfSandboxes([sandbox]));
    return { stats: this.sandboxStats(sandbox, usage, this.nowNs()) };
  }

  private listPodSandboxStats(request: api.ListPodSandboxStatsRequest): api.ListPodSandboxStatsResponseInit {
    const filter = request.filter;
    const selected: SandboxRecord[] = [];
    for (const sandbox of this.sandboxes.values()) {
      if (filter?.id && sandbox.id !== filter.id) continue;
      if (!matchesLabels(sandbox.labels, filter?.labelSelector)) continue;
      // Like containerd: stats only for ready sandboxes.
      if (sandbox.state !== 'SANDBOX_READY') continue;
      selected.push(sandbox);
    }
    const usage = this.usageOf(this.containersOfSandboxes(selected));
    const now = this.nowNs();
    return { stats: selected.map((sandbox) => this.sandboxStats(sandbox, usage, now)) };
  }

  // ---------------------------------------------------------------------------------------------
  // Runtime

  private version(): api.VersionResponseInit {
    return {
      version: '0.1.0',
      runtimeName: LOCAL_RUNTIME_NAME,
      runtimeVersion: LOCAL_RUNTIME_VERSION,
      runtimeApiVersion: CRI_API_VERSION,
    };
  }

  private status(request: api.StatusRequest): api.StatusResponseInit {
    const condition = (type: string): api.RuntimeConditionInit => ({ type, status: true, reason: '', message: '' });
    return {
      status: { conditions: [condition('RuntimeReady'), condition('NetworkReady')] },
      info: request.verbose
        ? { config: JSON.stringify({ mode: this.mode, rootDir: this.rootDir, podCidr: this.podCidr }) }
        : {},
      runtimeHandlers: [{ name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: false } }],
      features: { supplementalGroupsPolicy: false },
    };
  }

  private updateRuntimeConfig(request: api.UpdateRuntimeConfigRequest): api.UpdateRuntimeConfigResponseInit {
    const cidr = request.runtimeConfig?.networkConfig?.podCidr ?? '';
    if (cidr !== '' && cidr !== this.podCidr) {
      this.podCidr = cidr;
      if (this.mode === 'simulated') this.usePodCIDR(cidr);
      this.logger.info('Pod CIDR updated', { podCIDR: cidr });
      this.saveState();
    }
    return {};
  }

  // ---------------------------------------------------------------------------------------------
  // Images

  private imageFsInfo(): api.ImageFsInfoResponseInit {
    const now = this.nowNs();
    let usedBytes = 0;
    let inodesUsed = 0;
    if (this.mode === 'simulated') {
      // The simulated images: what image GC weighs against the image filesystem's capacity.
      const images = this.images.usage();
      const usage: api.FilesystemUsageInit = {
        timestamp: now,
        fsId: { mountpoint: this.rootDir },
        usedBytes: { value: images.bytes },
        inodesUsed: { value: images.count },
      };
      return { imageFilesystems: [usage], containerFilesystems: [usage] };
    }
    try {
      const fs = statfsSync(this.rootDir);
      usedBytes = (fs.blocks - fs.bfree) * fs.bsize;
      inodesUsed = Math.max(0, fs.files - fs.ffree);
    } catch {
      // statfs unsupported: report zero
    }
    const usage: api.FilesystemUsageInit = {
      timestamp: now,
      fsId: { mountpoint: this.rootDir },
      usedBytes: { value: usedBytes },
      inodesUsed: { value: inodesUsed },
    };
    return { imageFilesystems: [usage], containerFilesystems: [usage] };
  }

  // ---------------------------------------------------------------------------------------------
  // Events

  private subscribe(call: EventStream): void {
    if (this.stopping || !this.serving) {
      call.end();
      return;
    }
    this.streams.add(call);
    const remove = (): void => {
      this.streams.delete(call);
    };
    call.on('cancelled', remove);
    call.on('close', remove);
    call.on('error', remove);
  }

  private emit(type: api.ContainerEventType, container: ContainerRecord): void {
    if (this.streams.size === 0) return;
    const sandbox = this.sandboxes.get(container.sandboxId);
    const event: api.ContainerEventResponseInit = {
      containerId: container.id,
      containerEventType: type,
      createdAt: this.nowNs(),
      podSandboxStatus: sandbox ? this.sandboxStatus(sandbox) : null,
      containersStatuses: this.containerStatusesOf(container.sandboxId),
    };
    for (const stream of this.streams) {
      if (stream.writableLength >= this.maxEventBacklog) {
        this.droppedEventCount++;
        continue;
      }
      stream.write(event);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // gRPC wiring

  private unary<Req, Res>(rpc: string, fn: (request: Req) => Res | Promise<Res>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      let result: Promise<Res>;
      try {
        // A stopped runtime answers nothing more (over the socket grpc-js refuses the connection; in process, this).
        if (this.stopping) throw new RuntimeError('Unavailable', `the local runtime at ${this.endpoint} is stopped`);
        result = Promise.resolve(fn(call.request));
      } catch (error) {
        result = Promise.reject(error);
      }
      result.then(
        (response) => callback(null, response),
        (error: unknown) => {
          const runtimeError =
            error instanceof RuntimeError ? error : new RuntimeError('Unknown', error instanceof Error ? error.message : String(error));
          const log = this.logger.v(2);
          if (log.enabled) log.info('CRI call failed', { rpc, code: runtimeError.code, err: runtimeError.message });
          callback({ code: grpcStatusFor(runtimeError.code), details: runtimeError.message });
        },
      );
    };
  }

  private runtimeHandlers(): grpc.UntypedServiceImplementation {
    return {
      Version: this.unary('Version', () => this.version()),
      RunPodSandbox: this.unary('RunPodSandbox', (r: api.RunPodSandboxRequest) => this.runPodSandbox(r)),
      StopPodSandbox: this.unary('StopPodSandbox', (r: api.StopPodSandboxRequest) => this.stopPodSandbox(r)),
      RemovePodSandbox: this.unary('RemovePodSandbox', (r: api.RemovePodSandboxRequest) => this.removePodSandbox(r)),
      PodSandboxStatus: this.unary('PodSandboxStatus', (r: api.PodSandboxStatusRequest) => this.podSandboxStatus(r)),
      ListPodSandbox: this.unary('ListPodSandbox', (r: api.ListPodSandboxRequest) => this.listPodSandbox(r)),
      CreateContainer: this.unary('CreateContainer', (r: api.CreateContainerRequest) => this.createContainer(r)),
      StartContainer: this.unary('StartContainer', (r: api.StartContainerRequest) => this.startContainer(r)),
      StopContainer: this.unary('StopContainer', (r: api.StopContainerRequest) => this.stopContainer(r)),
      RemoveContainer: this.unary('RemoveContainer', (r: api.RemoveContainerRequest) => this.removeContainer(r)),
      ListContainers: this.unary('ListContainers', (r: api.ListContainersRequest) => this.listContainers(r)),
      ContainerStatus: this.unary('ContainerStatus', (r: api.ContainerStatusRequest) => this.containerStatusResponse(r)),
      UpdateContainerResources: this.unary('UpdateContainerResources', (r: api.UpdateContainerResourcesRequest) =>
        this.updateContainerResources(r),
      ),
      ReopenContainerLog: this.unary('ReopenContainerLog', (r: api.ReopenContainerLogRequest) => this.reopenContainerLog(r)),
      ExecSync: this.unary('ExecSync', (r: api.ExecSyncRequest) => this.execSync(r)),
      Exec: this.unary('Exec', (r: api.ExecRequest) => this.exec(r)),
      Attach: this.unary('Attach', (r: api.AttachRequest) => this.attach(r)),
      PortForward: this.unary('PortForward', (r: api.PortForwardRequest) => this.portForward(r)),
      ContainerStats: this.unary('ContainerStats', (r: api.ContainerStatsRequest) => this.containerStatsResponse(r)),
      ListContainerStats: this.unary('ListContainerStats', (r: api.ListContainerStatsRequest) => this.listContainerStats(r)),
      PodSandboxStats: this.unary('PodSandboxStats', (r: api.PodSandboxStatsRequest) => this.podSandboxStatsResponse(r)),
      ListPodSandboxStats: this.unary('ListPodSandboxStats', (r: api.ListPodSandboxStatsRequest) => this.listPodSandboxStats(r)),
      UpdateRuntimeConfig: this.unary('UpdateRuntimeConfig', (r: api.UpdateRuntimeConfigRequest) => this.updateRuntimeConfig(r)),
      Status: this.unary('Status', (r: api.StatusRequest) => this.status(r)),
      GetContainerEvents: (call: EventStream) => this.subscribe(call),
    };
  }

  private imageHandlers(): grpc.UntypedServiceImplementation {
    return {
      ListImages: this.unary('ListImages', (r: api.ListImagesRequest) => ({ images: this.images.list(r.filter?.image?.image) })),
      ImageStatus: this.unary('ImageStatus', (r: api.ImageStatusRequest) => ({
        image: this.images.status(r.image?.image ?? ''),
        info: {},
      })),
      PullImage: this.unary('PullImage', async (r: api.PullImageRequest) => ({ imageRef: await this.pullImage(r) })),
      RemoveImage: this.unary('RemoveImage', (r: api.RemoveImageRequest) => {
        this.images.remove(r.image?.image ?? '');
        return {};
      }),
      ImageFsInfo: this.unary('ImageFsInfo', () => this.imageFsInfo()),
    };
  }
}

let definitions: ReturnType<ReturnType<typeof criCodec>['serviceDefinitions']> | undefined;

/** The CRI service definitions with the generated codec, once per process (every in-process runtime shares them). */
function criServiceDefinitions(): ReturnType<ReturnType<typeof criCodec>['serviceDefinitions']> {
  definitions ??= criCodec().serviceDefinitions();
  return definitions;
}

