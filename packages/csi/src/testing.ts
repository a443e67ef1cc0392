// Test doubles of this package, published as `@kubelet-ts/csi/testing`: a scripted CsiNodeClient, a driver lookup
// holding such clients, an in-memory NodeInfoApi, and FakeCsiDriverServer, a real gRPC CSI driver (Identity +
// Node) with its registration socket, for tests of the plugin watcher and the client over unix sockets; and, for
// running CsiVolumePlugin without the volume manager, fakeVolumeHost with the volume manager's FakeMounter.
import { mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type { V1CSINode, V1Node } from '@kubernetes/client-node';
import { defaultLogger, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { FakeApiError } from '@kubelet-ts/core/testing';
import type { Mounter, VolumeHost } from '@kubelet-ts/volume-manager';
import { FakeApiObjects, FakeMounter } from '@kubelet-ts/volume-manager/testing';
import { CsiCallError, GrpcCode } from './errors.js';
import { driverNotFoundError } from './registry.js';
import { CSI_PLUGIN_TYPE, grpcJs, loadCsiPackage, loadPluginRegistrationPackage, unixTarget, type RegistrationStatus } from './proto.js';
import type { NodeInfoApi } from './node-info.js';
import type {
  CsiDriverLookup,
  CsiNodeCapability,
  CsiNodeClient,
  NodeExpandVolumeRequest,
  NodeGetInfoResponse,
  NodeGetVolumeStatsRequest,
  NodeGetVolumeStatsResponse,
  NodePublishVolumeRequest,
  NodeStageVolumeRequest,
  NodeUnpublishVolumeRequest,
  NodeUnstageVolumeRequest,
} from './types.js';

/** The methods of CsiNodeClient that call the driver. */
export type CsiNodeMethod =
  | 'nodeGetInfo'
  | 'nodeGetCapabilities'
  | 'nodeStageVolume'
  | 'nodeUnstageVolume'
  | 'nodePublishVolume'
  | 'nodeUnpublishVolume'
  | 'nodeGetVolumeStats'
  | 'nodeExpandVolume';

/** One call a fake received: the method and its request (undefined for the requestless ones). */
export interface RecordedCsiCall {
  method: CsiNodeMethod;
  request: unknown;
}

interface ScriptedFailure {
  code: number;
  details: string;
  times: number;
}

/**
 * A CsiNodeClient that records its calls and answers from its fields (nodeInfo, capabilities, volumeStats,
 * expandedCapacityBytes); failOn() makes calls reject with a CsiCallError, respond() scripts a method, hang()
 * leaves calls pending until their signal aborts.
 */
export class FakeCsiNodeClient implements CsiNodeClient {
  readonly calls: RecordedCsiCall[] = [];
  nodeInfo: NodeGetInfoResponse = { nodeId: 'fake-node', maxVolumesPerNode: 0 };
  capabilities: CsiNodeCapability[] = ['STAGE_UNSTAGE_VOLUME'];
  volumeStats: NodeGetVolumeStatsResponse = { usage: [] };
  /** NodeExpandVolume's answer; default the request's requiredBytes. */
  expandedCapacityBytes?: number;
  closed = false;
  private readonly failures = new Map<CsiNodeMethod, ScriptedFailure>();
  private readonly responders = new Map<CsiNodeMethod, (request: unknown) => unknown>();
  private readonly hung = new Set<CsiNodeMethod>();

  /** The next `times` calls of method (default 1; Infinity: every call) reject with `rpc error: code = ...`. */
  failOn(method: CsiNodeMethod, code: number, details: string, times = 1): this {
    this.failures.set(method, { code, details, times });
    return this;
  }

  /** Answers method with fn(request) (a throw or rejection is the call's error). */
  respond(method: CsiNodeMethod, fn: (request: unknown) => unknown): this {
    this.responders.set(method, fn);
    return this;
  }

  /** Calls of method stay pending until their AbortSignal aborts (then reject with Canceled). */
  hang(method: CsiNodeMethod, on = true): this {
    if (on) this.hung.add(method);
    else this.hung.delete(method);
    return this;
  }

  /** The requests of one method, in order. */
  callsOf(method: CsiNodeMethod): unknown[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  /** The methods called, in order. */
  methods(): CsiNodeMethod[] {
    return this.calls.map((c) => c.method);
  }

  nodeGetInfo(signal?: AbortSignal): Promise<NodeGetInfoResponse> {
    return this.handle('nodeGetInfo', undefined, signal, () => structuredClone(this.nodeInfo));
  }

  nodeGetCapabilities(signal?: AbortSignal): Promise<CsiNodeCapability[]> {
    return this.handle('nodeGetCapabilities', undefined, signal, () => [...this.capabilities]);
  }

  nodeStageVolume(request: NodeStageVolumeRequest, signal?: AbortSignal): Promise<void> {
    return this.handle('nodeStageVolume', request, signal, () => undefined);
  }

  nodeUnstageVolume(request: NodeUnstageVolumeRequest, signal?: AbortSignal): Promise<void> {
    return this.handle('nodeUnstageVolume', request, signal, () => undefined);
  }

  nodePublishVolume(request: NodePublishVolumeRequest, signal?: AbortSignal): Promise<void> {
    return this.handle('nodePublishVolume', request, signal, () => undefined);
  }

  nodeUnpublishVolume(request: NodeUnpublishVolumeRequest, signal?: AbortSignal): Promise<void> {
    return this.handle('nodeUnpublishVolume', request, signal, () => undefined);
  }

  nodeGetVolumeStats(request: NodeGetVolumeStatsRequest, signal?: AbortSignal): Promise<NodeGetVolumeStatsResponse> {
    return this.handle('nodeGetVolumeStats', request, signal, () => structuredClone(this.volumeStats));
  }

  nodeExpandVolume(request: NodeExpandVolumeRequest, signal?: AbortSignal): Promise<{ capacityBytes: number }> {
    return this.handle('nodeExpandVolume', request, signal, () => ({ capacityBytes: this.expandedCapacityBytes ?? request.capacityRange?.requiredBytes ?? 0 }));
  }

  close(): void {
    this.closed = true;
  }

  private async handle<T>(method: CsiNodeMethod, request: unknown, signal: AbortSignal | undefined, answer: () => T): Promise<T> {
    this.calls.push({ method, request: request === undefined ? undefined : structuredClone(request) });
    if (this.closed) throw new CsiCallError(GrpcCode.Canceled, 'grpc: the client connection is closing');
    if (signal?.aborted) throw new CsiCallError(GrpcCode.Canceled, 'context canceled');
    const failure = this.failures.get(method);
    if (failure && failure.times > 0) {
      failure.times--;
      throw new CsiCallError(failure.code, failure.details);
    }
    if (this.hung.has(method)) {
      await new Promise<never>((_resolve, reject) => {
        const onAbort = (): void => reject(new CsiCallError(GrpcCode.Canceled, 'context canceled'));
        if (signal) signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    const responder = this.responders.get(method);
    if (responder) return (await responder(request)) as T;
    return answer();
  }
}

/** A CsiDriverLookup of FakeCsiNodeClients by driver name; client() throws Go's error for others. */
export class FakeCsiDriverLookup implements CsiDriverLookup {
  readonly clients = new Map<string, CsiNodeClient>();

  /** Registers a driver with the given client (default a new FakeCsiNodeClient), returned. */
  add<T extends CsiNodeClient = FakeCsiNodeClient>(driverName: string, client?: T): T {
    const c = client ?? (new FakeCsiNodeClient() as unknown as T);
    this.clients.set(driverName, c);
    return c;
  }

  remove(driverName: string): void {
    this.clients.delete(driverName);
  }

  has(driverName: string): boolean {
    return this.clients.has(driverName);
  }

  client(driverName: string): CsiNodeClient {
    const client = this.clients.get(driverName);
    if (!client) throw driverNotFoundError(driverName);
    return client;
  }
}

/** The NodeInfoApi operations, for FakeNodeInfoApi.failNext. */
export type NodeInfoApiOperation = keyof NodeInfoApi;

/** Merges a strategic-merge-style patch of maps: null deletes a key, objects merge, anything else replaces. */
function mergeMaps(target: Record<string, unknown>, patch: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete target[key];
    else if (typeof value === 'object' && !Array.isArray(value)) {
      const current = target[key];
      const next = typeof current === 'object' && current !== null && !Array.isArray(current) ? (current as Record<string, unknown>) : {};
      mergeMaps(next, value as Record<string, unknown>);
      target[key] = next;
    } else target[key] = value;
  }
}

/**
 * An in-memory NodeInfoApi: one Node (`node`) and the CSINodes, with resourceVersions (an update with a stale one
 * rejects with a 409 Conflict, as the API server does), every request recorded, and failNext() to script errors.
 */
export class FakeNodeInfoApi implements NodeInfoApi {
  node: V1Node;
  readonly csiNodes = new Map<string, V1CSINode>();
  readonly requests: Array<{ op: NodeInfoApiOperation; name: string; body?: unknown }> = [];
  private readonly failures: Array<{ op: NodeInfoApiOperation; err: unknown }> = [];
  private version = 1;

  constructor(node: V1Node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1', uid: 'node-uid-1' } }) {
    this.node = structuredClone(node);
    this.node.metadata ??= {};
    this.node.metadata.resourceVersion ??= String(this.version++);
  }

  /** The next call of op rejects with err (a FakeApiError, e.g. `conflict()`); several queue up in order. */
  failNext(op: NodeInfoApiOperation, err: unknown = FakeNodeInfoApi.conflict()): this {
    this.failures.push({ op, err });
    return this;
  }

  /** The API server's 409 for a stale update. */
  static conflict(kind = 'csinodes.storage.k8s.io', name = 'node-1'): FakeApiError {
    return new FakeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${kind} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
  }

  /** The operations requested, in order. */
  ops(): NodeInfoApiOperation[] {
    return this.requests.map((r) => r.op);
  }

  getNode(name: string): Promise<V1Node> {
    return this.serve('getNode', name, undefined, () => {
      if (this.node.metadata?.name !== name) throw new FakeApiError(404, 'NotFound', `nodes "${name}" not found`);
      return structuredClone(this.node);
    });
  }

  patchNode(name: string, patch: object): Promise<void> {
    return this.serve('patchNode', name, patch, () => this.applyNodePatch(name, patch));
  }

  patchNodeStatus(name: string, patch: object): Promise<void> {
    return this.serve('patchNodeStatus', name, patch, () => this.applyNodePatch(name, patch));
  }

  getCSINode(name: string): Promise<V1CSINode | undefined> {
    return this.serve('getCSINode', name, undefined, () => {
      const csiNode = this.csiNodes.get(name);
      return csiNode && structuredClone(csiNode);
    });
  }

  createCSINode(csiNode: V1CSINode): Promise<V1CSINode> {
    const name = csiNode.metadata?.name ?? '';
    return this.serve('createCSINode', name, csiNode, () => {
      if (this.csiNodes.has(name)) throw new FakeApiError(409, 'AlreadyExists', `csinodes.storage.k8s.io "${name}" already exists`);
      const stored = structuredClone(csiNode);
      stored.metadata = { ...(stored.metadata ?? {}), resourceVersion: String(this.version++), uid: `csinode-uid-${name}` };
      this.csiNodes.set(name, stored);
      return structuredClone(stored);
    });
  }

  updateCSINode(csiNode: V1CSINode): Promise<V1CSINode> {
    const name = csiNode.metadata?.name ?? '';
    return this.serve('updateCSINode', name, csiNode, () => {
      const existing = this.csiNodes.get(name);
      if (!existing) throw new FakeApiError(404, 'NotFound', `csinodes.storage.k8s.io "${name}" not found`);
      const rv = csiNode.metadata?.resourceVersion;
      if (rv !== undefined && rv !== existing.metadata?.resourceVersion) throw FakeNodeInfoApi.conflict('csinodes.storage.k8s.io', name);
      const stored = structuredClone(csiNode);
      stored.metadata = { ...(stored.metadata ?? {}), resourceVersion: String(this.version++) };
      this.csiNodes.set(name, stored);
      return structuredClone(stored);
    });
  }

  private applyNodePatch(name: string, patch: object): void {
    if (this.node.metadata?.name !== name) throw new FakeApiError(404, 'NotFound', `nodes "${name}" not found`);
    mergeMaps(this.node as unknown as Record<string, unknown>, structuredClone(patch) as Record<string, unknown>);
    (this.node.metadata as { resourceVersion?: string }).resourceVersion = String(this.version++);
  }

  private async serve<T>(op: NodeInfoApiOperation, name: string, body: unknown, fn: () => T): Promise<T> {
    this.requests.push(body === undefined ? { op, name } : { op, name, body: structuredClone(body) });
    await Promise.resolve();
    const index = this.failures.findIndex((f) => f.op === op);
    if (index >= 0) {
      const [failure] = this.failures.splice(index, 1);
      throw (failure as { err: unknown }).err;
    }
    return fn();
  }
}

// ---- FakeCsiDriverServer ------------------------------------------------------------------------------------------

/** The gRPC methods of FakeCsiDriverServer's CSI socket. */
export type CsiGrpcMethod =
  | 'GetPluginInfo'
  | 'GetPluginCapabilities'
  | 'Probe'
  | 'NodeStageVolume'
  | 'NodeUnstageVolume'
  | 'NodePublishVolume'
  | 'NodeUnpublishVolume'
  | 'NodeGetVolumeStats'
  | 'NodeExpandVolume'
  | 'NodeGetCapabilities'
  | 'NodeGetInfo'
  | 'GetInfo'
  | 'NotifyRegistrationStatus';

export interface FakeCsiDriverServerOptions {
  /** The CSI socket (Identity + Node). */
  csiSocket: string;
  /** Where to serve the Registration service (a socket in the plugin watcher's directory); none when absent. */
  registrationSocket?: string;
  /** Default `fake.csi.k8s.io`. */
  driverName?: string;
  /** PluginInfo.type; default 'CSIPlugin'. */
  pluginType?: string;
  /** PluginInfo.endpoint; default the CSI socket path. */
  endpoint?: string;
  /** PluginInfo.supported_versions; default ['1.0.0']. */
  versions?: string[];
  nodeInfo?: NodeGetInfoResponse;
  capabilities?: CsiNodeCapability[];
}

type Handler = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

/**
 * A CSI driver served over real unix sockets with @grpc/grpc-js, as a node plugin plus node-driver-registrar would:
 * Identity and Node on `csiSocket`, Registration on `registrationSocket`. Every call is recorded (`calls`), the
 * RegistrationStatus the kubelet sends is kept (`registrationStatuses`, `waitForRegistrationStatus()`), and
 * failOn()/hang() script failures.
 */
export class FakeCsiDriverServer {
  readonly csiSocket: string;
  readonly registrationSocket?: string;
  readonly driverName: string;
  pluginType: string;
  endpoint: string;
  versions: string[];
  nodeInfo: NodeGetInfoResponse;
  capabilities: CsiNodeCapability[];
  volumeStats: NodeGetVolumeStatsResponse = { usage: [] };
  readonly calls: Array<{ method: CsiGrpcMethod; request: unknown }> = [];
  readonly registrationStatuses: RegistrationStatus[] = [];
  private readonly failures = new Map<CsiGrpcMethod, ScriptedFailure>();
  private readonly hung = new Set<CsiGrpcMethod>();
  private readonly statusWaiters: Array<(status: RegistrationStatus) => void> = [];
  private csiServer?: grpc.Server;
  private registrationServer?: grpc.Server;

  constructor(opts: FakeCsiDriverServerOptions) {
    this.csiSocket = opts.csiSocket;
    this.registrationSocket = opts.registrationSocket;
    this.driverName = opts.driverName ?? 'fake.csi.k8s.io';
    this.pluginType = opts.pluginType ?? CSI_PLUGIN_TYPE;
    this.endpoint = opts.endpoint ?? opts.csiSocket;
    this.versions = opts.versions ?? ['1.0.0'];
    this.nodeInfo = opts.nodeInfo ?? { nodeId: 'fake-node-id', maxVolumesPerNode: 0 };
    this.capabilities = opts.capabilities ?? ['STAGE_UNSTAGE_VOLUME'];
  }

  /** The next `times` calls of method (default 1; Infinity: all) fail with this gRPC status. */
  failOn(method: CsiGrpcMethod, code: number, details: string, times = 1): this {
    this.failures.set(method, { code, details, times });
    return this;
  }

  /** Calls of method get no answer until the caller gives up or the server stops. */
  hang(method: CsiGrpcMethod, on = true): this {
    if (on) this.hung.add(method);
    else this.hung.delete(method);
    return this;
  }

  /** The requests of one method, in order. */
  callsOf(method: CsiGrpcMethod): unknown[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  /** Resolves with the next RegistrationStatus the kubelet sends (those already received are in registrationStatuses). */
  waitForRegistrationStatus(): Promise<RegistrationStatus> {
    return new Promise((resolve) => this.statusWaiters.push(resolve));
  }

  /** Serves the CSI socket, then the registration socket (so the kubelet finds the driver ready). */
  async start(): Promise<void> {
    const grpc = grpcJs();
    const csi = loadCsiPackage();
    this.csiServer = new grpc.Server();
    this.csiServer.addService(csi.Identity.service, this.handlers(['GetPluginInfo', 'GetPluginCapabilities', 'Probe']));
    this.csiServer.addService(
      csi.Node.service,
      this.handlers(['NodeStageVolume', 'NodeUnstageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeGetVolumeStats', 'NodeExpandVolume', 'NodeGetCapabilities', 'NodeGetInfo']),
    );
    await bind(this.csiServer, this.csiSocket);
    if (this.registrationSocket) await this.startRegistration();
  }

  /** Serves the registration socket (again, after stopRegistration: a new socket the watcher sees as replaced). */
  async startRegistration(): Promise<void> {
    if (!this.registrationSocket || this.registrationServer) return;
    const grpc = grpcJs();
    this.registrationServer = new grpc.Server();
    this.registrationServer.addService(loadPluginRegistrationPackage().Registration.service, this.handlers(['GetInfo', 'NotifyRegistrationStatus']));
    await bind(this.registrationServer, this.registrationSocket);
  }

  /** Stops serving the registration socket and removes it, as a registrar that exits does. */
  async stopRegistration(): Promise<void> {
    const server = this.registrationServer;
    this.registrationServer = undefined;
    if (server) await shutdown(server);
    if (this.registrationSocket) await rm(this.registrationSocket, { force: true });
  }

  /** Stops both servers (calls in flight are cancelled) and removes the sockets. */
  async stop(): Promise<void> {
    await this.stopRegistration();
    const server = this.csiServer;
    this.csiServer = undefined;
    if (server) await shutdown(server);
    await rm(this.csiSocket, { force: true });
  }

  private handlers(methods: CsiGrpcMethod[]): grpc.UntypedServiceImplementation {
    const impl: Record<string, Handler> = {};
    for (const method of methods) {
      impl[method] = (call, callback) => {
        this.calls.push({ method, request: call.request });
        const failure = this.failures.get(method);
        if (failure && failure.times > 0) {
          failure.times--;
          callback({ code: failure.code, details: failure.details, metadata: new (grpcJs().Metadata)() } as grpc.ServiceError);
          return;
        }
        if (this.hung.has(method)) return; // answered never; the call ends by the client's deadline or cancel
        try {
          callback(null, this.answer(method, call.request));
        } catch (err) {
          callback({ code: GrpcCode.Internal, details: (err as Error).message } as grpc.ServiceError);
        }
      };
    }
    return impl as grpc.UntypedServiceImplementation;
  }

  private answer(method: CsiGrpcMethod, request: unknown): unknown {
    switch (method) {
      case 'GetPluginInfo':
        return { name: this.driverName, vendorVersion: '0.0.0-fake', manifest: {} };
      case 'GetPluginCapabilities':
        return { capabilities: [] };
      case 'Probe':
        return { ready: { value: true } };
      case 'NodeGetInfo':
        return this.nodeInfo;
      case 'NodeGetCapabilities':
        return { capabilities: this.capabilities.map((type) => ({ rpc: { type } })) };
      case 'NodeGetVolumeStats':
        return this.volumeStats;
      case 'NodeExpandVolume':
        return { capacityBytes: (request as { capacityRange?: { requiredBytes: number } | null }).capacityRange?.requiredBytes ?? 0 };
      case 'GetInfo':
        return { type: this.pluginType, name: this.driverName, endpoint: this.endpoint, supportedVersions: this.versions };
      case 'NotifyRegistrationStatus': {
        const status = request as RegistrationStatus;
        this.registrationStatuses.push({ pluginRegistered: status.pluginRegistered, error: status.error });
        const waiter = this.statusWaiters.shift();
        waiter?.({ pluginRegistered: status.pluginRegistered, error: status.error });
        return {};
      }
      default:
        return {};
    }
  }
}

async function bind(server: grpc.Server, socketPath: string): Promise<void> {
  await mkdir(dirname(socketPath), { recursive: true });
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(unixTarget(socketPath), grpcJs().ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });
}

async function shutdown(server: grpc.Server): Promise<void> {
  server.forceShutdown();
  await new Promise<void>((resolve) => setImmediate(resolve));
}

export { CsiCallError, GrpcCode };
export { FakeApiObjects, FakeMounter };

/** Options of {@link fakeVolumeHost}. */
export interface FakeVolumeHostOptions {
  /** `<root-dir>/pods`: a pod's volume directories are under it (CsiVolumePlugin counts a volume's users there). */
  podsDir: string;
  /** Default: a new FakeMounter (nothing is mounted). */
  mounter?: Mounter;
  /** Default `node-1`. */
  nodeName?: string;
  /** The Secrets (nodeStageSecretRef, nodePublishSecretRef), ConfigMaps, claims, PVs and tokens; default: none. */
  api?: FakeApiObjects;
  clock?: Clock;
  logger?: Logger;
}

/**
 * The VolumeHost the volume manager hands its plugins, for calling a VolumePlugin such as CsiVolumePlugin
 * directly: in-memory API objects, a 4-CPU 8 GiB node at 10.0.0.1.
 */
export function fakeVolumeHost(opts: FakeVolumeHostOptions): VolumeHost {
  const api = opts.api ?? new FakeApiObjects();
  return {
    podsDir: opts.podsDir,
    nodeName: opts.nodeName ?? 'node-1',
    mounter: opts.mounter ?? new FakeMounter(),
    configMaps: api,
    secrets: api,
    tokens: api,
    persistentVolumes: api,
    node: { allocatableMilliCpu: 4000, allocatableMemoryBytes: 2 ** 33, hostIPs: () => ['10.0.0.1'] },
    clock: opts.clock ?? realClock,
    logger: opts.logger ?? defaultLogger,
  };
}
