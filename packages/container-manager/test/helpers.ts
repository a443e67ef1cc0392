import type { V1Container, V1Pod } from '@kubernetes/client-node';

export type Resources = { requests?: Record<string, string>; limits?: Record<string, string> };

export function container(name: string, resources?: Resources): V1Container {
  return { name, image: 'busybox', resources };
}

export function makePod(uid: string, containers: V1Container[], extra: { initContainers?: V1Container[]; overhead?: Record<string, string> } = {}): V1Pod {
  return {
    metadata: { name: `pod-${uid}`, namespace: 'default', uid },
    spec: { containers, initContainers: extra.initContainers, overhead: extra.overhead },
  };
}

export const guaranteedPod = (uid: string, cpu = '500m', memory = '128Mi'): V1Pod =>
  makePod(uid, [container('app', { requests: { cpu, memory }, limits: { cpu, memory } })]);
export const burstablePod = (uid: string, cpu = '250m'): V1Pod => makePod(uid, [container('app', { requests: { cpu } })]);
export const bestEffortPod = (uid: string): V1Pod => makePod(uid, [container('app')]);

export const CG = '/sys/fs/cgroup';
