import t from 'tap';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { GenericRuntimeManager } from '../src/index.js';
import { makePod, NamespaceAwareFakeRuntime, setup } from './helpers.js';

/**
 * Records when each call starts and when it returns, with a macrotask between the two, so calls that are in flight
 * together show up interleaved (a call made only after another returned starts after its end).
 */
class TimelineRuntime extends NamespaceAwareFakeRuntime {
  readonly timeline: string[] = [];
  /** With evented PLEG support: PodSandboxStatus carries the pod's container statuses and a timestamp. */
  podEvents = false;

  private async traced<T>(name: string, call: () => Promise<T>): Promise<T> {
    this.timeline.push(`start ${name}`);
    await new Promise((resolve) => setImmediate(resolve));
    try {
      return await call();
    } finally {
      this.timeline.push(`end ${name}`);
    }
  }

  override listPodSandbox(...args: Parameters<NamespaceAwareFakeRuntime['listPodSandbox']>) {
    return this.traced('ListPodSandbox', () => super.listPodSandbox(...args));
  }
  override listContainers(...args: Parameters<NamespaceAwareFakeRuntime['listContainers']>) {
    return this.traced('ListContainers', () => super.listContainers(...args));
  }
  override containerStatus(...args: Parameters<NamespaceAwareFakeRuntime['containerStatus']>) {
    return this.traced('ContainerStatus', () => super.containerStatus(...args));
  }
  override async podSandboxStatus(...args: Parameters<NamespaceAwareFakeRuntime['podSandboxStatus']>): Promise<runtimeapi.PodSandboxStatusResponse> {
    const response = await this.traced('PodSandboxStatus', () => super.podSandboxStatus(...args));
    if (!this.podEvents) return { ...response, containersStatuses: [], timestamp: 0 };
    const sandboxId = args[0];
    const containers = [...this.containers.values()].filter((c) => c.sandboxId === sandboxId).map((c) => structuredClone(c.status));
    return { ...response, containersStatuses: containers, timestamp: 1_767_225_700_123_000_000 };
  }
}

async function started(extra: Parameters<typeof setup>[0] = {}) {
  const s = setup(extra);
  const runtime = new TimelineRuntime(s.clock);
  const manager = new GenericRuntimeManager({ runtimeService: runtime, imageService: s.images, clock: s.clock, logger: s.logger, fs: s.fs, podLogsRootDirectory: '/logs', ...extra });
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }] });
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], s.backoff);
  t.notOk(result.syncError);
  runtime.timeline.length = 0;
  runtime.resetCalls();
  return { ...s, runtime, manager, pod };
}

t.test('GetPodStatus asks for sandboxes and containers at once, then every status at once: two round trips', async (t) => {
  const { runtime, manager } = await started();
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.same(status.containerStatuses.map((c) => [c.name, c.state]).sort(), [['a', 'running'], ['b', 'running']]);
  t.same(status.sandboxStatuses.map((s) => s.state), ['SANDBOX_READY']);
  t.equal(status.timestamp, Date.parse('2026-01-01T00:00:00Z'), 'the kubelet clock when the runtime was asked');
  const at = (entry: string) => runtime.timeline.indexOf(entry);
  t.ok(at('start ListContainers') < at('end ListPodSandbox'), 'the containers are listed while the sandboxes are');
  t.equal(runtime.timeline.filter((e) => e === 'start ContainerStatus').length, 2);
  t.ok(runtime.timeline.lastIndexOf('start ContainerStatus') < at('end ContainerStatus'), 'both container statuses in flight together');
  t.notOk(runtime.podEvents);
});

t.test('GetPodStatus reports errors in Go order and leaves out what was removed between listing and status', async (t) => {
  const { runtime, manager } = await started();
  runtime.injectError('podSandboxStatus', 'Unavailable');
  runtime.injectError('containerStatus', 'Internal');
  await t.rejects(manager.getPodStatus('uid-1', 'web', 'default'), { code: 'Unavailable' }, "the sandbox's error, as Go meets it first");
  // The containers' calls were in flight already: let them finish before the next case injects its errors.
  while (runtime.timeline.filter((e) => e === 'end ContainerStatus').length < 2) await new Promise((resolve) => setImmediate(resolve));

  runtime.clearErrors();
  runtime.injectError('containerStatus', 'NotFound');
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.equal(status.containerStatuses.length, 1, 'a container gone between ListContainers and ContainerStatus is left out');

  runtime.clearErrors();
  runtime.injectError('containerStatus', 'Internal');
  await t.rejects(manager.getPodStatus('uid-1', 'web', 'default'), { code: 'Internal' });
});

t.test('EventedPLEG: the containers and the timestamp come from the newest sandbox status, nothing is listed', async (t) => {
  const { runtime, manager } = await started({ eventedPleg: true });
  runtime.podEvents = true;
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.same(runtime.called, ['listPodSandbox', 'podSandboxStatus'], 'one round trip less: no ListContainers, no ContainerStatus');
  t.same(status.containerStatuses.map((c) => [c.name, c.state, c.id.type]).sort(), [['a', 'running', 'fakeRuntime'], ['b', 'running', 'fakeRuntime']]);
  t.equal(status.timestamp, 1_767_225_700_123, "the runtime's timestamp, in ms (Go: resp.Timestamp)");
});

t.test('EventedPLEG with a runtime that sets no timestamp: the containers are listed, as in Go', async (t) => {
  const { runtime, manager } = await started({ eventedPleg: true });
  runtime.podEvents = false;
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.same(runtime.called, ['listPodSandbox', 'podSandboxStatus', 'listContainers', 'containerStatus', 'containerStatus']);
  t.same(status.containerStatuses.map((c) => c.name).sort(), ['a', 'b']);
  t.equal(status.timestamp, Date.parse('2026-01-01T00:00:00Z'));
});

t.test('SyncPod builds the sandbox config once for a new sandbox: the DNS config is read once', async (t) => {
  let dnsReads = 0;
  const s = setup({
    dnsConfigFor: () => {
      dnsReads++;
      return { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] };
    },
  });
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }] });
  const result = await s.manager.syncPod(pod, await s.manager.getPodStatus('uid-1', 'web', 'default'), [], s.backoff);
  t.notOk(result.syncError);
  t.equal(dnsReads, 1, 'one sandbox config for RunPodSandbox and every CreateContainer');
  const run = s.runtime.calls.find((c) => c.method === 'runPodSandbox')!.args[0] as runtimeapi.PodSandboxConfigInit;
  const creates = s.runtime.calls.filter((c) => c.method === 'createContainer').map((c) => c.args[2] as runtimeapi.PodSandboxConfigInit);
  t.equal(creates.length, 2);
  for (const config of creates) t.same(config, run, 'containers are created with the config the sandbox was run with');
});
