// SharedPodWatch: one list+watch of the pods bound to any node, feeding many nodes' API sources, against a
// scripted lister/watcher on a FakeClock.
import t from 'tap';
import type { V1Pod, V1Status } from '@kubernetes/client-node';
import { KubeConfig } from '@kubernetes/client-node';
import { PodOperation, type PodUpdate } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { ApiserverSource, GoneError, NodePodSource, SharedPodWatch, boundPodsFieldSelector, makePodSourceConfig, type PodListerWatcher, type PodWatchEvent } from '../src/index.js';
import { drainUpdates, makeTestPod, summarize } from '../src/testing.js';

interface ActiveWatch {
  resourceVersion: string;
  emit(e: PodWatchEvent): void;
  end(): void;
  fail(err: unknown): void;
  closed: boolean;
}

/** An API server's pods (all nodes), listed and watched by hand. */
class FakeListerWatcher implements PodListerWatcher {
  pods = new Map<string, V1Pod>();
  rv = 1;
  listCalls = 0;
  watches: ActiveWatch[] = [];

  async list(): Promise<{ pods: V1Pod[]; resourceVersion: string }> {
    this.listCalls++;
    return { pods: [...this.pods.values()].map((p) => structuredClone(p)), resourceVersion: String(this.rv) };
  }

  watch(opts: { resourceVersion: string }, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: ActiveWatch = {
        resourceVersion: opts.resourceVersion,
        closed: false,
        emit: (e) => {
          try {
            onEvent(e);
          } catch (err) {
            w.closed = true;
            reject(err);
          }
        },
        end: () => {
          w.closed = true;
          resolve();
        },
        fail: (err) => {
          w.closed = true;
          reject(err);
        },
      };
      signal.addEventListener('abort', () => w.fail(signal.reason), { once: true });
      this.watches.push(w);
    });
  }

  get current(): ActiveWatch {
    return this.watches[this.watches.length - 1];
  }

  /** Sets a pod in the server's state without an event (seen by the next list). */
  put(pod: V1Pod): V1Pod {
    this.rv++;
    const p = structuredClone(pod);
    p.metadata!.resourceVersion = String(this.rv);
    this.pods.set(p.metadata!.name!, p);
    return p;
  }

  /** Changes a pod and emits the event on the open watch. */
  change(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void {
    let p: V1Pod;
    if (type === 'DELETED') {
      this.rv++;
      p = structuredClone(pod);
      p.metadata!.resourceVersion = String(this.rv);
      this.pods.delete(p.metadata!.name!);
    } else p = this.put(pod);
    this.current.emit({ type, object: p });
  }
}

const pod = (name: string, nodeName: string, extra: Partial<Parameters<typeof makeTestPod>[0]> = {}) => makeTestPod({ name, nodeName, ...extra });

/** A sink per node, recording the updates it got. */
function nodes(watch: SharedPodWatch, names: string[], nodeHasSynced?: (node: string) => boolean) {
  const got = new Map<string, PodUpdate[]>();
  const sources = new Map<string, NodePodSource>();
  for (const name of names) {
    const updates: PodUpdate[] = [];
    got.set(name, updates);
    const s = watch.nodeSource({ nodeName: name, sink: async (u) => void updates.push(u), nodeHasSynced: nodeHasSynced && (() => nodeHasSynced(name)) });
    sources.set(name, s);
    s.start();
  }
  const count = (name: string) => got.get(name)!.length;
  const last = (name: string) => {
    const u = got.get(name)!;
    return u[u.length - 1]?.pods.map((p) => p.metadata?.name).sort();
  };
  return { got, sources, count, last };
}

function make(opts: { nodeSyncPeriodMs?: number } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const lw = new FakeListerWatcher();
  const watch = new SharedPodWatch({ listerWatcher: lw, clock, logger, backoffJitter: 0, random: () => 0, ...opts });
  return { clock, logger, lw, watch };
}

t.test('one watch: each node gets SETs of exactly its pods; an initial SET even with none; other nodes are not woken', async (t) => {
  const { clock, lw, watch } = make();
  lw.put(pod('a', 'n1'));
  lw.put(pod('b', 'n1'));
  lw.put(pod('c', 'n2'));
  lw.put(pod('d', 'n3')); // nobody subscribes n3
  const n = nodes(watch, ['n1', 'n2', 'n4']);
  watch.start();
  await clock.flush();
  t.equal(lw.listCalls, 1);
  t.equal(lw.watches.length, 1, 'one watch for every node');
  t.same(n.last('n1'), ['a', 'b']);
  t.same(n.last('n2'), ['c']);
  t.same(n.got.get('n4'), [{ op: PodOperation.SET, pods: [], source: 'api' }], 'initial empty SET: the source is ready');
  t.same([n.count('n1'), n.count('n2'), n.count('n4')], [1, 1, 1]);
  t.ok(n.sources.get('n1')!.hasSynced());
  t.equal(n.sources.get('n1')!.lastSyncResourceVersion(), String(lw.rv));

  lw.change('ADDED', pod('e', 'n2'));
  await clock.flush();
  t.same([n.count('n1'), n.count('n2'), n.count('n4')], [1, 2, 1], 'only n2 woke');
  t.same(n.last('n2'), ['c', 'e']);

  lw.change('ADDED', pod('f', 'n3'));
  lw.change('MODIFIED', pod('d', 'n3', { status: { phase: 'Running' } }));
  await clock.flush();
  t.same([n.count('n1'), n.count('n2'), n.count('n4')], [1, 2, 1], 'a pod of a node nobody subscribed wakes nobody');
  t.same(watch.podsOf('n3').map((p) => p.metadata?.name).sort(), ['d', 'f'], 'but is kept for a node that subscribes later');

  for (let i = 0; i < 20; i++) lw.change('ADDED', pod(`burst${i}`, 'n1'));
  await clock.flush();
  t.equal(n.count('n1'), 2, 'a burst is one SET');
  t.equal(n.got.get('n1')!.at(-1)!.pods.length, 22);
  t.same([n.count('n2'), n.count('n4')], [2, 1]);

  lw.change('MODIFIED', pod('a', 'n1', { status: { phase: 'Running' } }));
  await clock.flush();
  t.equal(n.got.get('n1')!.at(-1)!.pods.find((p) => p.metadata?.name === 'a')?.status?.phase, 'Running');
  t.same(n.sources.get('n1')!.stats().sets, 3);
  t.match(watch.stats(), { subscribers: 3, waitingForNode: 0, nodes: 3, pods: 26, sets: 6, lists: 1, watches: 1 });
  await watch.stop();
  t.ok(lw.current.closed);
  t.equal(clock.pendingTimers(), 0);
});

t.test('a deleted pod: a SET without it (an empty one for the node\'s last pod)', async (t) => {
  const { clock, lw, watch } = make();
  lw.put(pod('a', 'n1'));
  lw.put(pod('b', 'n1'));
  lw.put(pod('c', 'n2'));
  const n = nodes(watch, ['n1', 'n2']);
  watch.start();
  await clock.flush();
  lw.change('DELETED', pod('a', 'n1'));
  await clock.flush();
  t.same(n.last('n1'), ['b']);
  lw.change('DELETED', pod('b', 'n1'));
  await clock.flush();
  t.same(n.last('n1'), []);
  t.equal(n.count('n1'), 3);
  t.equal(n.count('n2'), 1, 'n2 untouched');
  t.same(n.sources.get('n1')!.pods(), []);
  t.equal(watch.stats().nodes, 1);
  await watch.stop();
});

t.test('nodes wait for nodeHasSynced, checked at start and then all on ONE shared timer (1 s)', async (t) => {
  const { clock, lw, watch } = make();
  lw.put(pod('a', 'n0'));
  const synced = new Set<string>(['ready']);
  const names = Array.from({ length: 100 }, (_, i) => `n${i}`);
  const n = nodes(watch, [...names, 'ready'], (node) => synced.has(node));
  watch.start();
  await clock.flush();
  t.equal(n.count('ready'), 1, 'a node already synced at start gets its SET at once');
  t.ok(names.every((name) => n.count(name) === 0), 'no SET before the node is synced');
  t.notOk(n.sources.get('n0')!.hasSynced());
  t.equal(clock.pendingTimers(), 1, 'one timer for 100 waiting nodes');
  t.equal(watch.stats().waitingForNode, 100);
  await clock.advance(3000);
  t.ok(names.every((name) => n.count(name) === 0));
  for (let i = 0; i < 50; i++) synced.add(`n${i}`);
  await clock.advance(999);
  t.equal(n.count('n0'), 0, 'seen at the next tick only');
  await clock.advance(1);
  t.ok(names.slice(0, 50).every((name) => n.count(name) === 1));
  t.ok(names.slice(50).every((name) => n.count(name) === 0));
  t.same(n.last('n0'), ['a']);
  t.same(n.last('n1'), []);
  t.equal(clock.pendingTimers(), 1, 'still one timer for the 50 left');
  for (const name of names.slice(50)) synced.add(name);
  await clock.advance(1000);
  t.ok(names.every((name) => n.count(name) === 1));
  t.equal(clock.pendingTimers(), 0, 'no timer once no node waits');
  t.equal(watch.stats().waitingForNode, 0);
  t.equal(lw.listCalls, 1);
  await watch.stop();
});

t.test('a node synced before the store: its SET waits for the first list', async (t) => {
  const { clock, lw, watch } = make();
  lw.put(pod('a', 'n1'));
  const n = nodes(watch, ['n1']);
  await clock.flush();
  t.equal(n.count('n1'), 0, 'the watch is not started');
  t.notOk(n.sources.get('n1')!.hasSynced());
  watch.start();
  await clock.flush();
  t.same(n.last('n1'), ['a']);
  t.equal(n.count('n1'), 1);
  // A node subscribing once the store synced gets its SET at once.
  const late = nodes(watch, ['n1', 'n9']);
  await clock.flush();
  t.same(late.last('n1'), ['a']);
  t.same(late.last('n9'), []);
  t.equal(n.count('n1'), 1, 'the first subscriber of n1 is not sent another');
  await watch.stop();
});

t.test('stop() of a node source unsubscribes only it; the watch stays open; waiting nodes leave the timer', async (t) => {
  const { clock, lw, watch } = make();
  let n3Synced = false;
  const n = nodes(watch, ['n1', 'n2', 'n3'], (node) => node !== 'n3' || n3Synced);
  watch.start();
  await clock.flush();
  t.equal(clock.pendingTimers(), 1, 'n3 waits');
  await n.sources.get('n1')!.stop();
  await n.sources.get('n1')!.stop();
  await n.sources.get('n3')!.stop();
  t.equal(clock.pendingTimers(), 0, 'the timer is gone with the last waiting node');
  n3Synced = true;
  lw.change('ADDED', pod('a', 'n1'));
  lw.change('ADDED', pod('b', 'n2'));
  await clock.flush();
  t.equal(n.count('n1'), 1, 'n1 gets nothing after stop()');
  t.equal(n.count('n3'), 0);
  t.same(n.last('n2'), ['b']);
  t.notOk(lw.current.closed, 'the shared watch is still open');
  t.equal(watch.stats().subscribers, 1);
  // Started again, n1 is a new subscriber: its pods now, once more.
  n.sources.get('n1')!.start();
  await clock.flush();
  t.same(n.last('n1'), ['a']);
  await watch.stop();
  t.equal(watch.stats().subscribers, 0, 'watch.stop() stopped the node sources');
  t.equal(clock.pendingTimers(), 0);
});

t.test('stop() releases a node source whose sink waits (a full PodConfig buffer)', async (t) => {
  const { clock, watch } = make();
  const s = watch.nodeSource({ nodeName: 'n1', sink: () => new Promise(() => undefined) });
  s.start();
  watch.start();
  await clock.flush();
  t.equal(s.stats().sets, 1);
  await s.stop();
  t.pass('stop() did not hang');
  await watch.stop();
});

t.test('a relist (410 Gone) sends a SET to the nodes whose pods changed, and only to them', async (t) => {
  const { clock, lw, watch, logger } = make();
  lw.put(pod('a', 'n1'));
  lw.put(pod('b', 'n2'));
  lw.put(pod('c', 'n3'));
  lw.put(pod('d', 'n5'));
  const n = nodes(watch, ['n1', 'n2', 'n3', 'n4', 'n5']);
  watch.start();
  await clock.flush();
  const before = () => ['n1', 'n2', 'n3', 'n4', 'n5'].map(n.count);
  t.same(before(), [1, 1, 1, 1, 1]);
  // Changes the watch missed: a modified on n1, b deleted from n2, e new on n4; n3 and n5 unchanged.
  lw.put(pod('a', 'n1', { status: { phase: 'Running' } }));
  lw.pods.delete('b');
  lw.put(pod('e', 'n4'));
  lw.current.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } as V1Status });
  await clock.flush();
  t.equal(lw.listCalls, 2, 're-listed');
  t.ok(logger.find(/410 Gone/));
  t.same(before(), [2, 2, 1, 2, 1]);
  t.equal(n.got.get('n1')!.at(-1)!.pods[0].status?.phase, 'Running');
  t.same(n.last('n2'), []);
  t.same(n.last('n4'), ['e']);
  // An HTTP 410 from the watch, nothing changed: nobody is sent anything.
  lw.current.fail(new GoneError());
  await clock.flush();
  t.equal(lw.listCalls, 3);
  t.same(before(), [2, 2, 1, 2, 1]);
  t.equal(watch.stats().gone, 2);
  t.equal(lw.current.resourceVersion, String(lw.rv), 'watching from the list');
  await watch.stop();
});

t.test('a watch that ends is resumed from the last resourceVersion without a re-list (the reflector, shared)', async (t) => {
  const { clock, lw, watch } = make();
  const n = nodes(watch, ['n1']);
  watch.start();
  await clock.flush();
  lw.change('ADDED', pod('a', 'n1'));
  await clock.flush();
  lw.current.end();
  await clock.flush();
  t.equal(lw.watches.length, 2);
  t.equal(lw.current.resourceVersion, String(lw.rv));
  t.equal(lw.listCalls, 1);
  t.equal(n.count('n1'), 2);
  lw.current.fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
  await clock.advance(800);
  t.equal(lw.watches.length, 3, 'backed off 800 ms');
  t.equal(lw.listCalls, 1);
  await watch.stop();
});

t.test('through makePodSourceConfig: per-node PodConfigs fed by one watch; kubeConfig then unused', async (t) => {
  const { clock, lw, watch } = make();
  lw.put(pod('a', 'fleet-0'));
  lw.put(pod('b', 'fleet-1'));
  let registered = false;
  const kubeConfig = new KubeConfig();
  const configs = ['fleet-0', 'fleet-1'].map((nodeName) =>
    makePodSourceConfig({ nodeName, sharedPodWatch: watch, kubeConfig, nodeHasSynced: () => registered, clock, logger: new RecordingLogger() }),
  );
  t.ok(configs[0].api instanceof NodePodSource);
  t.notOk(configs[0].api instanceof ApiserverSource);
  t.same(configs[0].podConfig.configuredSources(), ['api']);
  watch.start();
  await clock.flush();
  t.notOk(configs[0].podConfig.sourcesReady(), 'waits for the node');
  registered = true;
  await clock.advance(1000);
  t.ok(configs.every((c) => c.podConfig.sourcesReady()));
  t.same(summarize(drainUpdates(configs[0].podConfig)), ['ADD:a']);
  t.same(summarize(drainUpdates(configs[1].podConfig)), ['ADD:b']);
  t.same(configs[0].api?.pods().map((p) => p.metadata?.name), ['a']);
  t.ok(configs[0].api?.hasSynced());
  lw.change('MODIFIED', pod('a', 'fleet-0', { status: { phase: 'Running' } }));
  lw.change('MODIFIED', pod('a', 'fleet-0', { status: { phase: 'Running' }, deletionTimestamp: new Date('2026-01-01T00:00:00Z'), deletionGracePeriodSeconds: 30 }));
  await clock.flush();
  t.same(summarize(drainUpdates(configs[0].podConfig)), ['DELETE:a'], 'one SET for the burst: the graceful delete');
  lw.change('DELETED', pod('a', 'fleet-0'));
  await clock.flush();
  t.same(summarize(drainUpdates(configs[0].podConfig)), ['REMOVE:a']);
  t.same(drainUpdates(configs[1].podConfig), [], 'fleet-1 saw nothing');
  await configs[0].stop();
  t.equal(watch.stats().subscribers, 1);
  lw.change('ADDED', pod('c', 'fleet-1'));
  await clock.flush();
  t.same(summarize(drainUpdates(configs[1].podConfig)), ['ADD:c']);
  await configs[1].stop();
  await watch.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('options', async (t) => {
  t.throws(() => new SharedPodWatch({}), /needs a kubeConfig or a listerWatcher/);
  const { watch } = make();
  t.throws(() => watch.nodeSource({ nodeName: '', sink: async () => undefined }), /nodeName is required/);
  t.equal(boundPodsFieldSelector, 'spec.nodeName!=');
  // Built from a kubeConfig, nothing is loaded or requested before start().
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'c', server: 'http://127.0.0.1:1' }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  const fromKc = new SharedPodWatch({ kubeConfig: kc });
  t.notOk(fromKc.hasSynced());
  await fromKc.stop();
});
