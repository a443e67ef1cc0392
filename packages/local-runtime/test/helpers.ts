import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteImageService, RemoteRuntimeService, type runtimeapi as api } from '@kubelet-ts/cri-client';
import { LocalRuntime, type LocalRuntimeOptions } from '../src/index.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Harness {
  runtime: LocalRuntime;
  rs: RemoteRuntimeService;
  is: RemoteImageService;
  dir: string;
  logDir: string;
}

/** A short temp dir (unix socket paths are limited to ~107 bytes). */
export function tempDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'lrt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts a local runtime in a temp dir with gRPC clients; all are torn down with the test. */
export async function startRuntime(t: Teardown, options: Partial<LocalRuntimeOptions> = {}): Promise<Harness> {
  const dir = tempDir(t);
  const runtime = new LocalRuntime({
    socketPath: join(dir, 'cri.sock'),
    rootDir: join(dir, 'root'),
    mode: 'process',
    stopGracePeriodMs: 500,
    ...options,
  });
  await runtime.start();
  const rs = new RemoteRuntimeService({ endpoint: runtime.endpoint, timeoutMs: 20_000 });
  const is = new RemoteImageService({ endpoint: runtime.endpoint, timeoutMs: 20_000 });
  t.teardown(async () => {
    rs.close();
    is.close();
    await runtime.stop();
  });
  return { runtime, rs, is, dir, logDir: join(dir, 'pods') };
}

let podCounter = 0;

export function sandboxConfig(
  name = `pod-${++podCounter}`,
  extra: Partial<api.PodSandboxConfigInit> & { logDirectory?: string } = {},
): api.PodSandboxConfigInit {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, attempt: 0 },
    hostname: name,
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default' },
    annotations: { note: 'sandbox' },
    ...extra,
  };
}

export function containerConfig(name: string, argv: string[], extra: Partial<api.ContainerConfigInit> = {}): api.ContainerConfigInit {
  return {
    metadata: { name, attempt: 0 },
    image: { image: 'busybox' },
    command: argv.slice(0, 1),
    args: argv.slice(1),
    labels: { 'io.kubernetes.container.name': name },
    annotations: { 'io.kubernetes.container.hash': 'abc' },
    logPath: `${name}/0.log`,
    ...extra,
  };
}

/** Runs sandbox + container; returns both ids. */
export async function runContainer(
  h: Harness,
  name: string,
  argv: string[],
  extra: Partial<api.ContainerConfigInit> = {},
): Promise<{ sandboxId: string; containerId: string; sandbox: api.PodSandboxConfigInit }> {
  const sandbox = sandboxConfig(undefined, { logDirectory: join(h.logDir, name) });
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, containerConfig(name, argv, extra), sandbox);
  await h.rs.startContainer(containerId);
  return { sandboxId, containerId, sandbox };
}

/** Polls until fn returns a truthy value, failing after timeoutMs. */
export async function waitFor<T>(fn: () => Promise<T> | T, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function waitExited(h: Harness, containerId: string): Promise<api.ContainerStatus> {
  return waitFor(
    async () => {
      const { status } = await h.rs.containerStatus(containerId);
      return status && status.state === 'CONTAINER_EXITED' ? status : undefined;
    },
    10_000,
    `container ${containerId} to exit`,
  );
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
