// The event recorder with the in-memory client and a fake clock.
import t from 'tap';
import type { EventRecorder as CoreEventRecorder } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { KubeletEventRecorder, goSprintf, nodeReference, type EventRecorderOptions } from '../src/index.js';
import { FakeKubeClient, RecordingEventRecorder } from '../src/testing.js';
import { T0, makePod } from './helpers.js';

function setup(t: { teardown(fn: () => unknown): void }, opts: Partial<EventRecorderOptions> = {}) {
  const clock = new FakeClock(T0);
  const client = new FakeKubeClient();
  const logger = new RecordingLogger();
  const rec = new KubeletEventRecorder({ kubeClient: client, host: 'node-1', clock, logger, random: () => 0.5, ...opts });
  t.teardown(() => rec.stop());
  return { clock, client, logger, rec };
}

const pod = makePod('web');

t.test('an event is a core/v1 Event named <object>.<hex nanos> with the kubelet as source', async (t) => {
  const { client, rec } = setup(t);
  rec.event(pod, 'Normal', 'Pulling', 'Pulling image "busybox:1.36"', { containerName: 'app' });
  await rec.whenIdle();
  const [call] = client.callsOf('createNamespacedEvent');
  const ev = call.body as any;
  t.equal(call.namespace, 'default');
  t.equal(ev.metadata.name, `web.${(BigInt(T0) * 1_000_000n).toString(16)}`);
  t.same(ev.involvedObject, { kind: 'Pod', apiVersion: 'v1', name: 'web', namespace: 'default', uid: 'uid-web', fieldPath: 'spec.containers{app}' });
  t.same(ev.source, { component: 'kubelet', host: 'node-1' });
  t.equal(ev.reportingComponent, 'kubelet');
  t.equal(ev.reportingInstance, 'node-1');
  t.equal(ev.count, 1);
  t.equal(ev.type, 'Normal');
  t.equal(ev.reason, 'Pulling');
  t.equal(ev.firstTimestamp, '2026-01-01T00:00:00.000Z');
  t.equal(ev.eventTime, undefined, 'no MicroTime sent');
  rec.event(pod, 'Normal', 'Pulled', 'done');
  rec.event(pod, 'Normal', 'Created', 'done');
  await rec.whenIdle();
  const names = client.callsOf('createNamespacedEvent').map((c) => c.name);
  t.equal(new Set(names).size, 3, 'unique names within one millisecond');
  rec.event(nodeReference('node-1'), 'Normal', 'NodeReady', 'Node node-1 status is now: NodeReady');
  await rec.whenIdle();
  const nodeEv = client.callsOf('createNamespacedEvent').at(-1)!;
  t.equal(nodeEv.namespace, 'default', 'cluster-scoped objects: events go to default');
  t.same((nodeEv.body as any).involvedObject, { kind: 'Node', name: 'node-1', uid: 'node-1', namespace: '' });
});

t.test('a repeat patches the existing event: count, lastTimestamp, message', async (t) => {
  const { client, rec, clock } = setup(t);
  rec.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
  await rec.whenIdle();
  await clock.advance(30_000);
  rec.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
  await rec.whenIdle();
  const [patch] = client.callsOf('patchNamespacedEvent');
  t.equal(patch.name, client.callsOf('createNamespacedEvent')[0].name);
  t.same(patch.body, { count: 2, lastTimestamp: '2026-01-01T00:00:30Z', message: 'Back-off restarting failed container' });
  const stored = [...client.events.values()][0] as any;
  t.equal(stored.count, 2);
  // The event expired in the API server: the next repeat creates it again.
  client.events.clear();
  rec.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
  await rec.whenIdle();
  t.equal(client.callsOf('createNamespacedEvent').length, 2);
  t.equal(([...client.events.values()][0] as any).count, 3);
});

t.test('ten distinct messages of one reason are combined; 25 events per object, then the spam filter', async (t) => {
  const { client, rec } = setup(t);
  for (let i = 0; i < 12; i++) rec.event(pod, 'Warning', 'Unhealthy', `Readiness probe failed: ${i}`);
  await rec.whenIdle();
  const messages = [...client.events.values()].map((e: any) => `${e.message}#${e.count}`);
  t.equal(messages.filter((m) => m.startsWith('(combined from similar events): ')).length, 1);
  t.ok(messages.includes('(combined from similar events): Readiness probe failed: 11#3'), 'the combined event counts up');
  for (let i = 0; i < 20; i++) rec.event(pod, 'Normal', `R${i}`, 'x');
  await rec.whenIdle();
  t.equal(rec.stats().spamFiltered, 32 - 25);
});

t.test('rate limit: qps/burst, a bounded queue, drops logged', async (t) => {
  const { client, rec, clock, logger } = setup(t, { qps: 1, burst: 3, maxQueuedEvents: 2 });
  for (let i = 0; i < 10; i++) rec.event(makePod(`p${i}`), 'Normal', 'Started', 'Started container app');
  await clock.advance(0);
  t.equal(client.callsOf('createNamespacedEvent').length, 3, 'one in flight and two queued were sent, within the burst');
  t.equal(rec.stats().dropped, 7);
  t.ok(logger.find(/Event dropped/));
  for (let i = 0; i < 3; i++) rec.event(makePod(`q${i}`), 'Normal', 'Started', 'x');
  await clock.advance(0);
  t.equal(client.callsOf('createNamespacedEvent').length, 3, 'burst used up: waiting for a token');
  await clock.advance(1000);
  t.equal(client.callsOf('createNamespacedEvent').length, 4, 'then one a second (qps 1)');
  await clock.advance(2000);
  await rec.whenIdle();
  t.equal(client.callsOf('createNamespacedEvent').length, 6);
});

t.test('transport errors are retried, refusals are not', async (t) => {
  const { client, rec, clock, logger } = setup(t);
  client.failNext('createNamespacedEvent', new Error('connect ECONNREFUSED'), 2);
  rec.event(pod, 'Normal', 'Started', 'x');
  await clock.advance(0);
  t.equal(client.callsOf('createNamespacedEvent').length, 1);
  await clock.advance(5000);
  t.equal(client.callsOf('createNamespacedEvent').length, 2, 'first retry after a random part of 10 s');
  await clock.advance(10_000);
  await rec.whenIdle();
  t.equal(client.events.size, 1);
  client.failNext('createNamespacedEvent', 403);
  rec.event(pod, 'Normal', 'Killing', 'y');
  await rec.whenIdle();
  t.ok(logger.find('Server rejected event (will not retry!)'));
  t.equal(rec.stats().failed, 1);
});

t.test('without a client events are logged; eventf formats Go style; one recorder fits every component', async (t) => {
  const logger = new RecordingLogger();
  const rec = new KubeletEventRecorder({ host: 'node-1', logger, clock: new FakeClock(T0) });
  rec.eventf(pod, 'Warning', 'Failed', 'Error: %v, image %q, %d tries', new Error('boom'), 'busybox', 3);
  const line = logger.find('Event occurred')!;
  t.equal(line.v, 0);
  t.equal(line.kv.message, 'Error: boom, image "busybox", 3 tries');
  t.ok(logger.find(/No api server defined/));
  t.equal(goSprintf('100%% %s', 'done'), '100% done');
  // Every component (runtime manager, prober, pod config, image and container GC) takes core's EventRecorder.
  const components: CoreEventRecorder = rec;
  components.event(pod, 'Normal', 'Created', 'c', { fieldPath: 'spec.containers{app}' });
  components.event(pod, 'Warning', 'FailedValidation', 'bad');
  components.event(nodeReference('node-1'), 'Warning', 'ImageGCFailed', 'gc');
  t.equal(logger.entries.filter((e) => e.msg === 'Event occurred').length, 4);
  await rec.stop();

  const recording = new RecordingEventRecorder();
  recording.eventf(pod, 'Normal', 'Pulled', 'Successfully pulled image %q', 'busybox');
  t.same(recording.lines(), ['Normal Pulled Successfully pulled image "busybox"']);
  t.equal(recording.find('Pulled')!.object, pod);
  recording.event(pod, 'Normal', 'Started', 'Started container app', { containerName: 'app' });
  t.match(recording.involvedObject(recording.find('Started')!), { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{app}' });
});
