import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus, V1Probe } from '@kubernetes/client-node';

export function makePod(containers: V1Container[], opts: { uid?: string; name?: string; restartPolicy?: string; initContainers?: V1Container[] } = {}): V1Pod {
  return {
    metadata: { name: opts.name ?? 'web', namespace: 'default', uid: opts.uid ?? 'uid-1' },
    spec: { containers, initContainers: opts.initContainers, restartPolicy: opts.restartPolicy ?? 'Always' },
  };
}

export function container(name: string, probes: { liveness?: V1Probe; readiness?: V1Probe; startup?: V1Probe } = {}): V1Container {
  return { name, image: 'busybox', livenessProbe: probes.liveness, readinessProbe: probes.readiness, startupProbe: probes.startup };
}

export function execProbeSpec(extra: Partial<V1Probe> = {}): V1Probe {
  return { exec: { command: ['true'] }, periodSeconds: 10, ...extra };
}

export function running(name: string, id: string, startedAt: number, extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus {
  return {
    name,
    image: 'busybox',
    imageID: '',
    ready: false,
    restartCount: 0,
    containerID: id,
    state: { running: { startedAt: new Date(startedAt) } },
    ...extra,
  };
}

export function terminated(name: string, id: string, exitCode = 1): V1ContainerStatus {
  return {
    name,
    image: 'busybox',
    imageID: '',
    ready: false,
    restartCount: 0,
    containerID: id,
    state: { terminated: { exitCode, finishedAt: new Date() } },
  };
}

/** A status store as the status manager would be: the manager reads it, tests write it. */
export class StatusStore {
  readonly statuses = new Map<string, V1PodStatus>();
  get = (uid: string): V1PodStatus | undefined => this.statuses.get(uid);
  set(uid: string, status: V1PodStatus): void {
    this.statuses.set(uid, status);
  }
}
