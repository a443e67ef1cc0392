import { mkdirSync, createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { pollUntil } from '@kubelet-ts/core';
import {
  CRI_API_VERSION,
  NotFoundError,
  UnimplementedError,
  isNotFound,
  readCriLog,
  type CriLogEntry,
  type ImageService,
  type RuntimeService,
  type runtimeapi,
} from '@kubelet-ts/cri-client';

export interface CriTarget {
  /** Shown in test names, e.g. "containerd". */
  name: string;
  runtime: RuntimeService;
  images: ImageService;
  /** A busybox image reference the runtime can run (imported or pullable). */
  busyboxImage: string;
  /** Directory the runtime may write pod logs into. */
  logRoot: string;
  /** Whether the runtime implements GetContainerEvents (containerd 1.6 does not). */
  supportsContainerEvents: boolean;
  /** Restarts the runtime daemon (not its containers); the suite proves the same clients reconnect. */
  restartRuntime?: () => Promise<void>;
}

const POLL_MS = 50;
const WAIT_MS = 30_000;

let podCounter = 0;

function sandboxConfig(target: CriTarget, name: string): runtimeapi.PodSandboxConfigInit {
  const uid = `conformance-${process.pid}-${++podCounter}-${Date.now()}`;
  const logDirectory = join(target.logRoot, `default_${name}_${uid}`);
  mkdirSync(logDirectory, { recursive: true });
  return {
    metadata: { name, namespace: 'default', uid, attempt: 0 },
    // A host-network pod needs an empty hostname: without a private UTS namespace runc cannot set one.
    hostname: '',
    logDirectory,
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid, suite: 'cri-conformance' },
    annotations: { 'kubernetes.io/config.source': 'conformance' },
    linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

function containerConfig(target: CriTarget, name: string, script: string): runtimeapi.ContainerConfigInit {
  return {
    metadata: { name, attempt: 0 },
    image: { image: target.busyboxImage },
    command: ['sh', '-c', script],
    envs: [{ key: 'GREETING', value: 'hello from busybox' }],
    labels: { 'io.kubernetes.container.name': name },
    annotations: { 'io.kubernetes.container.restartCount': '0' },
    logPath: `${name}/0.log`,
    linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

async function waitForState(runtime: RuntimeService, id: string, state: runtimeapi.ContainerState): Promise<runtimeapi.ContainerStatus> {
  let last: runtimeapi.ContainerStatus | null = null;
  await pollUntil(async () => {
    last = (await runtime.containerStatus(id)).status;
    return last?.state === state;
  }, POLL_MS, WAIT_MS).catch((error: Error) => {
    throw new Error(`container ${id} did not reach ${state} (last state ${(last as runtimeapi.ContainerStatus | null)?.state}): ${error.message}`);
  });
  return last!;
}

async function readLog(path: string): Promise<CriLogEntry[]> {
  const entries: CriLogEntry[] = [];
  const errors: Error[] = [];
  for await (const entry of readCriLog(createReadStream(path), { onError: (e) => errors.push(e) })) entries.push(entry);
  if (errors.length) throw errors[0];
  return entries;
}

/** Test cleanup: containerd 1.6 answers NotFound for a sandbox already removed, which is fine here. */
async function removeAll(runtime: RuntimeService, sandboxId: string): Promise<void> {
  try {
    await runtime.stopPodSandbox(sandboxId);
    await runtime.removePodSandbox(sandboxId);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** The CRI behaviour the kubelet relies on, checked against one real runtime. */
export function criConformance(t: Test, target: CriTarget): void {
  const { runtime, images } = target;

  t.test(`${target.name}: version and status`, async (t) => {
    const version = await runtime.version(CRI_API_VERSION);
    t.equal(version.runtimeApiVersion, 'v1', `runtime ${version.runtimeName} ${version.runtimeVersion} speaks runtime.v1`);
    t.ok(version.runtimeName.length > 0);
    const status = await runtime.status();
    const ready = status.status?.conditions.find((c) => c.type === 'RuntimeReady');
    t.equal(ready?.status, true, 'RuntimeReady');
  });

  t.test(`${target.name}: image service`, async (t) => {
    let status = await images.imageStatus({ image: target.busyboxImage });
    if (!status.image) {
      await images.pullImage({ image: target.busyboxImage });
      status = await images.imageStatus({ image: target.busyboxImage });
    }
    t.ok(status.image, `${target.busyboxImage} is present`);
    t.ok((status.image?.size ?? 0) > 0, 'image size is reported');
    const listed = await images.listImages();
    t.ok(listed.some((image) => image.id === status.image?.id), 'ListImages includes it');
    const fs = await images.imageFsInfo();
    t.ok(fs.imageFilesystems.length > 0 && fs.imageFilesystems[0].fsId?.mountpoint, 'ImageFsInfo names the image filesystem');
    t.equal((await images.imageStatus({ image: 'localhost/kubelet-ts/does-not-exist:0' })).image, null, 'an absent image has a null status');
  });

  t.test(`${target.name}: a container that prints and exits non-zero`, async (t) => {
    const config = sandboxConfig(target, 'exit-code');
    const sandboxId = await runtime.runPodSandbox(config);
    t.teardown(() => removeAll(runtime, sandboxId));
    const sandbox = await runtime.podSandboxStatus(sandboxId);
    t.equal(sandbox.status?.state, 'SANDBOX_READY');
    t.equal(sandbox.status?.metadata?.uid, config.metadata?.uid, 'sandbox metadata round-trips');
    t.same(sandbox.status?.labels, { ...config.labels, ...sandbox.status?.labels }, 'sandbox labels round-trip');

    const id = await runtime.createContainer(sandboxId, containerConfig(target, 'main', 'echo "$GREETING"; echo to-stderr >&2; exit 3'), config);
    const created = (await runtime.containerStatus(id)).status!;
    t.equal(created.state, 'CONTAINER_CREATED');
    t.equal(created.labels['io.kubernetes.container.name'], 'main', 'container labels round-trip');
    t.equal(created.annotations['io.kubernetes.container.restartCount'], '0', 'container annotations round-trip');

    await runtime.startContainer(id);
    const exited = await waitForState(runtime, id, 'CONTAINER_EXITED');
    t.equal(exited.exitCode, 3, 'exit code');
    // containerd may stamp a very short-lived container's start after its exit, so only presence is checked.
    t.ok(exited.startedAt > 0 && exited.finishedAt > 0, `start and finish times (${exited.startedAt}, ${exited.finishedAt})`);
    t.equal(exited.logPath, join(config.logDirectory!, 'main/0.log'));

    const listed = await runtime.listContainers({ podSandboxId: sandboxId, state: { state: 'CONTAINER_EXITED' } });
    t.same(listed.map((c) => c.id), [id], 'ListContainers filters by sandbox and state');

    const log = await readLog(exited.logPath);
    t.same(
      log.map((entry) => [entry.stream, entry.text]).sort(),
      [['stderr', 'to-stderr'], ['stdout', 'hello from busybox']],
      'both streams in the CRI log format',
    );

    await runtime.removeContainer(id);
    await t.rejects(runtime.containerStatus(id), NotFoundError, 'a removed container is NotFound');
    await runtime.removeContainer(id); // idempotent
  });

  t.test(`${target.name}: exec in a running container, stop and remove`, async (t) => {
    const config = sandboxConfig(target, 'exec');
    const sandboxId = await runtime.runPodSandbox(config);
    t.teardown(() => removeAll(runtime, sandboxId));
    const id = await runtime.createContainer(sandboxId, containerConfig(target, 'sleeper', 'exec sleep 3600'), config);
    await runtime.startContainer(id);
    await waitForState(runtime, id, 'CONTAINER_RUNNING');

    const ok = await runtime.execSync(id, ['sh', '-c', 'echo exec-ok; echo exec-err >&2'], 10);
    t.equal(ok.exitCode, 0);
    t.equal(ok.stdout.toString(), 'exec-ok\n');
    t.equal(ok.stderr.toString(), 'exec-err\n');
    const failing = await runtime.execSync(id, ['sh', '-c', 'exit 7'], 10);
    t.equal(failing.exitCode, 7, 'exec exit code');

    await runtime.stopContainer(id, 2);
    const stopped = await waitForState(runtime, id, 'CONTAINER_EXITED');
    t.not(stopped.exitCode, 0, 'a stopped container reports a non-zero exit code');
    await runtime.stopContainer(id, 2); // idempotent
    await runtime.stopPodSandbox(sandboxId);
    const sandboxes = await runtime.listPodSandbox({ id: sandboxId });
    t.equal(sandboxes[0]?.state, 'SANDBOX_NOTREADY');
    await runtime.removePodSandbox(sandboxId);
    t.same(await runtime.listPodSandbox({ id: sandboxId }), [], 'removed sandbox is gone');
    t.same(await runtime.listContainers({ podSandboxId: sandboxId }), [], 'its containers are gone');
    await runtime.removePodSandbox(sandboxId); // idempotent
  });

  t.test(`${target.name}: container events`, async (t) => {
    const controller = new AbortController();
    t.teardown(() => controller.abort());
    if (!target.supportsContainerEvents) {
      const error = await (async () => {
        for await (const _event of runtime.getContainerEvents({ signal: controller.signal })) break;
      })().catch((e: unknown) => e);
      t.type(error, UnimplementedError, 'a runtime without GetContainerEvents answers Unimplemented');
      return;
    }
    const config = sandboxConfig(target, 'events');
    const seen: string[] = [];
    let containerId = '';
    const reading = (async () => {
      for await (const event of runtime.getContainerEvents({ signal: controller.signal })) {
        // The created event can arrive before CreateContainer's answer: match on the pod, not the id.
        if (event.podSandboxStatus?.metadata?.uid !== config.metadata?.uid) continue;
        seen.push(event.containerEventType);
        if (event.containerEventType === 'CONTAINER_DELETED_EVENT') return;
      }
    })();
    // The stream is open once the server has it; give it a moment to register.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const sandboxId = await runtime.runPodSandbox(config);
    t.teardown(() => removeAll(runtime, sandboxId));
    containerId = await runtime.createContainer(sandboxId, containerConfig(target, 'short', 'exit 0'), config);
    await runtime.startContainer(containerId);
    await waitForState(runtime, containerId, 'CONTAINER_EXITED');
    await runtime.removeContainer(containerId);
    await reading;
    t.same(seen, ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
    t.ok(containerId, 'the events belonged to the container created');
  });

  if (target.restartRuntime) {
    const restart = target.restartRuntime;
    t.test(`${target.name}: the same clients reconnect after the runtime restarts`, async (t) => {
      const config = sandboxConfig(target, 'survivor');
      const sandboxId = await runtime.runPodSandbox(config);
      t.teardown(() => removeAll(runtime, sandboxId));
      const id = await runtime.createContainer(sandboxId, containerConfig(target, 'sleeper', 'exec sleep 3600'), config);
      await runtime.startContainer(id);
      await waitForState(runtime, id, 'CONTAINER_RUNNING');

      await restart();

      let version: runtimeapi.VersionResponse | undefined;
      await pollUntil(async () => {
        version = await runtime.version(CRI_API_VERSION, { timeoutMs: 2000 }).catch(() => undefined);
        return version !== undefined;
      }, 100, WAIT_MS);
      t.equal(version?.runtimeApiVersion, 'v1', 'RuntimeService answers again');
      t.ok((await images.imageStatus({ image: target.busyboxImage })).image, 'ImageService answers again');
      const status = (await runtime.containerStatus(id)).status;
      t.equal(status?.state, 'CONTAINER_RUNNING', 'the container kept running across the restart');
      await runtime.stopContainer(id, 0);
    });
  }
}
