// Test doubles of a CSI driver's Node service and of the driver registry, for tests of the CSI volume
// plugin and of a kubelet that uses it: every call is recorded, and capabilities, errors and stats are
// scripted. Nothing is mounted; a test that wants the targets to look mounted passes a FakeMounter.
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

export type FakeCsiNodeMethod =
  | 'nodeGetInfo'
  | 'nodeGetCapabilities'
  | 'nodeStageVolume'
  | 'nodeUnstageVolume'
  | 'nodePublishVolume'
  | 'nodeUnpublishVolume'
  | 'nodeGetVolumeStats'
  | 'nodeExpandVolume';

/** One recorded call; `request` is a copy of what the plugin sent (undefined for the argument-less ones). */
export interface FakeCsiNodeCall {
  method: FakeCsiNodeMethod;
  request?:
    | NodeStageVolumeRequest
    | NodeUnstageVolumeRequest
    | NodePublishVolumeRequest
    | NodeUnpublishVolumeRequest
    | NodeGetVolumeStatsRequest
    | NodeExpandVolumeRequest;
}

/** gRPC status codes by name, for {@link csiRpcError}. */
export const GRPC_CODES = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;

export type GrpcCodeName = keyof typeof GRPC_CODES;

/** An error as a driver's gRPC status reads in Go: `rpc error: code = <Code> desc = <desc>`, with the numeric `code`. */
export function csiRpcError(code: GrpcCodeName, desc: string): Error & { code: number; details: string } {
  return Object.assign(new Error(`rpc error: code = ${code} desc = ${desc}`), { code: GRPC_CODES[code], details: desc });
}

export interface FakeCsiNodeClientOptions {
  capabilities?: CsiNodeCapability[];
  nodeInfo?: NodeGetInfoResponse;
  stats?: NodeGetVolumeStatsResponse;
}

/**
 * A CsiNodeClient that answers from its fields: `capabilities`, `nodeInfo`, `stats` (per volume id via
 * `statsByVolume`), with `failNext(method, err)` queuing failures and `block(method)` holding calls until
 * released. Calls honour their AbortSignal.
 */
export class FakeCsiNodeClient implements CsiNodeClient {
  readonly calls: FakeCsiNodeCall[] = [];
  capabilities: CsiNodeCapability[];
  nodeInfo: NodeGetInfoResponse;
  stats: NodeGetVolumeStatsResponse;
  readonly statsByVolume = new Map<string, NodeGetVolumeStatsResponse>();
  closed = false;
  /**
   * Runs for every call that did not fail, after it was recorded: a test can act as the driver here
   * (e.g. mark the target mounted in a FakeMounter on nodePublishVolume). A rejection fails the call.
   */
  onCall: ((call: FakeCsiNodeCall) => void | Promise<void>) | undefined;
  private readonly failures = new Map<FakeCsiNodeMethod, Error[]>();
  private readonly blocked = new Map<FakeCsiNodeMethod, Array<() => void>>();
  private readonly blocking = new Set<FakeCsiNodeMethod>();

  constructor(opts: FakeCsiNodeClientOptions = {}) {
    this.capabilities = [...(opts.capabilities ?? ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'])];
    this.nodeInfo = opts.nodeInfo ?? { nodeId: 'fake-node', maxVolumesPerNode: 0 };
    this.stats = opts.stats ?? {
      usage: [
        { unit: 'BYTES', total: 1 << 30, available: 768 << 20, used: 256 << 20 },
        { unit: 'INODES', total: 65536, available: 65000, used: 536 },
      ],
    };
  }

  /** The next call of method rejects with err (queue several to fail several calls). */
  failNext(method: FakeCsiNodeMethod, err: Error): this {
    const queue = this.failures.get(method) ?? [];
    queue.push(err);
    this.failures.set(method, queue);
    return this;
  }

  /** Calls of method wait until {@link release} (or their signal aborts). */
  block(method: FakeCsiNodeMethod): this {
    this.blocking.add(method);
    return this;
  }

  /** Stops blocking method and lets the waiting calls go on. */
  release(method: FakeCsiNodeMethod): void {
    this.blocking.delete(method);
    for (const go of this.blocked.get(method) ?? []) go();
    this.blocked.delete(method);
  }

  /** How many calls of method are waiting in {@link block}. */
  blockedCalls(method: FakeCsiNodeMethod): number {
    return this.blocked.get(method)?.length ?? 0;
  }

  /** The recorded calls of one method, in order. */
  callsOf(method: FakeCsiNodeMethod): FakeCsiNodeCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** The methods called, in order. */
  methods(): FakeCsiNodeMethod[] {
    return this.calls.map((c) => c.method);
  }

  async nodeGetInfo(signal?: AbortSignal): Promise<NodeGetInfoResponse> {
    await this.enter('nodeGetInfo', undefined, signal);
    return structuredClone(this.nodeInfo);
  }

  async nodeGetCapabilities(signal?: AbortSignal): Promise<CsiNodeCapability[]> {
    await this.enter('nodeGetCapabilities', undefined, signal);
    return [...this.capabilities];
  }

  async nodeStageVolume(request: NodeStageVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.enter('nodeStageVolume', request, signal);
  }

  async nodeUnstageVolume(request: NodeUnstageVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.enter('nodeUnstageVolume', request, signal);
  }

  async nodePublishVolume(request: NodePublishVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.enter('nodePublishVolume', request, signal);
  }

  async nodeUnpublishVolume(request: NodeUnpublishVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.enter('nodeUnpublishVolume', request, signal);
  }

  async nodeGetVolumeStats(request: NodeGetVolumeStatsRequest, signal?: AbortSignal): Promise<NodeGetVolumeStatsResponse> {
    await this.enter('nodeGetVolumeStats', request, signal);
    return structuredClone(this.statsByVolume.get(request.volumeId) ?? this.stats);
  }

  async nodeExpandVolume(request: NodeExpandVolumeRequest, signal?: AbortSignal): Promise<{ capacityBytes: number }> {
    await this.enter('nodeExpandVolume', request, signal);
    return { capacityBytes: request.capacityRange?.requiredBytes ?? 0 };
  }

  close(): void {
    this.closed = true;
  }

  private async enter(method: FakeCsiNodeMethod, request: FakeCsiNodeCall['request'], signal?: AbortSignal): Promise<void> {
    this.calls.push({ method, ...(request !== undefined ? { request: structuredClone(request) } : {}) });
    if (signal?.aborted) throw signal.reason;
    if (this.blocking.has(method)) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(signal?.reason);
        signal?.addEventListener('abort', onAbort, { once: true });
        const queue = this.blocked.get(method) ?? [];
        queue.push(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        });
        this.blocked.set(method, queue);
      });
    }
    const err = this.failures.get(method)?.shift();
    if (err) throw err;
    await this.onCall?.({ method, ...(request !== undefined ? { request: structuredClone(request) } : {}) });
  }
}

/**
 * A CsiDriverLookup over a map: `register(name, client)` / `unregister(name)`; an unknown driver fails
 * with the registry's (Go's) text.
 */
export class FakeCsiDriverLookup implements CsiDriverLookup {
  private readonly clients = new Map<string, CsiNodeClient>();

  constructor(drivers: Record<string, CsiNodeClient> = {}) {
    for (const [name, client] of Object.entries(drivers)) this.clients.set(name, client);
  }

  register(name: string, client: CsiNodeClient): this {
    this.clients.set(name, client);
    return this;
  }

  unregister(name: string): this {
    this.clients.delete(name);
    return this;
  }

  has(driverName: string): boolean {
    return this.clients.has(driverName);
  }

  client(driverName: string): CsiNodeClient {
    const client = this.clients.get(driverName);
    if (!client) throw new Error(`driver name ${driverName} not found in the list of registered CSI drivers`);
    return client;
  }
}
