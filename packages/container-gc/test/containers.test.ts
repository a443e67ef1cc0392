import t from 'tap';
import { MINUTE, addContainer, addSandbox, remainingContainers, removedInOrder, setup } from './helpers.js';

t.test('running containers are never removed; dead ones younger than minAge are kept', async (t) => {
  const env = setup(t, { minAgeMs: MINUTE, maxPerPodContainer: 0 });
  env.pods.live.add('p1');
  const sb = await addSandbox(env.runtime, 'p1');
  const running = await addContainer(env.runtime, sb, 'p1', 'app', 0, 'running');
  const old = await addContainer(env.runtime, sb, 'p1', 'init', 0, 'exited');
  env.clock.step(MINUTE);
  const young = await addContainer(env.runtime, sb, 'p1', 'init', 1, 'exited');
  env.clock.step(MINUTE - 1);
  await env.gc.garbageCollect(true, false);
  t.same(removedInOrder(env.runtime), [old], 'only the one created at least minAge ago');
  t.same(remainingContainers(env.runtime), [running, young].sort());
  env.clock.step(1);
  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), [running], 'exactly minAge old is old enough');
});

t.test('maxPerPodContainer keeps the newest dead instances per (pod, container), removes the rest oldest first', async (t) => {
  const env = setup(t, { maxPerPodContainer: 1 });
  env.pods.live.add('p1').add('p2');
  const sb1 = await addSandbox(env.runtime, 'p1');
  const sb2 = await addSandbox(env.runtime, 'p2');
  const ids: Record<string, string> = {};
  for (let attempt = 0; attempt < 4; attempt++) {
    ids[`p1-app-${attempt}`] = await addContainer(env.runtime, sb1, 'p1', 'app', attempt);
    env.clock.step(1000);
    ids[`p1-side-${attempt}`] = await addContainer(env.runtime, sb1, 'p1', 'side', attempt);
    env.clock.step(1000);
    ids[`p2-app-${attempt}`] = await addContainer(env.runtime, sb2, 'p2', 'app', attempt);
    env.clock.step(1000);
  }
  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), [ids['p1-app-3'], ids['p1-side-3'], ids['p2-app-3']].sort());
  t.same(removedInOrder(env.runtime), [
    ids['p1-app-0'], ids['p1-app-1'], ids['p1-app-2'],
    ids['p1-side-0'], ids['p1-side-1'], ids['p1-side-2'],
    ids['p2-app-0'], ids['p2-app-1'], ids['p2-app-2'],
  ]);
});

t.test('maxPerPodContainer -1 keeps everything, 0 keeps nothing', async (t) => {
  for (const [max, left] of [[-1, 3], [0, 0], [2, 2]] as const) {
    const env = setup(t, { maxPerPodContainer: max });
    env.pods.live.add('p1');
    const sb = await addSandbox(env.runtime, 'p1');
    for (let i = 0; i < 3; i++) {
      await addContainer(env.runtime, sb, 'p1', 'app', i);
      env.clock.step(1000);
    }
    await env.gc.garbageCollect(true, false);
    t.equal(env.runtime.containers.size, left, `maxPerPodContainer ${max}`);
  }
});

t.test('maxContainers: an equal share per evict unit first (at least 1), then the oldest across the node', async (t) => {
  // Units: p1/a has 4 dead, p2/a 3, p3/a 1 (8 in all). maxContainers 4 -> 4/3 = 1 per unit -> 3 left.
  const env = setup(t, { maxPerPodContainer: -1, maxContainers: 4 });
  env.pods.live.add('p1').add('p2').add('p3');
  const created: string[] = [];
  const sbs = [await addSandbox(env.runtime, 'p1'), await addSandbox(env.runtime, 'p2'), await addSandbox(env.runtime, 'p3')];
  const counts = [4, 3, 1];
  for (let i = 0; i < 4; i++) {
    for (let p = 0; p < 3; p++) {
      if (i >= counts[p]) continue;
      created.push(await addContainer(env.runtime, sbs[p], `p${p + 1}`, 'a', i));
      env.clock.step(1000);
    }
  }
  await env.gc.garbageCollect(true, false);
  t.equal(env.runtime.containers.size, 3, 'fair share: one per unit, no global pass needed');
  t.same(remainingContainers(env.runtime).map((id) => id.split('_')[3] + '/' + id.split('_').at(-1)), ['p1/3', 'p2/2', 'p3/0']);

  // maxContainers 2 with the 3 units left: 2/3 -> 1 per unit (min 1), still 3 > 2 -> the oldest goes (p3's).
  const env2 = setup(t, { maxPerPodContainer: -1, maxContainers: 2 });
  env2.pods.live.add('p1').add('p2').add('p3');
  const old = await addContainer(env2.runtime, await addSandbox(env2.runtime, 'p3'), 'p3', 'a', 0);
  env2.clock.step(1000);
  const mid = await addContainer(env2.runtime, await addSandbox(env2.runtime, 'p1'), 'p1', 'a', 0);
  env2.clock.step(1000);
  const recent = await addContainer(env2.runtime, await addSandbox(env2.runtime, 'p2'), 'p2', 'a', 0);
  await env2.gc.garbageCollect(true, false);
  t.same(removedInOrder(env2.runtime), [old]);
  t.same(remainingContainers(env2.runtime), [mid, recent].sort());
});

t.test('maxContainers 0 removes every dead container', async (t) => {
  const env = setup(t, { maxPerPodContainer: 5, maxContainers: 0 });
  env.pods.live.add('p1');
  const sb = await addSandbox(env.runtime, 'p1');
  const running = await addContainer(env.runtime, sb, 'p1', 'a', 0, 'running');
  for (let i = 1; i < 4; i++) await addContainer(env.runtime, sb, 'p1', 'a', i);
  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), [running]);
});

t.test('deleted pods lose every dead container, but only once all sources are ready', async (t) => {
  const env = setup(t, { maxPerPodContainer: 1 });
  env.pods.live.add('live');
  env.pods.deleted.add('gone');
  const sbLive = await addSandbox(env.runtime, 'live');
  const sbGone = await addSandbox(env.runtime, 'gone', 0, false);
  const live0 = await addContainer(env.runtime, sbLive, 'live', 'a', 0);
  const gone0 = await addContainer(env.runtime, sbGone, 'gone', 'a', 0);
  env.clock.step(1000);
  const gone1 = await addContainer(env.runtime, sbGone, 'gone', 'a', 1);

  await env.gc.garbageCollect(false, false);
  t.same(remainingContainers(env.runtime), [gone1, live0].sort(), 'sources not ready: only the per-container limit');
  t.ok(env.runtime.sandboxes.has(sbGone), 'its sandbox still has a container');

  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), [live0]);
  t.notOk(env.runtime.sandboxes.has(sbGone), 'and then its sandbox, in the same pass');
  t.same(removedInOrder(env.runtime), [gone0, gone1]);
});

t.test('terminated (not deleted) pods: kept by garbageCollect, emptied by deleteAllUnusedContainers', async (t) => {
  const env = setup(t, { maxPerPodContainer: 1 });
  env.pods.terminated.add('done');
  const sb = await addSandbox(env.runtime, 'done', 0, false);
  const c0 = await addContainer(env.runtime, sb, 'done', 'a', 0);
  env.clock.step(1000);
  const c1 = await addContainer(env.runtime, sb, 'done', 'a', 1);
  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), [c1]);
  t.ok(env.runtime.sandboxes.has(sb));
  await env.gc.deleteAllUnusedContainers();
  t.same(remainingContainers(env.runtime), []);
  t.notOk(env.runtime.sandboxes.has(sb));
  t.ok(env.logger.find('Attempting to delete unused containers'));
  t.same(removedInOrder(env.runtime), [c0, c1]);
});

t.test('containers of unknown pods follow the pod state provider (pod workers: removable once synced)', async (t) => {
  const env = setup(t);
  const sb = await addSandbox(env.runtime, 'orphan', 0, false);
  await addContainer(env.runtime, sb, 'orphan', 'a', 0);
  await env.gc.garbageCollect(true, false);
  t.equal(env.runtime.containers.size, 1, 'not known as removable: per-container limit keeps it');
  env.pods.unknownPodsRemovable = true;
  await env.gc.garbageCollect(true, false);
  t.equal(env.runtime.containers.size, 0);
  t.equal(env.runtime.sandboxes.size, 0);
});

t.test('unknown-state containers are stopped before removal; if that fails they stay', async (t) => {
  const killed: string[] = [];
  let failKill = true;
  const env = setup(t, { maxPerPodContainer: 0 }, {
    killContainer: async (c, message) => {
      killed.push(`${c.id}: ${message}`);
      if (failKill) throw new Error('kill failed');
    },
  });
  env.pods.live.add('p');
  const sb = await addSandbox(env.runtime, 'p');
  const unknown = await addContainer(env.runtime, sb, 'p', 'a', 0, 'unknown');
  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), [unknown]);
  t.ok(env.logger.find('Failed to stop container'));
  failKill = false;
  await env.gc.garbageCollect(true, false);
  t.same(remainingContainers(env.runtime), []);
  t.same(killed, [`${unknown}: Container is in unknown state, try killing it before removal`, `${unknown}: Container is in unknown state, try killing it before removal`]);
});

t.test('a container\'s log file goes with it', async (t) => {
  const { mkdirSync, writeFileSync, existsSync } = await import('node:fs');
  const env = setup(t, { maxPerPodContainer: 0 });
  env.pods.live.add('p');
  const podLogs = `${env.logRoot}/ns_pod-p_p`;
  mkdirSync(`${podLogs}/a`, { recursive: true });
  writeFileSync(`${podLogs}/a/0.log`, 'hello\n');
  writeFileSync(`${podLogs}/a/1.log`, 'kept\n');
  const sb = await addSandbox(env.runtime, 'p');
  await addContainer(env.runtime, sb, 'p', 'a', 0, 'exited', podLogs);
  await addContainer(env.runtime, sb, 'p', 'a', 1, 'running', podLogs);
  await env.gc.garbageCollect(true, false);
  t.notOk(existsSync(`${podLogs}/a/0.log`));
  t.ok(existsSync(`${podLogs}/a/1.log`));
});

t.test('removal errors are logged and the pass goes on; list errors fail the pass', async (t) => {
  const env = setup(t, { maxPerPodContainer: 0 });
  env.pods.live.add('p');
  const sb = await addSandbox(env.runtime, 'p');
  const c0 = await addContainer(env.runtime, sb, 'p', 'a', 0);
  const c1 = await addContainer(env.runtime, sb, 'p', 'b', 0);
  env.runtime.injectError('removeContainer', new Error('device busy'));
  await env.gc.garbageCollect(true, false);
  t.equal(env.runtime.containers.size, 1);
  const entry = env.logger.find('Failed to remove container');
  t.ok(entry);
  t.ok([c0, c1].includes(entry!.kv.containerID as string));

  env.runtime.injectError('listContainers', 'Unavailable', { persistent: true });
  const err = await env.gc.garbageCollect(true, false).catch((e: unknown) => e as Error);
  t.ok(err instanceof Error);
  t.match(err!.message, /^\[.*Unavailable.*, .*Unavailable.*\]$/, 'both container and sandbox steps failed');
});
