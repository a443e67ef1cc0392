import type { Writable } from 'node:stream';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { buildPodFullName, parseContainerID, type Clock, type Logger, type RuntimeContainer, type RuntimePod } from '@kubelet-ts/core';
import type { RuntimeService } from '@kubelet-ts/cri-client';
import { readLogs, type LogOptions } from '@kubelet-ts/container-logs';
import type { MachineInfo } from '@kubelet-ts/node-status';
import { serializePod } from '@kubelet-ts/pod-config';
import { HostNotFoundError, type HealthzCheck, type ServerHost, type StreamOptions } from '@kubelet-ts/server';
import type { Kubelet, KubeletRuntime } from './kubelet.js';

export interface KubeletServerHostOptions {
  kubelet: Kubelet;
  runtime: KubeletRuntime;
  runtimeService: Pick<RuntimeService, 'exec' | 'attach' | 'portForward' | 'execSync' | 'containerStatus'>;
  healthChecks: HealthzCheck[];
  configz: () => unknown;
  machineInfo: () => Promise<MachineInfo>;
  stats?: Pick<ServerHost, 'getStatsSummary' | 'resourceMetrics' | 'cadvisorMetrics'>;
  clock: Clock;
  logger: Logger;
}

/** The kubelet as its server sees it (Go: the Kubelet's HostInterface methods). */
export class KubeletServerHost implements ServerHost {
  readonly healthChecks: HealthzCheck[];
  readonly getStatsSummary?: ServerHost['getStatsSummary'];
  readonly resourceMetrics?: ServerHost['resourceMetrics'];
  readonly cadvisorMetrics?: ServerHost['cadvisorMetrics'];

  constructor(private readonly options: KubeletServerHostOptions) {
    this.healthChecks = options.healthChecks;
    this.getStatsSummary = options.stats?.getStatsSummary;
    this.resourceMetrics = options.stats?.resourceMetrics;
    this.cadvisorMetrics = options.stats?.cadvisorMetrics;
  }

  /** Go: GetPods, with the kubelet's latest status in place of the API server's copy. */
  getPods(): object[] {
    return this.options.kubelet.podStatuses().map(({ pod, status }) => serializePod(status ? { ...pod, status } : pod));
  }

  /** Go: GetRunningPods: the runtime's pods as minimal API pods (name, namespace, uid; containers' names and images). */
  async getRunningPods(): Promise<object[]> {
    const pods = await this.options.runtime.getPods(false);
    return pods.map((pod) =>
      serializePod({
        metadata: { name: pod.name, namespace: pod.namespace, uid: pod.id },
        spec: { containers: pod.containers.map((c) => ({ name: c.name, image: c.image })) },
      }),
    );
  }

  getPodByName(namespace: string, name: string): V1Pod | undefined {
    return this.options.kubelet.podManager.getPodByFullName(buildPodFullName(name, namespace));
  }

  getConfigz(): unknown {
    return this.options.configz();
  }

  /** /spec: the machine facts in cadvisor's MachineInfo JSON. */
  async getMachineInfo(): Promise<unknown> {
    const info = await this.options.machineInfo();
    return {
      timestamp: new Date(this.options.clock.now()).toISOString(),
      num_cores: info.numCores,
      memory_capacity: info.memoryCapacity,
      machine_id: info.machineID,
      system_uuid: info.systemUUID,
      boot_id: info.bootID,
      filesystems: info.rootfsCapacity === undefined ? [] : [{ device: 'rootfs', capacity: info.rootfsCapacity, inodes: info.rootfsInodes ?? 0, has_inodes: info.rootfsInodes !== undefined }],
      cloud_provider: 'Unknown',
      instance_type: 'Unknown',
      instance_id: 'None',
    };
  }

  /** Go: GetKubeletContainerLogs: the container the status names (or its previous instance), read from its CRI log file. */
  async getContainerLogs(pod: V1Pod, containerName: string, options: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
    const kubelet = this.options.kubelet;
    const mirror = kubelet.podManager.getMirrorPodByPod(pod);
    const uid = mirror?.metadata?.uid ?? pod.metadata!.uid!;
    const status = kubelet.getPodStatus(pod.metadata!.uid!) ?? kubelet.getPodStatus(uid) ?? pod.status ?? {};
    const containerId = validateContainerLogStatus(pod.metadata!.name!, status, containerName, options.previous);
    let logPath: string;
    try {
      logPath = (await this.options.runtimeService.containerStatus(containerId)).status?.logPath ?? '';
    } catch (error) {
      throw new Error(`failed to get container status ${JSON.stringify(containerId)}: ${(error as Error).message}`);
    }
    if (logPath === '') throw new Error(`container ${JSON.stringify(containerId)} has no log path`);
    // Go writes zero bytes first, so the response head goes out before a follow waits for output.
    out.write(Buffer.alloc(0));
    await readLogs(logPath, containerId, options, {
      runtime: this.options.runtimeService,
      stdout: out,
      stderr: out,
      clock: this.options.clock,
      logger: this.options.logger,
      signal,
    });
  }

  async getExec(pod: V1Pod, podUid: string, containerName: string, cmd: string[], streams: StreamOptions): Promise<string> {
    const container = await this.findContainer(pod, podUid, containerName);
    if (!container) throw new HostNotFoundError(`container not found (${JSON.stringify(containerName)})`);
    const response = await this.options.runtimeService.exec({ containerId: container.id.id, cmd, ...streams });
    return response.url;
  }

  async getAttach(pod: V1Pod, podUid: string, containerName: string, streams: StreamOptions): Promise<string> {
    const fullName = buildPodFullName(pod.metadata!.name!, pod.metadata!.namespace!);
    const container = await this.findContainer(pod, podUid, containerName);
    if (!container) throw new HostNotFoundError(`container ${containerName} not found in pod ${fullName}`);
    // The tty of an attach is the container's own: it cannot change once the process runs.
    const spec = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []), ...(pod.spec?.ephemeralContainers ?? [])].find((c) => c.name === containerName);
    if (!spec) throw new HostNotFoundError(`container ${containerName} not found in pod ${fullName}`);
    const response = await this.options.runtimeService.attach({ containerId: container.id.id, stdin: streams.stdin, stdout: streams.stdout, stderr: streams.stderr, tty: spec.tty ?? false });
    return response.url;
  }

  async getPortForward(pod: V1Pod, podUid: string, ports: number[]): Promise<string> {
    const running = await this.findRunningPod(pod, podUid);
    const sandbox = running?.sandboxes.find((s) => s.state === 'running') ?? running?.sandboxes[0];
    if (!running || !sandbox) throw new HostNotFoundError(`pod not found (${JSON.stringify(buildPodFullName(pod.metadata!.name!, pod.metadata!.namespace!))})`);
    const response = await this.options.runtimeService.portForward({ podSandboxId: sandbox.id.id, port: ports });
    return response.url;
  }

  async runInContainer(pod: V1Pod, podUid: string, containerName: string, cmd: string[]): Promise<Buffer> {
    const container = await this.findContainer(pod, podUid, containerName);
    if (!container) throw new HostNotFoundError(`container not found (${JSON.stringify(containerName)})`);
    const result = await this.options.runtimeService.execSync(container.id.id, cmd, 0);
    return Buffer.concat([Buffer.from(result.stdout), Buffer.from(result.stderr)]);
  }

  /** Go: findContainer: the running container of that name in the runtime's pod. */
  private async findContainer(pod: V1Pod, podUid: string, containerName: string): Promise<RuntimeContainer | undefined> {
    return (await this.findRunningPod(pod, podUid))?.containers.find((c) => c.name === containerName);
  }

  private async findRunningPod(pod: V1Pod, podUid: string): Promise<RuntimePod | undefined> {
    const uid = this.options.kubelet.podManager.translatePodUID(podUid || pod.metadata!.uid!);
    const pods = await this.options.runtime.getPods(false);
    return pods.find((p) => p.id === uid) ?? (podUid ? undefined : pods.find((p) => p.name === pod.metadata!.name && p.namespace === pod.metadata!.namespace));
  }
}

/** Go's validateContainerLogStatus: which container's log to read, or why there is none. */
export function validateContainerLogStatus(podName: string, status: V1PodStatus, containerName: string, previous: boolean): string {
  const all: V1ContainerStatus[] = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? []), ...(status.ephemeralContainerStatuses ?? [])];
  const container = all.find((c) => c.name === containerName);
  const quoted = `${JSON.stringify(containerName)} in pod ${JSON.stringify(podName)}`;
  if (!container) throw new Error(`container ${quoted} is not available`);
  const last = container.lastState?.terminated;
  const { waiting, running, terminated } = container.state ?? {};
  let id: string;
  if (previous) {
    if (!last?.containerID) throw new Error(`previous terminated container ${quoted} not found`);
    id = last.containerID;
  } else if (running) {
    id = container.containerID ?? '';
  } else if (terminated) {
    if (terminated.containerID) id = terminated.containerID;
    else if (last?.containerID) id = last.containerID;
    else throw new Error(`container ${quoted} is terminated`);
  } else if (last) {
    if (!last.containerID) throw new Error(`container ${quoted} is terminated`);
    id = last.containerID;
  } else if (waiting) {
    if (waiting.reason === 'ErrImagePull') throw new Error(`container ${quoted} is waiting to start: image can't be pulled`);
    if (waiting.reason === 'ImagePullBackOff') throw new Error(`container ${quoted} is waiting to start: trying and failing to pull image`);
    throw new Error(`container ${quoted} is waiting to start: ${waiting.reason ?? ''}`);
  } else {
    throw new Error(`container ${quoted} is waiting to start - no logs yet`);
  }
  return parseContainerID(id).id;
}
