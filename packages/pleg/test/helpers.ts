// A small in-memory ContainerRuntime for PLEG tests and the relist benchmark (the real one is
// @kubelet-ts/runtime-manager, which the PLEG does not depend on).
import type {
  ContainerRuntime,
  ContainerState,
  PodStatus,
  PodSyncResult,
  RuntimeContainer,
  RuntimePod,
  RuntimeStatus,
  SandboxStatus,
} from '@kubelet-ts/core';

export interface FakeContainerSpec {
  id: string;
  state: ContainerState;
  name?: string;
  exitCode?: number;
}

export interface FakePodSpec {
  uid: string;
  name?: string;
  namespace?: string;
  containers?: FakeContainerSpec[];
  sandboxes?: FakeContainerSpec[];
  ips?: string[];
}

export class FakeContainerRuntime implements ContainerRuntime {
  readonly pods = new Map<string, FakePodSpec>();
  getPodsCalls = 0;
  getPodStatusCalls: string[] = [];
  /** Next getPods() calls fail with these errors, one each. */
  getPodsErrors: Error[] = [];
  /** Fails every getPods() while set. */
  getPodsFailure: Error | undefined;
  /** uid -> errors for the next getPodStatus calls of that pod, one each. */
  readonly podStatusErrors = new Map<string, Error[]>();
  /** Returned as the status timestamp. */
  now: () => number = () => 0;

  type(): string {
    return 'fake';
  }

  async version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }> {
    return { runtimeName: 'fake', runtimeVersion: '0.0.1', runtimeApiVersion: 'v1' };
  }

  async status(): Promise<RuntimeStatus> {
    return { conditions: [] };
  }

  setPod(spec: FakePodSpec): void {
    this.pods.set(spec.uid, spec);
  }

  removePod(uid: string): void {
    this.pods.delete(uid);
  }

  /** Changes one container's (or sandbox's) state in place. */
  setState(uid: string, id: string, state: ContainerState, exitCode = 0): void {
    const pod = this.pods.get(uid);
    const c = [...(pod?.containers ?? []), ...(pod?.sandboxes ?? [])].find((x) => x.id === id);
    if (!c) throw new Error(`no container ${id} in pod ${uid}`);
    c.state = state;
    c.exitCode = exitCode;
  }

  removeContainer(uid: string, id: string): void {
    const pod = this.pods.get(uid);
    if (!pod) return;
    pod.containers = (pod.containers ?? []).filter((c) => c.id !== id);
    pod.sandboxes = (pod.sandboxes ?? []).filter((c) => c.id !== id);
  }

  /** Fresh objects on every call, as a real runtime's listing would be. */
  async getPods(_all: boolean): Promise<RuntimePod[]> {
    this.getPodsCalls++;
    const queued = this.getPodsErrors.shift();
    if (queued) throw queued;
    if (this.getPodsFailure) throw this.getPodsFailure;
    const pods: RuntimePod[] = [];
    for (const spec of this.pods.values()) pods.push(toRuntimePod(spec));
    return pods;
  }

  async getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus> {
    this.getPodStatusCalls.push(uid);
    const queued = this.podStatusErrors.get(uid)?.shift();
    if (queued) throw queued;
    const spec = this.pods.get(uid);
    const sandboxStatuses: SandboxStatus[] = (spec?.sandboxes ?? []).map((s) => ({
      id: s.id,
      name,
      namespace,
      uid,
      attempt: 0,
      state: s.state === 'running' ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
      createdAt: 0,
      labels: {},
      annotations: {},
    }));
    return {
      id: uid,
      name,
      namespace,
      ips: spec?.ips ?? [],
      containerStatuses: (spec?.containers ?? []).map((c) => ({
        id: { type: 'fake', id: c.id },
        name: c.name ?? c.id,
        state: c.state,
        createdAt: 0,
        exitCode: c.exitCode ?? 0,
        image: 'busybox',
        imageId: 'sha256:busybox',
        hash: '1',
        restartCount: 0,
      })),
      sandboxStatuses,
      timestamp: this.now(),
    };
  }

  async syncPod(): Promise<PodSyncResult> {
    return { syncResults: [] };
  }

  async killPod(): Promise<void> {}
}

export function toRuntimePod(spec: FakePodSpec): RuntimePod {
  const container = (c: FakeContainerSpec): RuntimeContainer => ({
    id: { type: 'fake', id: c.id },
    name: c.name ?? c.id,
    image: 'busybox',
    imageId: 'sha256:busybox',
    hash: '1',
    state: c.state,
    createdAt: 0,
  });
  return {
    id: spec.uid,
    name: spec.name ?? `pod-${spec.uid}`,
    namespace: spec.namespace ?? 'default',
    createdAt: 0,
    containers: (spec.containers ?? []).map(container),
    sandboxes: (spec.sandboxes ?? []).map((s) => ({ id: { type: 'fake', id: s.id }, state: s.state, createdAt: 0 })),
  };
}

/** Collects what is in the channel right now without waiting. */
export function drain<T>(channel: { tryReceive(): T | undefined }): T[] {
  const items: T[] = [];
  for (let item = channel.tryReceive(); item !== undefined; item = channel.tryReceive()) items.push(item);
  return items;
}
