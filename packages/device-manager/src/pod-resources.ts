// The pod resources API server (Go: pkg/kubelet/apis/podresources server_v1.go) on
// <root-dir>/pod-resources/kubelet.sock, and a small client for it.
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type { V1Pod } from '@kubernetes/client-node';
import { defaultLogger, type Logger } from '@kubelet-ts/core';
import {
  loadPodResourcesPackage,
  type AllocatableResourcesResponse,
  type ContainerDevices,
  type GetPodResourcesRequest,
  type GetPodResourcesResponse,
  type ListPodResourcesResponse,
  type PodResources, grpcJs } from './proto.js';

/** podresources.Socket: the socket's name in `<root-dir>/pod-resources`. */
export const POD_RESOURCES_SOCKET = 'kubelet.sock';
/** The directory under the kubelet root dir (Go: config.DefaultKubeletPodResourcesDirName). */
export const POD_RESOURCES_DIR_NAME = 'pod-resources';

/** What the server asks of the device manager (Go: DevicesProvider). */
export interface DevicesProvider {
  updateAllocatedDevices(): void;
  getDevices(podUID: string, containerName: string): ContainerDevices[];
  getAllocatableDevices(): ContainerDevices[];
}

export interface PodResourcesServerOptions {
  /** The socket path, normally `<root-dir>/pod-resources/kubelet.sock`. */
  socketPath: string;
  /** The kubelet's pods (Go: podsProvider.GetPods, the pod manager's pods). */
  pods: () => V1Pod[];
  devices: DevicesProvider;
  /** CPU ids of a container (Go: CPUsProvider); without a CPU manager none. */
  cpus?: (podUID: string, containerName: string) => number[];
  /** Serve Get (Go: feature gate KubeletPodResourcesGet, alpha in v1.27, off by default). Default true. */
  getEnabled?: boolean;
  /** Serve GetAllocatableResources (Go: KubeletPodResourcesGetAllocatable, beta and on since v1.23). Default true. */
  getAllocatableEnabled?: boolean;
  logger?: Logger;
}

type Callback<T> = (err: grpc.ServiceError | null, res?: T) => void;

function serviceError(code: grpc.status, message: string): grpc.ServiceError {
  return Object.assign(new Error(message), { code, details: message, metadata: new (grpcJs().Metadata)() });
}

export class PodResourcesServer {
  private server?: grpc.Server;
  private readonly logger: Logger;

  constructor(private readonly opts: PodResourcesServerOptions) {
    this.logger = opts.logger ?? defaultLogger;
  }

  private podResources(pod: V1Pod): PodResources {
    const uid = pod.metadata?.uid ?? '';
    return {
      name: pod.metadata?.name ?? '',
      namespace: pod.metadata?.namespace ?? '',
      containers: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        devices: this.opts.devices.getDevices(uid, c.name),
        cpuIds: this.opts.cpus?.(uid, c.name) ?? [],
        memory: [],
      })),
    };
  }

  /** List: every pod of the kubelet with its containers' devices. */
  list(): ListPodResourcesResponse {
    this.opts.devices.updateAllocatedDevices();
    return { podResources: this.opts.pods().map((pod) => this.podResources(pod)) };
  }

  /** Get: one pod by namespace and name. */
  get(req: GetPodResourcesRequest): GetPodResourcesResponse {
    if (this.opts.getEnabled === false) throw serviceError(grpcJs().status.UNKNOWN, 'PodResources API Get method disabled');
    const pod = this.opts.pods().find((p) => p.metadata?.name === req.podName && p.metadata?.namespace === req.podNamespace);
    if (!pod) throw serviceError(grpcJs().status.UNKNOWN, `pod ${req.podName} in namespace ${req.podNamespace} not found`);
    this.opts.devices.updateAllocatedDevices();
    return { podResources: this.podResources(pod) };
  }

  /** GetAllocatableResources: the node's healthy devices (no CPU or memory managers: none of those). */
  getAllocatableResources(): AllocatableResourcesResponse {
    if (this.opts.getAllocatableEnabled === false) throw serviceError(grpcJs().status.UNKNOWN, 'PodResources API GetAllocatableResources disabled');
    return { devices: this.opts.devices.getAllocatableDevices(), cpuIds: [], memory: [] };
  }

  /** Serves on the socket (a stale socket file is removed first). */
  async start(): Promise<void> {
    await mkdir(dirname(this.opts.socketPath), { recursive: true, mode: 0o750 });
    await rm(this.opts.socketPath, { force: true });
    const server = new (grpcJs().Server)();
    const handle =
      <Req, Res>(fn: (req: Req) => Res) =>
      (call: grpc.ServerUnaryCall<Req, Res>, cb: Callback<Res>) => {
        try {
          cb(null, fn(call.request));
        } catch (err) {
          cb((err as grpc.ServiceError).code !== undefined ? (err as grpc.ServiceError) : serviceError(grpcJs().status.UNKNOWN, (err as Error).message));
        }
      };
    server.addService(loadPodResourcesPackage().PodResourcesLister.service, {
      List: handle(() => this.list()),
      Get: handle((req: GetPodResourcesRequest) => this.get(req)),
      GetAllocatableResources: handle(() => this.getAllocatableResources()),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.opts.socketPath}`, grpcJs().ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    this.server = server;
    this.logger.v(2).info('Serving the pod resources API', { socket: this.opts.socketPath });
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  }
}

/** The pod resources socket of a kubelet root dir. */
export function podResourcesSocketPath(rootDir: string): string {
  return join(rootDir, POD_RESOURCES_DIR_NAME, POD_RESOURCES_SOCKET);
}

type UnaryClient<Req, Res> = (req: Req, cb: Callback<Res>) => void;

/** A client of the pod resources API (Go: podresources.GetV1Client). close() when done. */
export class PodResourcesClient {
  private readonly client: grpc.Client & {
    List: UnaryClient<Record<string, never>, ListPodResourcesResponse>;
    Get: UnaryClient<GetPodResourcesRequest, GetPodResourcesResponse>;
    GetAllocatableResources: UnaryClient<Record<string, never>, AllocatableResourcesResponse>;
  };

  constructor(socketPath: string) {
    const { PodResourcesLister } = loadPodResourcesPackage();
    this.client = new PodResourcesLister(`unix://${socketPath}`, grpcJs().credentials.createInsecure()) as typeof this.client;
  }

  private call<Req, Res>(method: UnaryClient<Req, Res>, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => method.call(this.client, req, (err, res) => (err ? reject(err) : resolve(res as Res))));
  }

  list(): Promise<ListPodResourcesResponse> {
    return this.call(this.client.List, {});
  }

  get(podNamespace: string, podName: string): Promise<GetPodResourcesResponse> {
    return this.call(this.client.Get, { podName, podNamespace });
  }

  getAllocatableResources(): Promise<AllocatableResourcesResponse> {
    return this.call(this.client.GetAllocatableResources, {});
  }

  close(): void {
    this.client.close();
  }
}
