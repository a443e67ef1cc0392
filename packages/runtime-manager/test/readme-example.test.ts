// The README's usage example, run against the CRI fakes instead of a containerd socket.
import t from 'tap';
import { containerRestartBackoff, podSyncError } from '@kubelet-ts/core';
import { FakeClock, RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { FakeImageService } from '@kubelet-ts/cri-client/testing';
import { GenericRuntimeManager } from '../src/index.js';
import { MemFs, NamespaceAwareFakeRuntime, makePod } from './helpers.js';

t.test('README usage', async (t) => {
  const clock = new FakeClock();
  const images = new FakeImageService(clock);
  images.setImages('busybox:1.36');
  const recorder = new RecordingEventRecorder();
  const runtime = new GenericRuntimeManager({
    runtimeService: new NamespaceAwareFakeRuntime(clock),
    imageService: images,
    podLogsRootDirectory: '/var/log/pods',
    recorder,
    clock,
    fs: new MemFs(),
    logger: { info() {}, warn() {}, error() {}, v: () => ({ enabled: false, info() {} }), with() { return this; } },
  });
  await runtime.init();
  t.equal(runtime.type(), 'fakeRuntime');

  const pod = makePod();
  const backoff = containerRestartBackoff(clock);
  const status = await runtime.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!);
  const result = await runtime.syncPod(pod, status, [], backoff);
  t.equal(podSyncError(result), undefined);
  t.same(recorder.events.map((e) => `${e.type} ${e.reason}`), ['Normal Pulled', 'Normal Created', 'Normal Started']);
  t.ok(recorder.events.every((e) => e.object === pod), 'events are about the pod');

  const [running] = (await runtime.getPods(false)).filter((p) => p.id === pod.metadata!.uid);
  await runtime.killPod(pod, running);
  t.same(await runtime.getPods(false), []);
});
