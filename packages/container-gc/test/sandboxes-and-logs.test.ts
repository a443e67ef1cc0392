import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { planSandboxEviction, parsePodUIDFromLogsDirectory, type ContainerGCFs } from '../src/index.js';
import { FakePodStateProvider } from '../src/testing.js';
import { MINUTE, addContainer, addSandbox, mkdirs, setup, waitFor } from './helpers.js';

const removedSandboxes = (env: ReturnType<typeof setup>) =>
  env.runtime.calls.filter((c) => c.method === 'removePodSandbox').map((c) => c.args[0] as string);

t.test('a live pod keeps its newest sandbox and any with containers or still ready', async (t) => {
  const env = setup(t);
  env.pods.live.add('p');
  const s0 = await addSandbox(env.runtime, 'p', 0, false);
  env.clock.step(1000);
  const s1 = await addSandbox(env.runtime, 'p', 1, false);
  await addContainer(env.runtime, s1, 'p', 'a', 0); // s1 has a (dead, kept) container
  env.clock.step(1000);
  const s2 = await addSandbox(env.runtime, 'p', 2, true); // ready
  env.clock.step(1000);
  const s3 = await addSandbox(env.runtime, 'p', 3, false);
  env.clock.step(1000);
  const s4 = await addSandbox(env.runtime, 'p', 4, false); // newest, not ready, empty
  await env.gc.garbageCollect(true, false);
  t.same(removedSandboxes(env), [s0, s3], 'oldest first; active ones and the newest stay');
  t.same([...env.runtime.sandboxes.keys()].sort(), [s1, s2, s4].sort());
  t.same(env.runtime.calls.filter((c) => c.method === 'stopPodSandbox').map((c) => c.args[0]).slice(-2), [s0, s3], 'stopped before removal');
});

t.test('a deleted pod loses every sandbox that is not ready and empty, the newest too', async (t) => {
  const env = setup(t);
  env.pods.deleted.add('gone');
  const s0 = await addSandbox(env.runtime, 'gone', 0, false);
  env.clock.step(1000);
  const s1 = await addSandbox(env.runtime, 'gone', 1, true); // still ready: kept
  env.clock.step(1000);
  const s2 = await addSandbox(env.runtime, 'gone', 2, false);
  await env.gc.garbageCollect(false, false); // sandbox eviction does not wait for sources
  t.same(removedSandboxes(env), [s2, s0], 'both dead ones, last listed first (Go does not sort when none is kept)');
  t.same([...env.runtime.sandboxes.keys()], [s1]);
});

t.test('terminated pods: sandboxes go only with evictNonDeletedPods', async (t) => {
  const env = setup(t);
  env.pods.terminated.add('done');
  const s0 = await addSandbox(env.runtime, 'done', 0, false);
  env.clock.step(1000);
  const s1 = await addSandbox(env.runtime, 'done', 1, false);
  await env.gc.garbageCollect(true, false);
  t.same(removedSandboxes(env), [s0]);
  await env.gc.garbageCollect(true, true);
  t.same(removedSandboxes(env), [s0, s1]);
});

t.test('sandbox removal failures are logged; a failed stop skips the removal', async (t) => {
  const env = setup(t);
  env.pods.deleted.add('gone');
  const s0 = await addSandbox(env.runtime, 'gone', 0, false);
  env.runtime.injectError('stopPodSandbox', new Error('stop failed'));
  await env.gc.garbageCollect(true, false);
  t.ok(env.runtime.sandboxes.has(s0));
  t.ok(env.logger.find('Failed to stop sandbox before removing'));
  env.runtime.injectError('removePodSandbox', new Error('remove failed'));
  await env.gc.garbageCollect(true, false);
  t.ok(env.logger.find('Failed to remove sandbox'));
  await env.gc.garbageCollect(true, false);
  t.notOk(env.runtime.sandboxes.has(s0));
});

t.test('planSandboxEviction on its own', async (t) => {
  const pods = new FakePodStateProvider({ live: ['a'], deleted: ['b'] });
  const sb = (id: string, uid: string, createdAt: number, ready = false) => ({
    id, metadata: { name: uid, namespace: 'ns', uid, attempt: 0 }, state: ready ? 'SANDBOX_READY' as const : 'SANDBOX_NOTREADY' as const, createdAt, labels: {}, annotations: {}, runtimeHandler: '',
  });
  const plan = planSandboxEviction([], [sb('a1', 'a', 1), sb('a2', 'a', 2), sb('b1', 'b', 1), sb('b2', 'b', 2, true)], pods, false);
  t.same(plan.map((s) => s.id), ['a1', 'b1']);
});

t.test('pod log directories of pods whose content should be removed go, once all sources are ready', async (t) => {
  const env = setup(t);
  env.pods.live.add('live-uid');
  env.pods.deleted.add('gone-uid');
  mkdirs(env.logRoot, 'ns_live_live-uid/app', 'ns_gone_gone-uid/app', 'ns_under_score_unknown-uid');
  await env.gc.garbageCollect(false, false);
  t.ok(existsSync(join(env.logRoot, 'ns_gone_gone-uid')), 'sources not ready: nothing removed');
  const result = await env.gc.garbageCollectWithResult(true, false);
  t.same(result.podLogDirectories, [join(env.logRoot, 'ns_gone_gone-uid')]);
  t.notOk(existsSync(join(env.logRoot, 'ns_gone_gone-uid')));
  t.ok(existsSync(join(env.logRoot, 'ns_live_live-uid/app')));
  t.ok(existsSync(join(env.logRoot, 'ns_under_score_unknown-uid')), 'unknown pods: the provider says keep');
  env.pods.unknownPodsRemovable = true;
  await env.gc.garbageCollect(true, false);
  t.notOk(existsSync(join(env.logRoot, 'ns_under_score_unknown-uid')));
  t.equal(parsePodUIDFromLogsDirectory('kube-system_my_pod_1234'), '1234');
});

t.test('a missing logs root is fine; an unreadable one fails the pass after the other steps ran', async (t) => {
  const failing: ContainerGCFs = {
    readdir: async () => {
      throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    },
    removeAll: async () => undefined,
    remove: async () => undefined,
  };
  const env = setup(t, { maxPerPodContainer: 0 }, { fs: failing, podLogsRootDirectory: '/nonexistent/pods' });
  env.pods.live.add('p');
  const sb = await addSandbox(env.runtime, 'p');
  await addContainer(env.runtime, sb, 'p', 'a', 0);
  await t.rejects(env.gc.garbageCollect(true, false), { message: 'failed to read podLogsRootDirectory "/nonexistent/pods": EACCES: permission denied' });
  t.equal(env.runtime.containers.size, 0, 'containers were still collected');

  const env2 = setup(t, {}, { podLogsRootDirectory: '/nonexistent/kubelet-ts/pods' });
  await env2.gc.garbageCollect(true, false);
  t.pass('ENOENT root: nothing to do');
});

t.test('start(): every minute, ContainerGCFailed on failure, stop() leaves no timers', async (t) => {
  let ready = false;
  const env = setup(t, { maxPerPodContainer: 0 });
  env.pods.deleted.add('gone');
  mkdirs(env.logRoot, 'ns_gone_gone');
  env.gc.start(() => ready);
  const runs = () => env.logger.entries.filter((e) => e.msg.startsWith('Container garbage collection')).length;
  await waitFor(() => runs() === 1 && env.clock.pendingTimers() === 1, 'the first run');
  t.ok(existsSync(join(env.logRoot, 'ns_gone_gone')), 'sources not ready');
  const first = env.logger.entries.find((e) => e.msg === 'Container garbage collection succeeded');
  t.equal(first?.v, 4);

  ready = true;
  env.runtime.injectError('listPodSandbox', new Error('runtime down'));
  await env.clock.advance(MINUTE);
  await waitFor(() => runs() === 2 && env.clock.pendingTimers() === 1, 'the second run');
  t.notOk(existsSync(join(env.logRoot, 'ns_gone_gone')), 'log dirs removed even when another step failed');
  t.ok(env.logger.find('Container garbage collection failed'));
  t.same(env.recorder.events, [{ object: { kind: 'Node', name: 'node-a', uid: 'node-a' }, type: 'Warning', reason: 'ContainerGCFailed', message: 'runtime down' }]);

  await env.clock.advance(MINUTE);
  await waitFor(() => runs() === 3, 'the third run');
  t.equal(env.logger.entries.filter((e) => e.msg === 'Container garbage collection succeeded').at(-1)?.v, 1, 'success after failure at V(1)');
  await env.gc.stop();
  t.equal(env.clock.pendingTimers(), 0);
  await env.gc.stop();
});

t.test('passes are serialized', async (t) => {
  const env = setup(t, { maxPerPodContainer: 0 });
  env.pods.live.add('p');
  const sb = await addSandbox(env.runtime, 'p');
  for (let i = 0; i < 5; i++) await addContainer(env.runtime, sb, 'p', 'a', i);
  await Promise.all([env.gc.garbageCollect(true, false), env.gc.garbageCollect(true, false), env.gc.deleteAllUnusedContainers()]);
  t.equal(env.runtime.calls.filter((c) => c.method === 'removeContainer').length, 5, 'each container removed once');
});
