import type * as api from './runtimeapi.js';

/** Per-call options: an AbortSignal to cancel, and a deadline overriding the client's default. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Deadline for this call in ms; 0 means no deadline. */
  timeoutMs?: number;
}

export interface ExecSyncResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/**
 * The CRI RuntimeService as the kubelet uses it (Go: k8s.io/cri-api/pkg/apis.RuntimeService).
 * Implemented by RemoteRuntimeService (gRPC) and, for tests, by FakeRuntimeService.
 */
export interface RuntimeService {
  version(apiVersion: string, options?: CallOptions): Promise<api.VersionResponse>;

  runPodSandbox(config: api.PodSandboxConfigInit, runtimeHandler?: string, options?: CallOptions): Promise<string>;
  stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  podSandboxStatus(podSandboxId: string, verbose?: boolean, options?: CallOptions): Promise<api.PodSandboxStatusResponse>;
  listPodSandbox(filter?: api.PodSandboxFilterInit, options?: CallOptions): Promise<api.PodSandbox[]>;

  createContainer(
    podSandboxId: string,
    config: api.ContainerConfigInit,
    sandboxConfig: api.PodSandboxConfigInit,
    options?: CallOptions,
  ): Promise<string>;
  startContainer(containerId: string, options?: CallOptions): Promise<void>;
  /** Stops a container, giving it `timeoutSeconds` before the runtime kills it. */
  stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void>;
  removeContainer(containerId: string, options?: CallOptions): Promise<void>;
  listContainers(filter?: api.ContainerFilterInit, options?: CallOptions): Promise<api.Container[]>;
  containerStatus(containerId: string, verbose?: boolean, options?: CallOptions): Promise<api.ContainerStatusResponse>;
  updateContainerResources(
    containerId: string,
    resources: { linux?: api.LinuxContainerResourcesInit; annotations?: Record<string, string> },
    options?: CallOptions,
  ): Promise<void>;
  reopenContainerLog(containerId: string, options?: CallOptions): Promise<void>;

  /** Runs a command in a container; `timeoutSeconds` 0 means no limit. */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult>;
  exec(request: api.ExecRequestInit, options?: CallOptions): Promise<api.ExecResponse>;
  attach(request: api.AttachRequestInit, options?: CallOptions): Promise<api.AttachResponse>;
  portForward(request: api.PortForwardRequestInit, options?: CallOptions): Promise<api.PortForwardResponse>;

  containerStats(containerId: string, options?: CallOptions): Promise<api.ContainerStats>;
  listContainerStats(filter?: api.ContainerStatsFilterInit, options?: CallOptions): Promise<api.ContainerStats[]>;
  podSandboxStats(podSandboxId: string, options?: CallOptions): Promise<api.PodSandboxStats>;
  listPodSandboxStats(filter?: api.PodSandboxStatsFilterInit, options?: CallOptions): Promise<api.PodSandboxStats[]>;

  updateRuntimeConfig(runtimeConfig: api.RuntimeConfigInit, options?: CallOptions): Promise<void>;
  /**
   * The runtime's own configuration the kubelet follows (its cgroup driver). A runtime before the RPC
   * (containerd 1.6) fails with UnimplementedError, and the kubelet keeps its configured driver.
   */
  runtimeConfig(options?: CallOptions): Promise<api.RuntimeConfigResponse>;
  status(verbose?: boolean, options?: CallOptions): Promise<api.StatusResponse>;

  /**
   * Streams container events until the signal aborts or the stream fails. A runtime without the RPC
   * (containerd 1.6) fails the iteration with UnimplementedError.
   */
  getContainerEvents(options?: { signal?: AbortSignal }): AsyncIterable<api.ContainerEventResponse>;
}

/** The CRI ImageService (Go: k8s.io/cri-api/pkg/apis.ImageManagerService). */
export interface ImageService {
  listImages(filter?: api.ImageFilterInit, options?: CallOptions): Promise<api.Image[]>;
  /** The image's status, or `image: null` in the response when the runtime does not have it. */
  imageStatus(image: api.ImageSpecInit, verbose?: boolean, options?: CallOptions): Promise<api.ImageStatusResponse>;
  /** Pulls an image and returns its reference (image id or digest). */
  pullImage(
    image: api.ImageSpecInit,
    auth?: api.AuthConfigInit,
    sandboxConfig?: api.PodSandboxConfigInit,
    options?: CallOptions,
  ): Promise<string>;
  removeImage(image: api.ImageSpecInit, options?: CallOptions): Promise<void>;
  imageFsInfo(options?: CallOptions): Promise<api.ImageFsInfoResponse>;
}
