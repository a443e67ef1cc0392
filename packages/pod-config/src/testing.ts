// Test doubles and builders, published as `@kubelet-ts/pod-config/testing`.
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { PodOperation, type PodSourceName, type PodUpdate } from '@kubelet-ts/core';
import type { PodConfig, PodUpdateSink } from './config.js';

/** A pod source driven by hand: each call pushes one PodUpdate into the config's channel. */
export class FakePodSource {
  readonly sink: PodUpdateSink;
  constructor(
    config: PodConfig,
    readonly source: PodSourceName = 'fake',
  ) {
    this.sink = config.channel(source);
  }

  push(op: PodOperation, pods: V1Pod[]): Promise<void> {
    return this.sink({ op, pods, source: this.source });
  }

  set(...pods: V1Pod[]): Promise<void> {
    return this.push(PodOperation.SET, pods);
  }

  add(...pods: V1Pod[]): Promise<void> {
    return this.push(PodOperation.ADD, pods);
  }

  update(...pods: V1Pod[]): Promise<void> {
    return this.push(PodOperation.UPDATE, pods);
  }

  delete(...pods: V1Pod[]): Promise<void> {
    return this.push(PodOperation.DELETE, pods);
  }

  remove(...pods: V1Pod[]): Promise<void> {
    return this.push(PodOperation.REMOVE, pods);
  }
}

export interface TestPodOptions {
  name: string;
  namespace?: string;
  /** Default `uid-<namespace>-<name>`. */
  uid?: string;
  /** Container names (image `busybox:1.36`) or partial containers. Default one container "ctr". */
  containers?: (string | Partial<V1Container>)[];
  initContainers?: (string | Partial<V1Container>)[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  nodeName?: string;
  restartPolicy?: string;
  status?: V1PodStatus;
  deletionTimestamp?: Date;
  deletionGracePeriodSeconds?: number;
  resourceVersion?: string;
}

/** A container with the kubelet's defaults filled in. */
export function makeTestContainer(c: string | Partial<V1Container>): V1Container {
  const base = typeof c === 'string' ? { name: c } : c;
  return {
    name: base.name ?? 'ctr',
    image: 'busybox:1.36',
    imagePullPolicy: 'IfNotPresent',
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    ...base,
  };
}

/** A valid pod as the kubelet would see it from the API server, for tests of other packages. */
export function makeTestPod(opts: TestPodOptions): V1Pod {
  const namespace = opts.namespace ?? 'default';
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: opts.name,
      namespace,
      uid: opts.uid ?? `uid-${namespace}-${opts.name}`,
    },
    spec: {
      containers: (opts.containers ?? ['ctr']).map(makeTestContainer),
      restartPolicy: opts.restartPolicy ?? 'Always',
      dnsPolicy: 'ClusterFirst',
      terminationGracePeriodSeconds: 30,
      schedulerName: 'default-scheduler',
      securityContext: {},
      enableServiceLinks: true,
    },
    status: opts.status ?? { phase: 'Pending' },
  };
  const md = pod.metadata as NonNullable<V1Pod['metadata']>;
  const spec = pod.spec as NonNullable<V1Pod['spec']>;
  if (opts.initContainers) spec.initContainers = opts.initContainers.map(makeTestContainer);
  if (opts.nodeName) spec.nodeName = opts.nodeName;
  if (opts.labels) md.labels = { ...opts.labels };
  if (opts.annotations) md.annotations = { ...opts.annotations };
  if (opts.deletionTimestamp) md.deletionTimestamp = opts.deletionTimestamp;
  if (opts.deletionGracePeriodSeconds !== undefined) md.deletionGracePeriodSeconds = opts.deletionGracePeriodSeconds;
  if (opts.resourceVersion) md.resourceVersion = opts.resourceVersion;
  return pod;
}

/** A static pod manifest (what goes in a file or URL body), as a plain object ready for JSON/YAML. */
export function makeTestManifest(name: string, opts: { namespace?: string; image?: string; containers?: string[]; labels?: Record<string, string> } = {}): Record<string, unknown> {
  const metadata: Record<string, unknown> = { name };
  if (opts.namespace) metadata.namespace = opts.namespace;
  if (opts.labels) metadata.labels = opts.labels;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: { containers: (opts.containers ?? ['ctr']).map((c) => ({ name: c, image: opts.image ?? 'busybox:1.36' })) },
  };
}

/** Takes every update buffered in config right now. */
export function drainUpdates(config: PodConfig): PodUpdate[] {
  const out: PodUpdate[] = [];
  for (let u = config.tryNext(); u !== undefined; u = config.tryNext()) out.push(u);
  return out;
}

/** Operation and pod names of updates, compact for assertions: `ADD:a,b`. */
export function summarize(updates: PodUpdate[]): string[] {
  return updates.map((u) => `${u.op}:${u.pods.map((p) => p.metadata?.name ?? '').join(',')}`);
}
