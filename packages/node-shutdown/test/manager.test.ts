import t, { type Test } from 'tap';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { FakeClock } from '@kubelet-ts/core/testing';
import {
  NODE_SHUTDOWN_MESSAGE,
  NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
  NODE_SHUTDOWN_NOT_ADMITTED_REASON,
  NODE_SHUTDOWN_REASON,
  NodeShutdownManager,
  validateShutdownGracePeriods,
  type NodeShutdownManagerOptions,
} from '../src/index.js';
import { FakeShutdownTrigger } from '../src/testing.js';

function pod(name: string, extra: { priority?: number; grace?: number; static?: boolean } = {}): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}`,
      annotations: extra.static ? { 'kubernetes.io/config.source': 'file' } : { 'kubernetes.io/config.source': 'api' },
    },
    spec: { containers: [{ name: 'c' }], priority: extra.priority, terminationGracePeriodSeconds: extra.grace },
  };
}

interface Kill {
  name: string;
  grace: number;
  at: number;
  status: V1PodStatus;
  finish: () => void;
}

function setup(t: Test, pods: V1Pod[], options: Partial<NodeShutdownManagerOptions> = {}) {
  const clock = new FakeClock();
  const trigger = new FakeShutdownTrigger();
  const kills: Kill[] = [];
  const events: string[] = [];
  let statusSyncs = 0;
  const manager = new NodeShutdownManager({
    shutdownGracePeriodMs: 30_000,
    shutdownGracePeriodCriticalPodsMs: 10_000,
    trigger,
    getPods: () => pods,
    killPod: (p, grace, statusFn) =>
      new Promise<void>((resolve) => {
        const status: V1PodStatus = { phase: 'Running' };
        statusFn(status);
        kills.push({ name: p.metadata!.name!, grace, at: clock.now(), status, finish: resolve });
      }),
    syncNodeStatus: () => {
      statusSyncs++;
    },
    recorder: { event: (_o, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
    nodeRef: { kind: 'Node', name: 'n1' },
    clock,
    ...options,
  });
  t.teardown(() => manager.stop());
  return { clock, trigger, kills, events, manager, statusSyncs: () => statusSyncs };
}

t.test('regular pods stop first, critical pods after them, each with min(own, group budget) grace', async (t) => {
  const pods = [
    pod('web', { grace: 60 }),
    pod('short', { grace: 5 }),
    pod('dns', { priority: 2_000_000_000 }),
    pod('static', { static: true, grace: 3 }),
  ];
  const env = setup(t, pods);
  await env.manager.start();
  const start = env.clock.now();
  env.trigger.shutdown();
  await env.clock.flush();
  t.same(
    env.kills.map((k) => [k.name, k.grace]),
    [
      ['web', 20],
      ['short', 5],
    ],
    'only regular pods are killed first, with shutdownGracePeriod - critical as the budget',
  );
  t.equal(env.manager.shutdownStatus()?.message, 'node is shutting down');
  t.equal(env.statusSyncs(), 1, 'the node status is pushed when the shutdown starts');
  for (const k of env.kills) k.finish();
  await env.clock.flush();
  t.same(
    env.kills.slice(2).map((k) => [k.name, k.grace, k.at - start]),
    [
      ['dns', 10, 0],
      ['static', 3, 0],
    ],
    'critical pods follow as soon as the regular ones stopped, within the critical budget',
  );
  t.ok(env.trigger.locked, 'the lock is held while critical pods stop');
  for (const k of env.kills.slice(2)) k.finish();
  await env.manager.idle();
  t.notOk(env.trigger.locked, 'the inhibit lock is released at the end');
  t.same(env.trigger.calls, ['start', 'release']);
  for (const k of env.kills) {
    t.same(k.status, { phase: 'Failed', reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_MESSAGE }, `${k.name} status`);
  }
  t.same(env.events, ['Normal Shutdown Shutdown manager detected shutdown event']);
});

t.test('each group waits at most its budget', async (t) => {
  const env = setup(t, [pod('web'), pod('stuck'), pod('critical', { priority: 2_000_001_000 })]);
  await env.manager.start();
  const start = env.clock.now();
  env.trigger.shutdown();
  await env.clock.flush();
  t.equal(env.kills.length, 2);
  env.kills[0].finish(); // 'stuck' never finishes
  await env.clock.advance(19_999);
  t.equal(env.kills.length, 2, 'critical pods wait for the regular budget');
  await env.clock.advance(1);
  t.same(
    env.kills.slice(2).map((k) => [k.name, k.grace, k.at - start]),
    [['critical', 10, 20_000]],
    'critical pods start when the regular budget (20s) ran out',
  );
  await env.clock.advance(9_999);
  t.ok(env.trigger.locked, 'the lock is still held inside the critical budget');
  await env.clock.advance(1);
  await env.manager.idle();
  t.notOk(env.trigger.locked, 'the lock is released once the critical budget (10s) ran out');
  t.equal(env.clock.pendingTimers(), 0);
});

t.test('a group without pods is not waited for; a succeeded pod stays Succeeded', async (t) => {
  const env = setup(t, [pod('critical', { priority: 2_000_000_000 })], {
    killPod: async (_p, _grace, statusFn) => {
      const status: V1PodStatus = { phase: 'Succeeded' };
      statusFn(status);
      t.equal(status.phase, 'Succeeded');
      t.equal(status.reason, NODE_SHUTDOWN_REASON);
    },
  });
  await env.manager.start();
  env.trigger.shutdown();
  await env.manager.idle();
  t.notOk(env.trigger.locked);
  t.equal(env.clock.pendingTimers(), 0);
});

t.test('a pod whose kill fails does not stop the shutdown', async (t) => {
  const env = setup(t, [pod('a'), pod('b', { priority: 2_000_000_000 })], {
    killPod: async (p) => {
      if (p.metadata!.name === 'a') throw new Error('runtime down');
    },
  });
  await env.manager.start();
  env.trigger.shutdown();
  await env.manager.idle();
  t.notOk(env.trigger.locked);
});

t.test('admission refuses pods while the node shuts down', async (t) => {
  const env = setup(t, [pod('stuck')]);
  await env.manager.start();
  t.same(env.manager.admit({ pod: pod('new') }), { admit: true });
  t.equal(env.manager.shutdownStatus(), undefined);
  env.trigger.shutdown();
  await env.clock.flush();
  t.same(env.manager.admit({ pod: pod('new') }), { admit: false, reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON, message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE });
  t.equal(NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE, 'Pod was rejected as the node is shutting down.');
});

t.test('a cancelled shutdown re-arms: pods are admitted, the lock is taken again, a new shutdown is handled', async (t) => {
  const pods = [pod('web')];
  const env = setup(t, pods);
  await env.manager.start();
  env.trigger.shutdown();
  await env.clock.flush();
  env.kills[0].finish();
  await env.manager.idle();
  t.notOk(env.trigger.locked);
  env.trigger.cancel();
  await env.manager.idle();
  t.ok(env.trigger.locked, 'the inhibit lock is taken again');
  t.same(env.manager.admit({ pod: pod('new') }), { admit: true });
  t.equal(env.manager.shutdownStatus(), undefined, 'Ready may go True again');
  t.same(env.events.at(-1), 'Normal Shutdown Shutdown manager detected shutdown cancellation');
  env.trigger.shutdown();
  await env.clock.flush();
  t.equal(env.kills.length, 2, 'the next shutdown kills again');
  env.kills[1].finish();
  await env.manager.idle();
  t.same(env.trigger.calls, ['start', 'release', 'acquire', 'release']);
});

t.test('shutdownGracePeriod 0 disables the manager: the trigger is never started', async (t) => {
  const env = setup(t, [pod('web')], { shutdownGracePeriodMs: 0, shutdownGracePeriodCriticalPodsMs: 0 });
  t.notOk(env.manager.enabled);
  await env.manager.start();
  t.notOk(env.trigger.started);
  t.same(env.manager.admit({ pod: pod('new') }), { admit: true });
});

t.test('a trigger that cannot start makes start() reject', async (t) => {
  const env = setup(t, []);
  env.trigger.failStart = new Error('no system bus');
  await t.rejects(env.manager.start(), { message: 'no system bus' });
});

t.test('stop() abandons the wait of a shutdown in progress and leaves no timers', async (t) => {
  const env = setup(t, [pod('stuck')]);
  await env.manager.start();
  env.trigger.shutdown();
  await env.clock.flush();
  t.equal(env.clock.pendingTimers(), 1);
  await env.manager.stop();
  t.equal(env.clock.pendingTimers(), 0);
  t.ok(env.trigger.calls.includes('stop'));
});

t.test('config validation: Go messages', async (t) => {
  t.same(validateShutdownGracePeriods({ shutdownGracePeriodMs: 30_000, shutdownGracePeriodCriticalPodsMs: 10_000 }), []);
  t.same(validateShutdownGracePeriods({ shutdownGracePeriodMs: 0, shutdownGracePeriodCriticalPodsMs: 0 }), []);
  t.same(validateShutdownGracePeriods({ shutdownGracePeriodMs: 10_000, shutdownGracePeriodCriticalPodsMs: 20_000 }), [
    'invalid configuration: shutdownGracePeriod 10s must be >= 0, shutdownGracePeriodCriticalPods 20s must be >= 0, and shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s',
  ]);
  t.same(validateShutdownGracePeriods({ shutdownGracePeriodMs: 500, shutdownGracePeriodCriticalPodsMs: 0 }), [
    'invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec',
  ]);
  t.same(validateShutdownGracePeriods({ shutdownGracePeriodMs: 30_000, shutdownGracePeriodCriticalPodsMs: 0 }, false), [
    'invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown',
  ]);
  t.same(validateShutdownGracePeriods({ shutdownGracePeriodMs: 0, shutdownGracePeriodCriticalPodsMs: 0 }, false), []);
});
