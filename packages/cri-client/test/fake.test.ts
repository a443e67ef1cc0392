import t from 'tap';
import { NotFoundError, UnavailableError, UnimplementedError, type runtimeapi } from '../src/index.js';
import { FakeImageService, FakeRuntimeService } from '../src/testing/index.js';

const clock = { t: 1_000, now() { return this.t; } };
const sandboxConfig: runtimeapi.PodSandboxConfigInit = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 },
  labels: { 'io.kubernetes.pod.uid': 'uid-1' },
  logDirectory: '/var/log/pods/default_web_uid-1',
};

t.test('FakeRuntimeService: sandbox and container lifecycle with recorded calls', async (t) => {
  const runtime = new FakeRuntimeService(clock);
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  t.equal(sandboxId, 'web_default_uid-1_0', 'ids are predictable from metadata');
  const containerId = await runtime.createContainer(sandboxId, { metadata: { name: 'app', attempt: 0 }, image: { image: 'busybox' }, logPath: 'app/0.log' }, sandboxConfig);
  t.equal((await runtime.containerStatus(containerId)).status?.state, 'CONTAINER_CREATED');
  t.equal((await runtime.containerStatus(containerId)).status?.logPath, '/var/log/pods/default_web_uid-1/app/0.log');
  clock.t = 2_000;
  await runtime.startContainer(containerId);
  const running = (await runtime.containerStatus(containerId)).status!;
  t.equal(running.state, 'CONTAINER_RUNNING');
  t.equal(running.startedAt, 2_000 * 1_000_000, 'times come from the injected clock, in ns');
  t.same((await runtime.listContainers({ podSandboxId: sandboxId, state: { state: 'CONTAINER_RUNNING' } })).map((c) => c.id), [containerId]);
  t.same(await runtime.listContainers({ labelSelector: { other: 'x' } }), []);
  runtime.setContainerState(containerId, 'CONTAINER_EXITED', 2);
  const exited = (await runtime.containerStatus(containerId)).status!;
  t.same([exited.state, exited.exitCode, exited.reason], ['CONTAINER_EXITED', 2, 'Error']);
  await runtime.stopPodSandbox(sandboxId);
  t.equal((await runtime.listPodSandbox())[0].state, 'SANDBOX_NOTREADY');
  await runtime.removePodSandbox(sandboxId);
  t.equal(runtime.containers.size, 0, 'removing the sandbox removes its containers');
  await runtime.removePodSandbox(sandboxId);
  await t.rejects(runtime.containerStatus(containerId), NotFoundError);
  t.same(runtime.called.slice(0, 4), ['runPodSandbox', 'createContainer', 'containerStatus', 'containerStatus']);
});

t.test('FakeRuntimeService: PodSandboxStatus carries the sandbox containers and the time, as the evented PLEG reads them', async (t) => {
  const runtime = new FakeRuntimeService(clock);
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const other = await runtime.runPodSandbox({ ...sandboxConfig, metadata: { ...sandboxConfig.metadata!, attempt: 1 } });
  const id = await runtime.createContainer(sandboxId, { metadata: { name: 'app' } }, sandboxConfig);
  await runtime.createContainer(other, { metadata: { name: 'app' } }, sandboxConfig);
  await runtime.startContainer(id);
  const response = await runtime.podSandboxStatus(sandboxId);
  t.same(response.containersStatuses.map((s) => [s.id, s.state]), [[id, 'CONTAINER_RUNNING']], 'only this sandbox');
  t.equal(response.timestamp, clock.t * 1_000_000);
  await runtime.removeContainer(id);
  t.same((await runtime.podSandboxStatus(sandboxId)).containersStatuses, []);
});

t.test('FakeRuntimeService: injected errors, one-shot and persistent', async (t) => {
  const runtime = new FakeRuntimeService(clock);
  runtime.injectError('version', 'Unavailable');
  await t.rejects(runtime.version('v1'), UnavailableError);
  t.equal((await runtime.version('v1')).runtimeName, 'fakeRuntime', 'a one-shot error is used once');
  runtime.injectError('status', new Error('boom'), { persistent: true });
  await t.rejects(runtime.status(), /boom/);
  await t.rejects(runtime.status(), /boom/);
  runtime.clearErrors();
  t.equal((await runtime.status()).status?.conditions.length, 2);
});

t.test('FakeRuntimeService: container events stream and end on abort', async (t) => {
  const runtime = new FakeRuntimeService(clock);
  const controller = new AbortController();
  const seen: string[] = [];
  const reading = (async () => {
    for await (const event of runtime.getContainerEvents({ signal: controller.signal })) {
      seen.push(`${event.containerEventType}:${event.containersStatuses.length}`);
      if (seen.length === 4) controller.abort();
    }
  })();
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const id = await runtime.createContainer(sandboxId, { metadata: { name: 'app' } }, sandboxConfig);
  await runtime.startContainer(id);
  await runtime.stopContainer(id, 10);
  await runtime.removeContainer(id);
  await reading;
  t.same(seen, ['CONTAINER_CREATED_EVENT:1', 'CONTAINER_STARTED_EVENT:1', 'CONTAINER_STOPPED_EVENT:1', 'CONTAINER_DELETED_EVENT:0']);

  runtime.injectError('getContainerEvents', 'Unimplemented');
  t.throws(() => runtime.getContainerEvents(), UnimplementedError);
});

t.test('FakeImageService: pull, status, list, remove, unpullable images and fs info', async (t) => {
  const images = new FakeImageService(clock);
  images.unpullable.add('registry.invalid/nope:1');
  const ref = await images.pullImage({ image: 'busybox:1' });
  t.equal((await images.imageStatus({ image: 'busybox:1' })).image?.id, ref);
  t.equal((await images.imageStatus({ image: 'other' })).image, null);
  await t.rejects(images.pullImage({ image: 'registry.invalid/nope:1' }), /failed to pull and unpack image "registry.invalid\/nope:1": not found/);
  images.setImages({ id: 'sha256:big', tags: ['big:1'], size: 10, pinned: true });
  t.equal((await images.listImages()).length, 2);
  t.equal((await images.imageFsInfo()).imageFilesystems[0].usedBytes?.value, 1024 * 1024 + 10);
  await images.removeImage({ image: 'big:1' });
  await images.removeImage({ image: 'big:1' });
  t.same((await images.listImages()).map((i) => i.id), [ref]);
});

t.test('FakeRuntimeService: RuntimeConfig is Unimplemented (containerd 1.6) until a cgroup driver is set', async (t) => {
  const runtime = new FakeRuntimeService(clock);
  const error = await runtime.runtimeConfig().catch((e: unknown) => e);
  t.type(error, UnimplementedError);
  t.match((error as Error).message, 'RuntimeService/RuntimeConfig failed: rpc error: code = Unimplemented');
  runtime.cgroupDriver = 'SYSTEMD';
  t.same(await runtime.runtimeConfig(), { linux: { cgroupDriver: 'SYSTEMD' } });
  t.same(runtime.calls.filter((c) => c.method === 'runtimeConfig').length, 2, 'both calls recorded');
});
