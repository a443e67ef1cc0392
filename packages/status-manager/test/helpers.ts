import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ContainerStatus, PodStatus, SandboxStatus } from '@kubelet-ts/core';
import type { FakeClock } from '@kubelet-ts/core/testing';

export const T0 = Date.parse('2026-01-01T00:00:00Z');

export function makePod(name: string, opts: { uid?: string; containers?: string[]; initContainers?: (string | V1Container)[]; restartPolicy?: string; namespace?: string; annotations?: Record<string, string>; nodeName?: string } = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: opts.namespace ?? 'default', uid: opts.uid ?? `uid-${name}`, annotations: opts.annotations },
    spec: {
      nodeName: opts.nodeName ?? 'node-1',
      restartPolicy: opts.restartPolicy ?? 'Always',
      containers: (opts.containers ?? ['app']).map((n) => ({ name: n, image: 'busybox:1.36' })),
      initContainers: opts.initContainers?.map((c) => (typeof c === 'string' ? { name: c, image: 'busybox:1.36' } : c)),
    },
  };
}

let seq = 0;
export function container(name: string, state: ContainerStatus['state'], opts: Partial<ContainerStatus> = {}): ContainerStatus {
  seq++;
  return {
    id: { type: 'containerd', id: opts.id?.id ?? `${name}-${seq}` },
    name,
    state,
    createdAt: opts.createdAt ?? T0 + seq,
    startedAt: state === 'created' ? undefined : (opts.startedAt ?? T0 + 1000),
    finishedAt: state === 'exited' ? (opts.finishedAt ?? T0 + 5000) : undefined,
    exitCode: opts.exitCode ?? 0,
    image: 'docker.io/library/busybox:1.36',
    imageId: 'sha256:abc',
    imageRef: 'docker.io/library/busybox@sha256:abc',
    hash: 'h',
    restartCount: opts.restartCount ?? 0,
    ...opts,
    ...(opts.id ? {} : {}),
  } as ContainerStatus;
}

export function sandbox(ready = true, createdAt = T0): SandboxStatus {
  return { id: 'sb', name: 'p', namespace: 'default', uid: 'u', attempt: 0, state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY', createdAt, labels: {}, annotations: {} };
}

export function runtimeStatus(pod: V1Pod, containers: ContainerStatus[], opts: { ips?: string[]; sandboxReady?: boolean } = {}): PodStatus {
  return {
    id: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: pod.metadata!.namespace!,
    ips: opts.ips ?? ['10.88.0.5'],
    containerStatuses: containers,
    sandboxStatuses: [sandbox(opts.sandboxReady ?? true)],
    timestamp: T0,
  };
}

/** Real-time poll of cond; with a FakeClock, time moves stepMs between checks too. */
export async function waitFor(cond: () => boolean | Promise<boolean>, opts: { timeoutMs?: number; clock?: FakeClock; stepMs?: number; what?: string } = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? 'condition'}`);
    if (opts.clock) await opts.clock.advance(opts.stepMs ?? 100);
    await new Promise((r) => setTimeout(r, 5));
  }
}
