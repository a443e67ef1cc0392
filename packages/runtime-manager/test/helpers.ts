import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerRestartBackoff, type ContainerStatus, type PodStatus } from '@kubelet-ts/core';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import {
  GenericRuntimeManager,
  hashContainer,
  type CriSandboxStatus,
  type GenericRuntimeManagerOptions,
  type RuntimeFs,
} from '../src/index.js';

/**
 * FakeRuntimeService reports no linux namespaces in PodSandboxStatus; real runtimes (containerd, the
 * local runtime) echo the config's namespace options, which computePodActions compares with
 * hostNetwork. This fake does the same.
 */
export class NamespaceAwareFakeRuntime extends FakeRuntimeService {
  override async runPodSandbox(config: runtimeapi.PodSandboxConfigInit, runtimeHandler = ''): Promise<string> {
    const id = await super.runPodSandbox(config, runtimeHandler);
    const options = config.linux?.securityContext?.namespaceOptions;
    const sandbox = this.sandboxes.get(id)!;
    sandbox.status.linux = {
      namespaces: {
        options: {
          network: (options?.network ?? 'POD') as runtimeapi.NamespaceMode & string,
          pid: (options?.pid ?? 'POD') as runtimeapi.NamespaceMode & string,
          ipc: (options?.ipc ?? 'POD') as runtimeapi.NamespaceMode & string,
          targetId: '',
          usernsOptions: null,
        },
      },
    } as runtimeapi.PodSandboxStatus['linux'];
    if (options?.network === 'NODE') sandbox.status.network = { ip: '', additionalIps: [] };
    return id;
  }
}

/** An in-memory RuntimeFs. */
export class MemFs implements RuntimeFs {
  readonly dirs = new Set<string>();
  readonly files = new Map<string, Buffer>();

  async mkdirAll(path: string): Promise<void> {
    const parts = path.split('/').filter(Boolean);
    for (let i = 1; i <= parts.length; i++) this.dirs.add('/' + parts.slice(0, i).join('/'));
  }

  async readdir(path: string): Promise<string[]> {
    if (!this.dirs.has(path)) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    const prefix = path.endsWith('/') ? path : path + '/';
    const names = new Set<string>();
    for (const p of [...this.dirs, ...this.files.keys()]) {
      if (p.startsWith(prefix) && p.length > prefix.length) names.add(p.slice(prefix.length).split('/')[0]);
    }
    return [...names];
  }

  async createFile(path: string): Promise<void> {
    this.files.set(path, Buffer.alloc(0));
  }

  async readTail(path: string, maxBytes: number): Promise<Buffer> {
    const data = this.files.get(path);
    if (!data) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return data.subarray(Math.max(0, data.length - maxBytes));
  }

  /** The mode each file was last written with. */
  readonly modes = new Map<string, number>();

  async readFile(path: string): Promise<Buffer> {
    const data = this.files.get(path);
    if (!data) throw Object.assign(new Error(`open ${path}: no such file or directory`), { code: 'ENOENT' });
    return Buffer.from(data);
  }

  async writeFile(path: string, data: Buffer | string, mode: number): Promise<void> {
    const dir = path.slice(0, path.lastIndexOf('/')) || '/';
    if (dir !== '/' && !this.dirs.has(dir)) throw Object.assign(new Error(`open ${path}: no such file or directory`), { code: 'ENOENT' });
    this.files.set(path, Buffer.from(data));
    this.modes.set(path, mode);
  }

  write(path: string, text: string): void {
    this.files.set(path, Buffer.from(text));
    const dir = path.slice(0, path.lastIndexOf('/'));
    void this.mkdirAll(dir);
  }
}

export function makePod(overrides: {
  name?: string;
  namespace?: string;
  uid?: string;
  containers?: Partial<V1Container>[];
  initContainers?: Partial<V1Container>[];
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  hostNetwork?: boolean;
  terminationGracePeriodSeconds?: number;
} = {}): V1Pod {
  const fill = (c: Partial<V1Container>, i: number): V1Container => ({
    name: c.name ?? `c${i}`,
    image: c.image ?? 'busybox:1.36',
    imagePullPolicy: c.imagePullPolicy ?? 'IfNotPresent',
    ...c,
  } as V1Container);
  return {
    metadata: {
      name: overrides.name ?? 'web',
      namespace: overrides.namespace ?? 'default',
      uid: overrides.uid ?? 'uid-1',
      labels: { app: 'web' },
      annotations: { note: 'yes' },
    },
    spec: {
      containers: (overrides.containers ?? [{ name: 'app' }]).map(fill),
      initContainers: overrides.initContainers?.map(fill),
      restartPolicy: overrides.restartPolicy ?? 'Always',
      hostNetwork: overrides.hostNetwork,
      terminationGracePeriodSeconds: overrides.terminationGracePeriodSeconds ?? 30,
    },
  };
}

export function setup(extra: Partial<GenericRuntimeManagerOptions> = {}) {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const runtime = new NamespaceAwareFakeRuntime(clock);
  const images = new FakeImageService(clock);
  images.setImages({ id: 'sha256:busybox', tags: ['busybox:1.36'] });
  const fs = new MemFs();
  const recorder = new RecordingEventRecorder();
  const logger = new RecordingLogger();
  const manager = new GenericRuntimeManager({
    runtimeService: runtime,
    imageService: images,
    clock,
    logger,
    fs,
    recorder,
    podLogsRootDirectory: '/logs',
    ...extra,
  });
  const backoff = containerRestartBackoff(clock);
  return { clock, runtime, images, fs, recorder, logger, manager, backoff };
}

// ---- status builders for computePodActions tables

export function sandboxStatus(opts: Partial<CriSandboxStatus> = {}): CriSandboxStatus {
  return {
    id: 'sandbox-1',
    name: 'web',
    namespace: 'default',
    uid: 'uid-1',
    attempt: 0,
    state: 'SANDBOX_READY',
    createdAt: 1000,
    ip: '10.0.0.5',
    labels: {},
    annotations: {},
    networkNamespace: 'POD',
    ...opts,
  };
}

export function containerStatus(container: V1Container, opts: Partial<ContainerStatus> = {}): ContainerStatus {
  return {
    id: { type: 'fakeRuntime', id: `${container.name}-id` },
    name: container.name,
    state: 'running',
    createdAt: 2000,
    startedAt: 2000,
    exitCode: 0,
    image: container.image ?? '',
    imageId: 'sha256:x',
    hash: hashContainer(container),
    restartCount: 0,
    ...opts,
  };
}

export function podStatus(pod: V1Pod, sandboxes: CriSandboxStatus[], containers: ContainerStatus[]): PodStatus {
  return {
    id: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: pod.metadata!.namespace!,
    ips: sandboxes[0]?.ip ? [sandboxes[0].ip] : [],
    sandboxStatuses: sandboxes,
    containerStatuses: containers,
    timestamp: 0,
  };
}
