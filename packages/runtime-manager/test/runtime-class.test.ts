import t from 'tap';
import type { Test } from 'tap';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { isNotFound, podSyncError, type ListerWatcher, type WatchEvent } from '@kubelet-ts/core';
import { FakeClock } from '@kubelet-ts/core/testing';
import {
  RuntimeClassManager,
  RuntimeClassNotFoundError,
  RuntimeClassUnavailableError,
  standaloneRuntimeHandler,
  type RuntimeClass,
} from '../src/index.js';
import { makePod, setup } from './helpers.js';

/** A ListerWatcher of RuntimeClasses: list answers from `items` (or waits for `releaseList`); emit() sends watch events. */
class FakeRuntimeClasses implements ListerWatcher<RuntimeClass> {
  items: RuntimeClass[] = [];
  lists = 0;
  private heldList: (() => void) | undefined;
  private resolveListStarted!: () => void;
  /** Resolves once list() was called. */
  readonly listStarted = new Promise<void>((resolve) => (this.resolveListStarted = resolve));
  private onEvent: ((event: WatchEvent<RuntimeClass>) => void) | undefined;
  private watching: (() => void) | undefined;
  readonly watchStarted: Promise<void>;
  private resolveWatchStarted!: () => void;

  constructor(private readonly holdList = false) {
    this.watchStarted = new Promise((resolve) => (this.resolveWatchStarted = resolve));
  }

  async list(_opts: { resourceVersion: string }, signal: AbortSignal): Promise<{ items: RuntimeClass[]; resourceVersion: string }> {
    this.lists++;
    this.resolveListStarted();
    if (this.holdList) {
      await new Promise<void>((resolve, reject) => {
        this.heldList = resolve;
        signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
    }
    return { items: this.items.map((rc) => ({ ...rc })), resourceVersion: '10' };
  }

  releaseList(): void {
    this.heldList?.();
  }

  watch(_opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (event: WatchEvent<RuntimeClass>) => void, signal: AbortSignal): Promise<void> {
    this.onEvent = onEvent;
    this.resolveWatchStarted();
    return new Promise<void>((_resolve, reject) => {
      this.watching = () => reject(new Error('aborted'));
      signal.addEventListener('abort', () => this.watching?.(), { once: true });
    });
  }

  emit(type: 'ADDED' | 'MODIFIED' | 'DELETED', rc: RuntimeClass): void {
    if (!this.onEvent) throw new Error('no watch is open');
    this.onEvent({ type, object: rc });
  }
}

const rc = (name: string, handler: string, resourceVersion = '11'): RuntimeClass => ({ metadata: { name, resourceVersion }, handler });

function startManager(t: Test, lw: FakeRuntimeClasses, opts: { syncTimeoutMs?: number } = {}) {
  const clock = new FakeClock();
  const manager = new RuntimeClassManager({ listerWatcher: lw, clock, ...opts });
  manager.start();
  t.teardown(() => manager.stop());
  return { manager, clock };
}

t.test('no runtimeClassName resolves to the default handler, started or not', async (t) => {
  const manager = new RuntimeClassManager({ listerWatcher: new FakeRuntimeClasses(), clock: new FakeClock() });
  t.equal(await manager.lookupRuntimeHandler(undefined), '');
  t.equal(await manager.lookupRuntimeHandler(''), '');
  t.equal(await manager.runtimeHandlerFor(makePod()), '');
});

t.test('a class name before start() fails naming the class', async (t) => {
  const manager = new RuntimeClassManager({ listerWatcher: new FakeRuntimeClasses(), clock: new FakeClock() });
  await t.rejects(manager.lookupRuntimeHandler('crun'), { message: 'failed to lookup RuntimeClass crun: the RuntimeClass manager is not started' });
});

t.test('a listed class gives its handler; an unknown one is Go\'s NotFound', async (t) => {
  const lw = new FakeRuntimeClasses();
  lw.items = [rc('crun', 'crun'), rc('gvisor', 'runsc')];
  const { manager } = startManager(t, lw);
  t.equal(await manager.lookupRuntimeHandler('crun'), 'crun');
  t.equal(await manager.lookupRuntimeHandler('gvisor'), 'runsc');
  const err = await manager.lookupRuntimeHandler('missing').catch((e: unknown) => e);
  t.type(err, RuntimeClassNotFoundError);
  t.equal((err as Error).message, 'runtimeclass.node.k8s.io "missing" not found');
  t.ok(isNotFound(err), 'an API NotFound (404) for core\'s isNotFound');
  t.equal(manager.get('gvisor')?.handler, 'runsc');
});

t.test('a class created, changed and deleted later is seen through the watch', async (t) => {
  const lw = new FakeRuntimeClasses();
  const { manager } = startManager(t, lw);
  await t.rejects(manager.lookupRuntimeHandler('kata'), { message: 'runtimeclass.node.k8s.io "kata" not found' });
  await lw.watchStarted;
  lw.emit('ADDED', rc('kata', 'kata-qemu', '12'));
  t.equal(await manager.lookupRuntimeHandler('kata'), 'kata-qemu');
  lw.emit('MODIFIED', rc('kata', 'kata-fc', '13'));
  t.equal(await manager.lookupRuntimeHandler('kata'), 'kata-fc');
  lw.emit('DELETED', rc('kata', 'kata-fc', '14'));
  await t.rejects(manager.lookupRuntimeHandler('kata'), RuntimeClassNotFoundError);
  t.equal(lw.lists, 1, 'one list; the rest came by watch');
});

t.test('a lookup before the first list waits for it', async (t) => {
  const lw = new FakeRuntimeClasses(true);
  lw.items = [rc('crun', 'crun')];
  const { manager } = startManager(t, lw);
  const pending = manager.lookupRuntimeHandler('crun');
  await lw.listStarted;
  t.notOk(manager.hasSynced());
  lw.releaseList();
  t.equal(await pending, 'crun');
  t.ok(manager.hasSynced());
});

t.test('a cache that does not sync in time fails the lookup naming the class and the wait', async (t) => {
  const lw = new FakeRuntimeClasses(true);
  const { manager, clock } = startManager(t, lw, { syncTimeoutMs: 2_000 });
  const pending = manager.lookupRuntimeHandler('crun');
  clock.step(2_000);
  await t.rejects(pending, { message: 'failed to lookup RuntimeClass crun: the RuntimeClass cache has not synced with the API server within 2000 ms' });
});

t.test('the manager needs a source', async (t) => {
  t.throws(() => new RuntimeClassManager({}), { message: 'RuntimeClassManager needs a kubeConfig or a listerWatcher' });
});

t.test('standalone: no class is the default handler, a class fails with a clear message', async (t) => {
  t.equal(standaloneRuntimeHandler(makePod()), '');
  const pod = makePod();
  pod.spec!.runtimeClassName = 'gvisor';
  t.throws(() => standaloneRuntimeHandler(pod), RuntimeClassUnavailableError);
  t.throws(() => standaloneRuntimeHandler(pod), { message: /^RuntimeClass "gvisor" cannot be looked up: the kubelet runs without an API server \(no --kubeconfig\)/ });
});

function runSandboxCalls(runtime: { calls: { method: string; args: unknown[] }[] }): Array<[runtimeapi.PodSandboxConfigInit, string]> {
  return runtime.calls.filter((c) => c.method === 'runPodSandbox').map((c) => c.args as [runtimeapi.PodSandboxConfigInit, string]);
}

t.test('SyncPod passes the class\'s handler to RunPodSandbox', async (t) => {
  const lw = new FakeRuntimeClasses();
  lw.items = [rc('crun', 'crun')];
  const { manager: classes } = startManager(t, lw);
  const { manager, runtime, backoff } = setup({ runtimeHandler: classes.runtimeHandlerFor });
  const pod = makePod();
  pod.spec!.runtimeClassName = 'crun';
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(podSyncError(result), undefined);
  t.same(runSandboxCalls(runtime).map(([, handler]) => handler), ['crun']);
  t.equal([...runtime.sandboxes.values()][0]?.runtimeHandler, 'crun', 'the sandbox runs on the crun handler');

  const plain = makePod({ name: 'plain', uid: 'uid-2' });
  await manager.syncPod(plain, await manager.getPodStatus('uid-2', 'plain', 'default'), [], backoff);
  t.same(runSandboxCalls(runtime).map(([, handler]) => handler), ['crun', ''], 'a pod without a class gets the default handler');
});

t.test('an unknown class fails the sandbox with Go\'s message, and the pod starts once the class exists', async (t) => {
  const lw = new FakeRuntimeClasses();
  const { manager: classes } = startManager(t, lw);
  const { manager, runtime, backoff, recorder } = setup({ runtimeHandler: classes.runtimeHandlerFor });
  const pod = makePod();
  pod.spec!.runtimeClassName = 'crun';

  let result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const create = result.syncResults.find((r) => r.action === 'CreatePodSandbox');
  t.equal(create?.error, 'CreatePodSandboxError');
  t.equal(create?.message, 'Failed to create sandbox for pod "web_default(uid-1)": runtimeclass.node.k8s.io "crun" not found');
  t.match(podSyncError(result)?.message, /failed to "CreatePodSandbox" for "web_default\(uid-1\)" with CreatePodSandboxError/);
  t.ok(recorder.events.some((e) => e.type === 'Warning' && e.reason === 'FailedCreatePodSandBox' && e.message === 'Failed to create pod sandbox: runtimeclass.node.k8s.io "crun" not found'));
  t.same(runSandboxCalls(runtime), [], 'the runtime was never asked');
  t.notOk(result.syncResults.some((r) => r.action === 'StartContainer'));

  await lw.watchStarted;
  lw.emit('ADDED', rc('crun', 'crun'));
  result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(podSyncError(result), undefined, 'the retry succeeds');
  t.same(runSandboxCalls(runtime).map(([, handler]) => handler), ['crun']);
  t.ok(result.syncResults.some((r) => r.action === 'StartContainer' && !r.error));
});

t.test('standalone wiring: a pod with a class never reaches the runtime', async (t) => {
  const { manager, runtime, backoff } = setup({ runtimeHandler: standaloneRuntimeHandler });
  const pod = makePod();
  pod.spec!.runtimeClassName = 'gvisor';
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const create = result.syncResults.find((r) => r.action === 'CreatePodSandbox');
  t.equal(create?.error, 'CreatePodSandboxError');
  t.match(create?.message, /^Failed to create sandbox for pod "web_default\(uid-1\)": RuntimeClass "gvisor" cannot be looked up: the kubelet runs without an API server/);
  t.same(runSandboxCalls(runtime), []);
});
