import t from 'tap';
import { PodCache, type PodLifecycleEvent } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { UnimplementedError, type runtimeapi } from '@kubelet-ts/cri-client';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { GenericRuntimeManager } from '@kubelet-ts/runtime-manager';
import { EventedPLEG, GenericPLEG } from '../src/index.js';
import { drain, FakeContainerRuntime } from './helpers.js';

/**
 * The runtime manager the kubelet gives the evented PLEG, over the fake CRI runtime: events are
 * mapped by the same code as GetPodStatus. The fake runtime reports the name `runtimeName`, so
 * container ids match those of the generic PLEG's FakeContainerRuntime ('fake').
 */
function runtimeManager(clock: FakeClock, logger: RecordingLogger, runtimeService: FakeRuntimeService, runtimeName = 'fake'): GenericRuntimeManager {
  runtimeService.versionResponse = { ...runtimeService.versionResponse, runtimeName };
  return new GenericRuntimeManager({ runtimeService, imageService: new FakeImageService(clock), clock, logger });
}

function setup(opts: { retryPeriodMs?: number; channelCapacity?: number } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtimeService = new FakeRuntimeService(clock);
  // The generic PLEG relists a FakeContainerRuntime (tests count its getPods calls and script its pods).
  const runtime = new FakeContainerRuntime();
  runtime.now = () => clock.now();
  const cache = new PodCache({ clock });
  const generic = new GenericPLEG({ runtime, cache, clock, logger, channelCapacity: opts.channelCapacity });
  const manager = runtimeManager(clock, logger, runtimeService);
  const pleg = new EventedPLEG({ runtimeService, runtime: manager, cache, genericPleg: generic, clock, logger, retryPeriodMs: opts.retryPeriodMs });
  return { clock, logger, runtimeService, runtime, manager, cache, generic, pleg };
}

const sandboxConfig = { metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 } };

async function createPod(runtimeService: FakeRuntimeService): Promise<{ sandboxId: string; containerId: string }> {
  const sandboxId = await runtimeService.runPodSandbox(sandboxConfig);
  const containerId = await runtimeService.createContainer(
    sandboxId,
    {
      metadata: { name: 'app', attempt: 0 },
      image: { image: 'busybox:latest' },
      labels: { 'io.kubernetes.container.name': 'app' },
      annotations: { 'io.kubernetes.container.hash': 'abc123', 'io.kubernetes.container.restartCount': '2' },
    },
    sandboxConfig,
  );
  return { sandboxId, containerId };
}

const ev = (type: PodLifecycleEvent['type'], data: string): PodLifecycleEvent => ({ id: 'uid-1', type, data });

t.test('events become cache entries and lifecycle events', async (t) => {
  const { clock, runtimeService, cache, generic, pleg } = setup();
  pleg.start();
  await clock.flush();
  t.equal(pleg.mode, 'evented');
  t.same(generic.relistDuration, { relistPeriodMs: 300_000, relistThresholdMs: 600_000 }, 'the generic PLEG relists rarely');
  t.ok(generic.running, 'start() starts the generic PLEG too');

  clock.step(10);
  const { containerId } = await createPod(runtimeService);
  await clock.flush();
  t.same(drain(generic.eventChannel), [], 'CREATED only updates the cache');
  let status = cache.get('uid-1').status;
  t.equal(status.name, 'web');
  t.equal(status.namespace, 'default');
  t.same(status.ips, ['192.168.192.168']);
  t.equal(status.containerStatuses.length, 1);
  t.match(status.containerStatuses[0], {
    id: { type: 'fake', id: containerId },
    name: 'app',
    state: 'created',
    hash: 'abc123',
    restartCount: 2,
    image: 'busybox:latest',
  });
  const modified = cache.getEntry('uid-1')?.modified ?? NaN;
  t.equal(modified, clock.now(), 'stored at the event timestamp');
  t.equal(modified, cache.get('uid-1').status.timestamp, 'the cache entry is as new as the status');

  clock.step(10);
  await runtimeService.startContainer(containerId);
  await clock.flush();
  t.same(drain(generic.eventChannel), [ev('ContainerStarted', containerId)]);
  status = cache.get('uid-1').status;
  t.equal(status.containerStatuses[0].state, 'running');
  t.equal(status.containerStatuses[0].startedAt, clock.now());

  clock.step(10);
  runtimeService.setContainerState(containerId, 'CONTAINER_EXITED', 3, 'Error');
  await clock.flush();
  t.same(drain(generic.eventChannel), [ev('ContainerDied', containerId)]);
  t.match(cache.get('uid-1').status.containerStatuses[0], { state: 'exited', exitCode: 3, reason: 'Error', finishedAt: clock.now() });

  clock.step(10);
  await runtimeService.removeContainer(containerId);
  await clock.flush();
  t.same(drain(generic.eventChannel), [ev('ContainerDied', containerId), ev('ContainerRemoved', containerId)]);
  t.same(cache.get('uid-1').status.containerStatuses, [], 'the removed container left the cache');
  t.equal(pleg.stats.eventsReceived, 4);
  t.equal(pleg.lastEventLatencyMs(), 0);

  await pleg.stop();
  t.equal(pleg.mode, 'stopped');
  t.notOk(generic.running);
  t.equal(clock.pendingTimers(), 0, 'stop() leaves no timers');
  t.same(generic.relistDuration, { relistPeriodMs: 1000, relistThresholdMs: 180_000 }, 'the generic PLEG gets its own period back');
});

t.test('the cache global timestamp moves every 2 s while events flow', async (t) => {
  const { clock, cache, pleg } = setup();
  pleg.start();
  await clock.flush();
  const start = clock.now();
  t.equal(cache.timestamp(), start);
  const waiter = cache.getNewerThan('quiet-pod', start);
  await clock.advance(2000);
  t.equal(cache.timestamp(), start + 2000);
  t.equal((await waiter).status.id, 'quiet-pod', 'a pod worker is never stuck on a quiet pod');
  await pleg.stop();
});

class ScriptedRuntimeService {
  readonly streams: { push(e: runtimeapi.ContainerEventResponse): void; fail(err: Error): void }[] = [];
  getContainerEvents(options?: { signal?: AbortSignal }): AsyncIterable<runtimeapi.ContainerEventResponse> {
    const queue: runtimeapi.ContainerEventResponse[] = [];
    let error: Error | undefined;
    let wake: (() => void) | undefined;
    this.streams.push({
      push: (e) => {
        queue.push(e);
        wake?.();
      },
      fail: (err) => {
        error = err;
        wake?.();
      },
    });
    const signal = options?.signal;
    return {
      async *[Symbol.asyncIterator]() {
        const onAbort = () => wake?.();
        signal?.addEventListener('abort', onAbort);
        try {
          for (;;) {
            while (queue.length > 0) yield queue.shift()!;
            if (error) throw error;
            if (signal?.aborted) return;
            await new Promise<void>((resolve) => (wake = resolve));
          }
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      },
    };
  }
}

function sandboxEvent(
  type: runtimeapi.ContainerEventType,
  containerId: string,
  createdAtMs: number,
  containers: Partial<runtimeapi.ContainerStatus>[] = [],
): runtimeapi.ContainerEventResponse {
  return {
    containerId,
    containerEventType: type,
    createdAt: createdAtMs * 1e6,
    podSandboxStatus: {
      id: 'sb1',
      metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 },
      state: 'SANDBOX_READY',
      createdAt: 0,
      network: { ip: '10.1.0.5', additionalIps: [{ ip: 'fd00::5' }] },
      linux: null,
      labels: {},
      annotations: {},
      runtimeHandler: '',
    },
    containersStatuses: containers.map((c) => ({
      id: 'c1',
      metadata: { name: 'app', attempt: 0 },
      state: 'CONTAINER_RUNNING',
      createdAt: 0,
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      image: null,
      imageRef: '',
      reason: '',
      message: '',
      labels: {},
      annotations: {},
      mounts: [],
      logPath: '',
      resources: null,
      imageId: '',
      user: null,
      imageSource: '',
      ...c,
    })),
  };
}

t.test('stale events, sandbox deletion and events without a sandbox', async (t) => {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtimeService = new ScriptedRuntimeService();
  const runtime = new FakeContainerRuntime();
  const cache = new PodCache({ clock });
  const generic = new GenericPLEG({ runtime, cache, clock, logger });
  // Container ids carry the name the runtime reports in Version.
  const manager = runtimeManager(clock, logger, new FakeRuntimeService(clock), 'containerd');
  const pleg = new EventedPLEG({ runtimeService, runtime: manager, cache, genericPleg: generic, clock, logger });
  pleg.start();
  await clock.flush();
  const stream = runtimeService.streams[0];
  const now = clock.now();

  stream.push(sandboxEvent('CONTAINER_STARTED_EVENT', 'c1', now, [{}]));
  await clock.flush();
  t.same(drain(generic.eventChannel), [ev('ContainerStarted', 'c1')]);
  t.same(cache.get('uid-1').status.ips, ['10.1.0.5', 'fd00::5']);
  t.equal(cache.get('uid-1').status.containerStatuses[0].id.type, 'containerd');

  stream.push(sandboxEvent('CONTAINER_STOPPED_EVENT', 'c1', now - 5, [{ state: 'CONTAINER_EXITED' }]));
  await clock.flush();
  t.same(drain(generic.eventChannel), [], 'an event older than the cache entry is ignored');
  t.equal(cache.get('uid-1').status.containerStatuses[0].state, 'running');

  const noSandbox = { ...sandboxEvent('CONTAINER_STOPPED_EVENT', 'c1', now + 1), podSandboxStatus: null };
  stream.push(noSandbox);
  await clock.flush();
  t.same(drain(generic.eventChannel), []);
  t.ok(logger.find(/nil PodSandboxStatus/));

  stream.push(sandboxEvent('CONTAINER_DELETED_EVENT', 'sb1', now + 2));
  await clock.flush();
  t.same(drain(generic.eventChannel), [ev('ContainerDied', 'sb1'), ev('ContainerRemoved', 'sb1')]);
  t.equal(cache.getEntry('uid-1'), undefined, 'a deleted sandbox deletes the cached pod');
  await pleg.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('Unimplemented stream: relist on each failure, fall back after 5, retry later', async (t) => {
  const { clock, runtimeService, runtime, generic, pleg, logger } = setup();
  runtimeService.injectError('getContainerEvents', new UnimplementedError({ rpc: 'RuntimeService/GetContainerEvents', code: 'Unimplemented', details: 'unknown method GetContainerEvents' }), {
    persistent: true,
  });
  pleg.start();
  await clock.flush();
  t.equal(pleg.mode, 'evented');
  const relistsAtStart = runtime.getPodsCalls;

  await clock.advance(4000);
  t.equal(pleg.stats.streamErrors, 5);
  t.equal(pleg.mode, 'fallback');
  t.equal(runtime.getPodsCalls - relistsAtStart >= 5, true, 'each failure forced a relist');
  t.same(generic.relistDuration, { relistPeriodMs: 1000, relistThresholdMs: 180_000 });
  t.ok(logger.find('Fall back to Generic PLEG relisting since Evented PLEG is not working'));
  t.equal(pleg.stats.fallbacks, 1);

  // relisting every second now
  const before = runtime.getPodsCalls;
  await clock.advance(10_000);
  t.ok(runtime.getPodsCalls - before >= 10, `relists every second in fallback (${runtime.getPodsCalls - before})`);
  t.equal(pleg.stats.streamErrors, 5, 'no stream attempt before the retry period');

  // the runtime gained the RPC; the retry after 5 min connects, the first event resumes evented mode
  runtimeService.clearErrors();
  await clock.advance(300_000);
  t.equal(pleg.stats.streamConnections, 6);
  t.equal(pleg.mode, 'fallback', 'still relisting until an event proves the stream works');
  await createPod(runtimeService);
  await clock.flush();
  t.equal(pleg.mode, 'evented');
  t.same(generic.relistDuration, { relistPeriodMs: 300_000, relistThresholdMs: 600_000 });

  await pleg.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('retryPeriodMs Infinity: the fallback is permanent, as in Go', async (t) => {
  const { clock, runtimeService, pleg } = setup({ retryPeriodMs: Infinity });
  runtimeService.injectError('getContainerEvents', 'Unimplemented', { persistent: true });
  pleg.start();
  await clock.advance(10_000);
  t.equal(pleg.mode, 'fallback');
  t.equal(pleg.stats.streamConnections, 5);
  await clock.advance(3_600_000, 60_000);
  t.equal(pleg.stats.streamConnections, 5);
  await pleg.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('a stream that ends is reopened; a working stream resets the failure count', async (t) => {
  const { clock, runtimeService, pleg } = setup();
  pleg.start();
  await clock.flush();
  for (let i = 0; i < 8; i++) {
    runtimeService.endEventStreams();
    await clock.flush();
    await clock.advance(1000);
    await createPod(runtimeService).catch(() => undefined); // an event on the new stream
    await clock.flush();
  }
  t.equal(pleg.stats.streamErrors, 8);
  t.equal(pleg.mode, 'evented', 'failures separated by working streams never add up to a fallback');
  await pleg.stop();
});

t.test('healthy(): a full channel is unhealthy, otherwise the generic answer', async (t) => {
  const { clock, runtimeService, pleg } = setup({ channelCapacity: 1 });
  t.equal(pleg.healthy().error?.message, 'pleg has yet to be successful');
  pleg.start();
  await clock.flush();
  t.same(pleg.healthy(), { healthy: true });
  const { containerId } = await createPod(runtimeService);
  await runtimeService.startContainer(containerId);
  await clock.flush();
  const health = pleg.healthy();
  t.equal(health.healthy, false);
  t.equal(health.error?.message, 'EventedPLEG: pleg event channel capacity is full with 1 events');
  await pleg.stop();
});

t.test('relist and updateCache delegate to the generic PLEG', async (t) => {
  const { runtime, cache, pleg } = setup();
  runtime.setPod({ uid: 'p', containers: [{ id: 'c', state: 'running' }] });
  await pleg.relist();
  t.equal(runtime.getPodsCalls, 1);
  t.equal(cache.get('p').status.containerStatuses.length, 1);
  const result = await pleg.updateCache(undefined, 'p');
  t.equal(result.updated, true);
  t.equal(pleg.droppedEvents, 0);
  let count = 0;
  const controller = new AbortController();
  controller.abort();
  for await (const _ of pleg.watch({ signal: controller.signal })) count++;
  t.equal(count, 0);
});

t.test('refreshPodStatus inspects one pod for a pod worker while events flow, and declines otherwise', async (t) => {
  const { clock, runtime, cache, pleg } = setup();
  runtime.setPod({ uid: 'p', containers: [{ id: 'c', state: 'running' }] });
  t.equal(await pleg.refreshPodStatus({ uid: 'p', name: 'web', namespace: 'default' }), false, 'not started: nothing inspected');
  t.equal(cache.getEntry('p'), undefined);
  pleg.start();
  await clock.flush();
  t.equal(pleg.mode, 'evented');
  clock.step(1000);
  t.equal(await pleg.refreshPodStatus({ uid: 'p', name: 'web', namespace: 'default' }), true);
  t.same(cache.get('p').status.containerStatuses.map((c) => c.state), ['running'], 'the runtime was asked');
  t.equal(cache.getEntry('p')?.modified, clock.now(), 'stamped with the time of the inspection');
  await pleg.stop();
  t.equal(await pleg.refreshPodStatus({ uid: 'p', name: 'web', namespace: 'default' }), false, 'stopped');
});

t.test('the runtime generates each status; failures are logged and skipped, events stay in order', async (t) => {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtimeService = new ScriptedRuntimeService();
  const cache = new PodCache({ clock });
  const generic = new GenericPLEG({ runtime: new FakeContainerRuntime(), cache, clock, logger });
  const real = runtimeManager(clock, logger, new FakeRuntimeService(clock), 'containerd');
  const calls: string[] = [];
  let gate: Promise<void> | undefined;
  const runtime = {
    type: () => 'containerd',
    async generatePodStatus(event: runtimeapi.ContainerEventResponse) {
      calls.push(event.containerEventType);
      if (gate) await gate;
      if (event.containerEventType === 'CONTAINER_CREATED_EVENT') throw new Error('runtime went away');
      return real.generatePodStatus(event);
    },
  };
  const pleg = new EventedPLEG({ runtimeService, runtime, cache, genericPleg: generic, clock, logger });
  pleg.start();
  await clock.flush();
  const stream = runtimeService.streams[0];
  const now = clock.now();

  stream.push(sandboxEvent('CONTAINER_CREATED_EVENT', 'c1', now, [{ state: 'CONTAINER_CREATED' }]));
  await clock.flush();
  t.equal(cache.getEntry('uid-1'), undefined, 'no status, nothing cached');
  t.ok(logger.find(/error generating pod status from the received event/), 'the failure is logged');

  // The first status is slow; the second event waits for it instead of overtaking it.
  let open!: () => void;
  gate = new Promise<void>((resolve) => (open = resolve));
  stream.push(sandboxEvent('CONTAINER_STARTED_EVENT', 'c1', now + 1, [{}]));
  stream.push(sandboxEvent('CONTAINER_STOPPED_EVENT', 'c1', now + 2, [{ state: 'CONTAINER_EXITED', exitCode: 1 }]));
  await clock.flush();
  t.same(calls, ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT'], 'one event at a time');
  gate = undefined;
  open();
  await clock.flush();
  t.same(calls, ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT']);
  t.same(drain(generic.eventChannel), [ev('ContainerStarted', 'c1'), ev('ContainerDied', 'c1')], 'in arrival order, after a failed one');
  t.match(cache.get('uid-1').status.containerStatuses[0], { id: { type: 'containerd', id: 'c1' }, state: 'exited', exitCode: 1 });
  t.equal(pleg.stats.eventsReceived, 3);
  t.equal(pleg.stats.eventsSkipped, 1, 'the event whose status could not be generated');

  // Without sandbox metadata the runtime is not asked (Go checks before GeneratePodStatus).
  const noMetadata = sandboxEvent('CONTAINER_STOPPED_EVENT', 'c1', now + 3);
  noMetadata.podSandboxStatus = { ...noMetadata.podSandboxStatus!, metadata: null };
  stream.push(noMetadata);
  await clock.flush();
  t.equal(calls.length, 3);
  t.ok(logger.find(/nil PodSandboxStatus or PodSandboxStatus.Metadata/));
  t.equal(pleg.stats.eventsSkipped, 2, 'and the event without sandbox metadata');
  t.equal(pleg.mode, 'evented', 'the stream goes on');
  await pleg.stop();
  t.equal(clock.pendingTimers(), 0);
});
