import { GrpcCaller, type RemoteClientOptions } from './grpc-caller.js';
import { loadCriServices } from './proto.js';
import type * as api from './runtimeapi.js';
import type { CallOptions, ExecSyncResult, RuntimeService } from './services.js';

const container = (id: string) => `container ${JSON.stringify(id)}`;
const sandbox = (id: string) => `pod sandbox ${JSON.stringify(id)}`;

/**
 * RuntimeService over gRPC. One instance serves the kubelet's whole life: when the runtime restarts,
 * calls fail with UnavailableError until the channel reconnects on its own (no need to re-create it).
 */
export class RemoteRuntimeService implements RuntimeService {
  private readonly caller: GrpcCaller;

  constructor(options: RemoteClientOptions) {
    this.caller = new GrpcCaller('RuntimeService', () => loadCriServices().RuntimeService, options);
  }

  get endpoint(): string {
    return this.caller.endpoint;
  }

  version(apiVersion: string, options?: CallOptions): Promise<api.VersionResponse> {
    return this.caller.unary('Version', { version: apiVersion }, undefined, options);
  }

  async runPodSandbox(config: api.PodSandboxConfigInit, runtimeHandler = '', options?: CallOptions): Promise<string> {
    const meta = config.metadata;
    const about = meta ? `pod ${JSON.stringify(`${meta.namespace}/${meta.name}`)} (uid ${meta.uid})` : undefined;
    // Sandbox creation can involve network setup: the Go kubelet allows it twice the request timeout.
    const response = await this.caller.unary<api.RunPodSandboxResponse>(
      'RunPodSandbox',
      { config, runtimeHandler },
      about,
      options,
      this.caller.timeoutMs * 2,
    );
    return response.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    await this.caller.unary('StopPodSandbox', { podSandboxId }, sandbox(podSandboxId), options);
  }

  async removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    await this.caller.unary('RemovePodSandbox', { podSandboxId }, sandbox(podSandboxId), options);
  }

  podSandboxStatus(podSandboxId: string, verbose = false, options?: CallOptions): Promise<api.PodSandboxStatusResponse> {
    return this.caller.unary('PodSandboxStatus', { podSandboxId, verbose }, sandbox(podSandboxId), options);
  }

  async listPodSandbox(filter?: api.PodSandboxFilterInit, options?: CallOptions): Promise<api.PodSandbox[]> {
    const response = await this.caller.unary<api.ListPodSandboxResponse>('ListPodSandbox', { filter }, undefined, options);
    return response.items;
  }

  async createContainer(
    podSandboxId: string,
    config: api.ContainerConfigInit,
    sandboxConfig: api.PodSandboxConfigInit,
    options?: CallOptions,
  ): Promise<string> {
    const about = `container ${JSON.stringify(config.metadata?.name ?? '')} in ${sandbox(podSandboxId)}`;
    const response = await this.caller.unary<api.CreateContainerResponse>(
      'CreateContainer',
      { podSandboxId, config, sandboxConfig },
      about,
      options,
    );
    return response.containerId;
  }

  async startContainer(containerId: string, options?: CallOptions): Promise<void> {
    await this.caller.unary('StartContainer', { containerId }, container(containerId), options);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void> {
    // The runtime may take the whole grace period: the deadline covers it plus the usual request time.
    const deadline = this.caller.timeoutMs > 0 ? this.caller.timeoutMs + Math.max(0, timeoutSeconds) * 1000 : 0;
    await this.caller.unary('StopContainer', { containerId, timeout: timeoutSeconds }, container(containerId), options, deadline);
  }

  async removeContainer(containerId: string, options?: CallOptions): Promise<void> {
    await this.caller.unary('RemoveContainer', { containerId }, container(containerId), options);
  }

  async listContainers(filter?: api.ContainerFilterInit, options?: CallOptions): Promise<api.Container[]> {
    const response = await this.caller.unary<api.ListContainersResponse>('ListContainers', { filter }, undefined, options);
    return response.containers;
  }

  containerStatus(containerId: string, verbose = false, options?: CallOptions): Promise<api.ContainerStatusResponse> {
    return this.caller.unary('ContainerStatus', { containerId, verbose }, container(containerId), options);
  }

  async updateContainerResources(
    containerId: string,
    resources: { linux?: api.LinuxContainerResourcesInit; annotations?: Record<string, string> },
    options?: CallOptions,
  ): Promise<void> {
    await this.caller.unary('UpdateContainerResources', { containerId, ...resources }, container(containerId), options);
  }

  async reopenContainerLog(containerId: string, options?: CallOptions): Promise<void> {
    await this.caller.unary('ReopenContainerLog', { containerId }, container(containerId), options);
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult> {
    // As the Go client: the command's own timeout plus the request timeout, or no deadline at all.
    const deadline = timeoutSeconds > 0 && this.caller.timeoutMs > 0 ? this.caller.timeoutMs + timeoutSeconds * 1000 : 0;
    const response = await this.caller.unary<api.ExecSyncResponse>(
      'ExecSync',
      { containerId, cmd, timeout: timeoutSeconds },
      container(containerId),
      options,
      deadline,
    );
    return { stdout: response.stdout, stderr: response.stderr, exitCode: response.exitCode };
  }

  exec(request: api.ExecRequestInit, options?: CallOptions): Promise<api.ExecResponse> {
    return this.caller.unary('Exec', request, container(request.containerId ?? ''), options);
  }

  attach(request: api.AttachRequestInit, options?: CallOptions): Promise<api.AttachResponse> {
    return this.caller.unary('Attach', request, container(request.containerId ?? ''), options);
  }

  portForward(request: api.PortForwardRequestInit, options?: CallOptions): Promise<api.PortForwardResponse> {
    return this.caller.unary('PortForward', request, sandbox(request.podSandboxId ?? ''), options);
  }

  async containerStats(containerId: string, options?: CallOptions): Promise<api.ContainerStats> {
    const response = await this.caller.unary<api.ContainerStatsResponse>('ContainerStats', { containerId }, container(containerId), options);
    if (!response.stats) throw new Error(`RuntimeService/ContainerStats for ${container(containerId)} returned no stats`);
    return response.stats;
  }

  async listContainerStats(filter?: api.ContainerStatsFilterInit, options?: CallOptions): Promise<api.ContainerStats[]> {
    const response = await this.caller.unary<api.ListContainerStatsResponse>('ListContainerStats', { filter }, undefined, options);
    return response.stats;
  }

  async podSandboxStats(podSandboxId: string, options?: CallOptions): Promise<api.PodSandboxStats> {
    const response = await this.caller.unary<api.PodSandboxStatsResponse>('PodSandboxStats', { podSandboxId }, sandbox(podSandboxId), options);
    if (!response.stats) throw new Error(`RuntimeService/PodSandboxStats for ${sandbox(podSandboxId)} returned no stats`);
    return response.stats;
  }

  async listPodSandboxStats(filter?: api.PodSandboxStatsFilterInit, options?: CallOptions): Promise<api.PodSandboxStats[]> {
    const response = await this.caller.unary<api.ListPodSandboxStatsResponse>('ListPodSandboxStats', { filter }, undefined, options);
    return response.stats;
  }

  async updateRuntimeConfig(runtimeConfig: api.RuntimeConfigInit, options?: CallOptions): Promise<void> {
    await this.caller.unary('UpdateRuntimeConfig', { runtimeConfig }, undefined, options);
  }

  runtimeConfig(options?: CallOptions): Promise<api.RuntimeConfigResponse> {
    return this.caller.unary('RuntimeConfig', {}, undefined, options);
  }

  status(verbose = false, options?: CallOptions): Promise<api.StatusResponse> {
    return this.caller.unary('Status', { verbose }, undefined, options);
  }

  getContainerEvents(options?: { signal?: AbortSignal }): AsyncIterable<api.ContainerEventResponse> {
    return this.caller.serverStream<api.ContainerEventResponse>('GetContainerEvents', {}, options?.signal);
  }

  /** Closes the channel; pending calls fail with Canceled/Unavailable. */
  close(): void {
    this.caller.close();
  }
}
