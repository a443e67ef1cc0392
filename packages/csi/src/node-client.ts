// GrpcCsiNodeClient (Go: pkg/volume/csi/csi_client.go's csiDriverClient): the CSI Node and Identity services of
// one driver over its unix socket, each call with a deadline and cancellable by an AbortSignal.
import type * as grpc from '@grpc/grpc-js';
import { CsiCallError, toCsiCallError, type CallEnd } from './errors.js';
import { grpcJs, loadCsiPackage, socketPathOf, unixTarget, type GetPluginInfoResponse, type PluginCapability, type ProbeResponse } from './proto.js';
import type {
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

/** csiTimeout (pkg/volume/csi/csi_plugin.go, v1.20): the deadline of every CSI call the kubelet makes. */
export const CSI_TIMEOUT_MS = 2 * 60_000;

export interface GrpcCsiNodeClientOptions {
  /** The per-call deadline (Go's csiTimeout, 2 min). A call's own AbortSignal can end it sooner. */
  timeoutMs?: number;
}

type Unary = (req: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => grpc.ClientUnaryCall;
type ServiceClient = grpc.Client & Record<string, Unary>;

/** The CSI Identity service of a driver (GetPluginInfo, GetPluginCapabilities, Probe). */
export interface CsiIdentityClient {
  getPluginInfo(signal?: AbortSignal): Promise<GetPluginInfoResponse>;
  getPluginCapabilities(signal?: AbortSignal): Promise<PluginCapability[]>;
  /** Probe's readiness: true when the driver says ready or leaves it unset. */
  probe(signal?: AbortSignal): Promise<boolean>;
  close(): void;
}

/**
 * A driver's Node (and Identity) service over the unix socket `endpoint` (a path, or `unix://` + path). The
 * connection is made on the first call, not here, and remade by gRPC when the driver restarts; a driver that is
 * not listening fails the call at once with Go's `Unavailable` dial error. Calls reject with CsiCallError.
 */
export class GrpcCsiNodeClient implements CsiNodeClient, CsiIdentityClient {
  readonly socketPath: string;
  private readonly timeoutMs: number;
  private nodeClient?: ServiceClient;
  private identityClient?: ServiceClient;
  private closed = false;

  constructor(endpoint: string, opts: GrpcCsiNodeClientOptions = {}) {
    this.socketPath = socketPathOf(endpoint);
    this.timeoutMs = opts.timeoutMs ?? CSI_TIMEOUT_MS;
  }

  async nodeGetInfo(signal?: AbortSignal): Promise<NodeGetInfoResponse> {
    const res = (await this.call('node', 'NodeGetInfo', {}, signal)) as {
      nodeId: string;
      maxVolumesPerNode: number;
      accessibleTopology?: { segments: Record<string, string> } | null;
    };
    const out: NodeGetInfoResponse = { nodeId: res.nodeId, maxVolumesPerNode: res.maxVolumesPerNode };
    if (res.accessibleTopology) out.accessibleTopology = { segments: { ...res.accessibleTopology.segments } };
    return out;
  }

  async nodeGetCapabilities(signal?: AbortSignal): Promise<CsiNodeCapability[]> {
    const res = (await this.call('node', 'NodeGetCapabilities', {}, signal)) as { capabilities: Array<{ rpc?: { type: CsiNodeCapability } | null }> };
    return res.capabilities.flatMap((c) => (c.rpc ? [c.rpc.type] : []));
  }

  async nodeStageVolume(request: NodeStageVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.call('node', 'NodeStageVolume', request, signal);
  }

  async nodeUnstageVolume(request: NodeUnstageVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.call('node', 'NodeUnstageVolume', request, signal);
  }

  async nodePublishVolume(request: NodePublishVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.call('node', 'NodePublishVolume', request, signal);
  }

  async nodeUnpublishVolume(request: NodeUnpublishVolumeRequest, signal?: AbortSignal): Promise<void> {
    await this.call('node', 'NodeUnpublishVolume', request, signal);
  }

  async nodeGetVolumeStats(request: NodeGetVolumeStatsRequest, signal?: AbortSignal): Promise<NodeGetVolumeStatsResponse> {
    const res = (await this.call('node', 'NodeGetVolumeStats', request, signal)) as {
      usage: NodeGetVolumeStatsResponse['usage'];
      volumeCondition?: { abnormal: boolean; message: string } | null;
    };
    const out: NodeGetVolumeStatsResponse = { usage: res.usage.map((u) => ({ available: u.available, total: u.total, used: u.used, unit: u.unit })) };
    if (res.volumeCondition) out.volumeCondition = { abnormal: res.volumeCondition.abnormal, message: res.volumeCondition.message };
    return out;
  }

  async nodeExpandVolume(request: NodeExpandVolumeRequest, signal?: AbortSignal): Promise<{ capacityBytes: number }> {
    const res = (await this.call('node', 'NodeExpandVolume', request, signal)) as { capacityBytes: number };
    return { capacityBytes: res.capacityBytes };
  }

  getPluginInfo(signal?: AbortSignal): Promise<GetPluginInfoResponse> {
    return this.call('identity', 'GetPluginInfo', {}, signal) as Promise<GetPluginInfoResponse>;
  }

  async getPluginCapabilities(signal?: AbortSignal): Promise<PluginCapability[]> {
    const res = (await this.call('identity', 'GetPluginCapabilities', {}, signal)) as { capabilities: PluginCapability[] };
    return res.capabilities;
  }

  async probe(signal?: AbortSignal): Promise<boolean> {
    const res = (await this.call('identity', 'Probe', {}, signal)) as ProbeResponse;
    return res.ready ? res.ready.value : true;
  }

  /** Closes the connection; later calls fail with `Canceled`. */
  close(): void {
    this.closed = true;
    this.nodeClient?.close();
    this.identityClient?.close();
    this.nodeClient = undefined;
    this.identityClient = undefined;
  }

  private client(service: 'node' | 'identity'): ServiceClient {
    const pkg = loadCsiPackage();
    const options: grpc.ClientOptions = { 'grpc.enable_retries': 0 };
    if (service === 'node') {
      this.nodeClient ??= new pkg.Node(unixTarget(this.socketPath), grpcJs().credentials.createInsecure(), options) as ServiceClient;
      return this.nodeClient;
    }
    this.identityClient ??= new pkg.Identity(unixTarget(this.socketPath), grpcJs().credentials.createInsecure(), options) as ServiceClient;
    return this.identityClient;
  }

  private call(service: 'node' | 'identity', method: string, request: unknown, signal?: AbortSignal): Promise<unknown> {
    if (this.closed) return Promise.reject(new CsiCallError(1, 'grpc: the client connection is closing'));
    if (signal?.aborted) return Promise.reject(toCsiCallError(signal.reason, this.socketPath, 'aborted'));
    const client = this.client(service);
    const grpc = grpcJs();
    return new Promise((resolve, reject) => {
      let end: CallEnd;
      const deadline = Date.now() + this.timeoutMs;
      const onAbort = (): void => {
        end ??= 'aborted';
        call.cancel();
      };
      const call = (client[method] as Unary).call(client, request, new grpc.Metadata(), { deadline }, (err, res) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) {
          if (end === undefined && err.code === grpc.status.DEADLINE_EXCEEDED) end = 'deadline';
          reject(toCsiCallError(err, this.socketPath, end));
        } else {
          resolve(res);
        }
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** newCsiDriverClient's client for a driver's endpoint (a socket path, or `unix://` + path). */
export function createCsiNodeClient(endpoint: string, opts?: GrpcCsiNodeClientOptions): GrpcCsiNodeClient {
  return new GrpcCsiNodeClient(endpoint, opts);
}
