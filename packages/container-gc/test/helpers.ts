import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { KUBERNETES_CONTAINER_NAME_LABEL, KUBERNETES_POD_NAME_LABEL, KUBERNETES_POD_NAMESPACE_LABEL, KUBERNETES_POD_UID_LABEL } from '@kubelet-ts/core';
import { ContainerGC, type ContainerGCOptions, type ContainerGCPolicy } from '../src/index.js';
import { FakePodStateProvider } from '../src/testing.js';

export const MINUTE = 60_000;

export interface Env {
  clock: FakeClock;
  runtime: FakeRuntimeService;
  pods: FakePodStateProvider;
  logger: RecordingLogger;
  recorder: RecordingEventRecorder;
  logRoot: string;
  gc: ContainerGC;
}

export function setup(
  t: { teardown(fn: () => void): void },
  policy: Partial<ContainerGCPolicy> = {},
  extra: Partial<ContainerGCOptions> = {},
): Env {
  const clock = new FakeClock();
  const runtime = new FakeRuntimeService(clock);
  const pods = new FakePodStateProvider();
  const logger = new RecordingLogger();
  const recorder = new RecordingEventRecorder();
  const logRoot = mkdtempSync(join(tmpdir(), 'container-gc-'));
  t.teardown(() => rmSync(logRoot, { recursive: true, force: true }));
  const gc = new ContainerGC({
    runtimeService: runtime,
    podStateProvider: pods,
    policy,
    podLogsRootDirectory: logRoot,
    clock,
    logger,
    recorder,
    nodeRef: { kind: 'Node', name: 'node-a', uid: 'node-a' },
    // What the runtime manager's killContainer comes down to when the annotations say nothing.
    killContainer: (c) => runtime.stopContainer(c.id, 2),
    ...extra,
  });
  return { clock, runtime, pods, logger, recorder, logRoot, gc };
}

export function sandboxConfig(uid: string, attempt = 0, logDirectory?: string): runtimeapi.PodSandboxConfigInit {
  return {
    metadata: { name: `pod-${uid}`, namespace: 'ns', uid, attempt },
    labels: { [KUBERNETES_POD_UID_LABEL]: uid, [KUBERNETES_POD_NAME_LABEL]: `pod-${uid}`, [KUBERNETES_POD_NAMESPACE_LABEL]: 'ns' },
    logDirectory,
  };
}

/** A sandbox for pod `uid`; `ready` false stops it. */
export async function addSandbox(runtime: FakeRuntimeService, uid: string, attempt = 0, ready = true): Promise<string> {
  const id = await runtime.runPodSandbox(sandboxConfig(uid, attempt));
  if (!ready) await runtime.stopPodSandbox(id);
  return id;
}

/** A container `name` (attempt n) of pod `uid` in sandbox `sandboxId`, in `state`. */
export async function addContainer(
  runtime: FakeRuntimeService,
  sandboxId: string,
  uid: string,
  name: string,
  attempt: number,
  state: 'running' | 'exited' | 'created' | 'unknown' = 'exited',
  logDirectory?: string,
): Promise<string> {
  const config: runtimeapi.ContainerConfigInit = {
    metadata: { name, attempt },
    image: { image: 'busybox' },
    labels: { [KUBERNETES_POD_UID_LABEL]: uid, [KUBERNETES_CONTAINER_NAME_LABEL]: name, [KUBERNETES_POD_NAME_LABEL]: `pod-${uid}`, [KUBERNETES_POD_NAMESPACE_LABEL]: 'ns' },
    logPath: logDirectory ? `${name}/${attempt}.log` : undefined,
  };
  const id = await runtime.createContainer(sandboxId, config, sandboxConfig(uid, 0, logDirectory));
  if (state === 'running' || state === 'exited') await runtime.startContainer(id);
  if (state === 'exited') runtime.setContainerState(id, 'CONTAINER_EXITED', 0);
  if (state === 'unknown') runtime.containers.get(id)!.status.state = 'CONTAINER_UNKNOWN';
  return id;
}

export function remainingContainers(runtime: FakeRuntimeService): string[] {
  return [...runtime.containers.keys()].sort();
}

export function removedInOrder(runtime: FakeRuntimeService): string[] {
  return runtime.calls.filter((c) => c.method === 'removeContainer').map((c) => c.args[0] as string);
}

export function mkdirs(root: string, ...names: string[]): void {
  for (const name of names) mkdirSync(join(root, name), { recursive: true });
}

/** Waits (in real time, up to 5 s) until cond holds: for loops doing real file I/O under a FakeClock. */
export async function waitFor(cond: () => boolean, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
