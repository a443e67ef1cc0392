import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import {
  ConfigFirstSeenAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  PodOperation,
  type PodUpdate,
} from '@kubelet-ts/core';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { PodConfig, checkAndUpdatePod, isAnnotationMapEqual, type PodConfigMode } from '../src/index.js';
import { FakePodSource, drainUpdates, makeTestPod, summarize } from '../src/testing.js';

function setup(mode: PodConfigMode = 'incremental', bufferSize?: number) {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const logger = new RecordingLogger();
  const recorder = new RecordingEventRecorder();
  const config = new PodConfig({ mode, clock, logger, recorder, bufferSize });
  return { clock, logger, events: recorder.events, config };
}

const pod = (name: string, extra: Parameters<typeof makeTestPod>[0] extends infer O ? Partial<O> : never = {}): V1Pod => makeTestPod({ name, ...extra });

function withImage(p: V1Pod, image: string): V1Pod {
  const copy = structuredClone(p);
  copy.spec!.containers[0].image = image;
  return copy;
}

t.test('incremental: a first SET adds every pod, annotated with source and first-seen time', async (t) => {
  const { config } = setup();
  const src = new FakePodSource(config, 'api');
  await src.set(pod('a'), pod('b'));
  const updates = drainUpdates(config);
  t.same(summarize(updates), ['ADD:a,b']);
  t.equal(updates[0].source, 'api');
  const a = updates[0].pods[0];
  t.equal(a.metadata?.annotations?.[ConfigSourceAnnotationKey], 'api');
  t.equal(a.metadata?.annotations?.[ConfigFirstSeenAnnotationKey], '2026-01-01T00:00:00Z');
  t.ok(config.sourcesReady());
});

t.test('incremental: an empty first SET sends an empty ADD so the consumer knows the source is ready', async (t) => {
  const { config } = setup();
  const src = new FakePodSource(config, 'file');
  t.notOk(config.sourcesReady(), 'not ready before the first SET');
  await src.set();
  t.same(summarize(drainUpdates(config)), ['ADD:']);
  t.ok(config.sourcesReady());
  await src.set();
  t.same(drainUpdates(config), [], 'a second empty SET sends nothing');
});

t.test('merge table: every transition of a pod between two SETs (incremental)', async (t) => {
  type Case = { name: string; next: (p: V1Pod) => V1Pod | undefined; want: string[] };
  const deletedAt = new Date('2026-01-01T00:01:00Z');
  const cases: Case[] = [
    { name: 'unchanged', next: (p) => structuredClone(p), want: [] },
    { name: 'spec change is an UPDATE', next: (p) => withImage(p, 'busybox:2'), want: ['UPDATE:p'] },
    { name: 'label change is an UPDATE', next: (p) => ({ ...structuredClone(p), metadata: { ...p.metadata, labels: { app: 'x' } } }), want: ['UPDATE:p'] },
    {
      name: 'annotation change is an UPDATE',
      next: (p) => ({ ...structuredClone(p), metadata: { ...p.metadata, annotations: { team: 'x' } } }),
      want: ['UPDATE:p'],
    },
    {
      name: 'a change of local annotations only is nothing',
      next: (p) => ({
        ...structuredClone(p),
        metadata: { ...p.metadata, annotations: { [ConfigFirstSeenAnnotationKey]: 'yesterday', [ConfigSourceAnnotationKey]: 'other', [ConfigMirrorAnnotationKey]: 'm' } },
      }),
      want: [],
    },
    { name: 'status-only change is a RECONCILE', next: (p) => ({ ...structuredClone(p), status: { phase: 'Running' } }), want: ['RECONCILE:p'] },
    {
      name: 'deletionTimestamp set is a DELETE (graceful)',
      next: (p) => ({ ...structuredClone(p), metadata: { ...p.metadata, deletionTimestamp: deletedAt, deletionGracePeriodSeconds: 30 } }),
      want: ['DELETE:p'],
    },
    {
      name: 'a spec change together with a status change is an UPDATE only',
      next: (p) => ({ ...withImage(p, 'busybox:3'), status: { phase: 'Running' } }),
      want: ['UPDATE:p'],
    },
    { name: 'gone from the SET is a REMOVE', next: () => undefined, want: ['REMOVE:p'] },
    {
      name: 'a new UID under the same name is REMOVE then ADD (static pod edit)',
      next: (p) => ({ ...structuredClone(p), metadata: { ...p.metadata, uid: 'new-uid' } }),
      want: ['REMOVE:p', 'ADD:p'],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const { config, events } = setup();
      const src = new FakePodSource(config, 'api');
      const p = pod('p');
      await src.set(p);
      drainUpdates(config);
      const next = c.next(p);
      await src.set(...(next ? [next] : []));
      t.same(summarize(drainUpdates(config)), c.want);
      t.same(events, [], 'nothing reported');
    });
  }
});

t.test('merge table: delta operations (incremental)', async (t) => {
  await t.test('ADD of a new pod, then ADD of the same pod unchanged is nothing', async (t) => {
    const { config } = setup();
    const src = new FakePodSource(config, 'api');
    await src.add(pod('a'));
    t.same(summarize(drainUpdates(config)), ['ADD:a']);
    await src.add(pod('a'));
    t.same(drainUpdates(config), []);
    t.notOk(config.sourcesReady(), 'only a SET marks a source seen, as in Go');
  });
  await t.test('UPDATE with a spec change, a status change, no change', async (t) => {
    const { config } = setup();
    const src = new FakePodSource(config, 'api');
    await src.add(pod('a'));
    drainUpdates(config);
    await src.update(withImage(pod('a'), 'x:1'));
    t.same(summarize(drainUpdates(config)), ['UPDATE:a']);
    await src.update({ ...withImage(pod('a'), 'x:1'), status: { phase: 'Running' } });
    t.same(summarize(drainUpdates(config)), ['RECONCILE:a']);
    await src.update({ ...withImage(pod('a'), 'x:1'), status: { phase: 'Running' } });
    t.same(drainUpdates(config), []);
  });
  await t.test('UPDATE or DELETE of an unknown pod adds it, as Go does', async (t) => {
    const { config } = setup();
    const src = new FakePodSource(config, 'api');
    await src.update(pod('a'));
    await src.delete(pod('b', { deletionTimestamp: new Date() }));
    t.same(summarize(drainUpdates(config)), ['ADD:a', 'ADD:b']);
  });
  await t.test('DELETE with deletionTimestamp is a graceful DELETE; the pod stays in the state', async (t) => {
    const { config } = setup();
    const src = new FakePodSource(config, 'api');
    await src.add(pod('a'));
    drainUpdates(config);
    await src.delete(pod('a', { deletionTimestamp: new Date('2026-01-01T00:00:10Z'), deletionGracePeriodSeconds: 30 }));
    const updates = drainUpdates(config);
    t.same(summarize(updates), ['DELETE:a']);
    t.same(updates[0].pods[0].metadata?.deletionTimestamp, new Date('2026-01-01T00:00:10Z'));
    t.equal(config.pods().length, 1);
  });
  await t.test('REMOVE of a known pod, then of an unknown one (no-op)', async (t) => {
    const { config } = setup();
    const src = new FakePodSource(config, 'api');
    await src.add(pod('a'), pod('b'));
    drainUpdates(config);
    await src.remove(pod('a'));
    t.same(summarize(drainUpdates(config)), ['REMOVE:a']);
    await src.remove(pod('zzz'));
    t.same(drainUpdates(config), []);
    t.same(config.pods().map((p) => p.metadata?.name), ['b']);
  });
  await t.test('an unknown operation is logged and changes nothing', async (t) => {
    const { config, logger } = setup();
    await config.merge('api', { op: 'BOGUS' as PodOperation, pods: [pod('a')], source: 'api' });
    t.same(drainUpdates(config), []);
    t.ok(logger.find('Received invalid update type'));
  });
});

t.test('incremental order within one merge: REMOVE, ADD, UPDATE, DELETE, RECONCILE', async (t) => {
  const { config } = setup();
  const src = new FakePodSource(config, 'api');
  await src.set(pod('gone'), pod('upd'), pod('del'), pod('rec'));
  drainUpdates(config);
  await src.set(
    pod('new'),
    withImage(pod('upd'), 'x:2'),
    pod('del', { deletionTimestamp: new Date('2026-01-01T00:00:05Z') }),
    pod('rec', { status: { phase: 'Running' } }),
  );
  t.same(summarize(drainUpdates(config)), ['REMOVE:gone', 'ADD:new', 'UPDATE:upd', 'DELETE:del', 'RECONCILE:rec']);
});

t.test('snapshotAndUpdates: SET on adds/removes/first set, then UPDATE and DELETE; RECONCILE is not sent', async (t) => {
  const { config } = setup('snapshotAndUpdates');
  const src = new FakePodSource(config, 'api');
  await src.set();
  t.same(summarize(drainUpdates(config)), ['SET:'], 'first (empty) SET');
  await src.set(pod('a'), pod('b'));
  t.same(summarize(drainUpdates(config)), ['SET:a,b']);
  const at = new Date('2026-01-01T00:00:30Z');
  await src.set(withImage(pod('a'), 'x:2'), pod('b', { deletionTimestamp: at }));
  t.same(summarize(drainUpdates(config)), ['UPDATE:a', 'DELETE:b']);
  await src.set(withImage(pod('a'), 'x:2'), pod('b', { deletionTimestamp: at, status: { phase: 'Running' } }));
  t.same(drainUpdates(config), [], 'a status-only change sends nothing in this mode');
  await src.set(withImage(pod('a'), 'x:2'));
  t.same(summarize(drainUpdates(config)), ['SET:a']);
});

t.test('snapshot: any change sends one SET of the merged state of all sources', async (t) => {
  const { config } = setup('snapshot');
  const api = new FakePodSource(config, 'api');
  const file = new FakePodSource(config, 'file');
  await api.set(pod('a'));
  await file.set(pod('f'));
  const updates = drainUpdates(config);
  t.same(summarize(updates), ['SET:a', 'SET:a,f']);
  t.equal(updates[1].source, 'file');
  await api.set(pod('a', { status: { phase: 'Running' } }));
  t.same(summarize(drainUpdates(config)), [], 'status-only: nothing (Go sends a SET only for adds, updates, deletes, removes)');
  await api.set(withImage(pod('a'), 'x:1'));
  t.same(summarize(drainUpdates(config)), ['SET:a,f']);
  await api.set(pod('a', { deletionTimestamp: new Date() }));
  t.same(summarize(drainUpdates(config)), ['SET:a,f']);
  await api.set();
  t.same(summarize(drainUpdates(config)), ['SET:f']);
});

t.test('an unsupported mode throws', async (t) => {
  t.throws(() => new PodConfig({ mode: 'bogus' as PodConfigMode }), /unsupported PodConfigNotificationMode/);
});

t.test('update keeps the first-seen time and local annotations; emitted pods are copies', async (t) => {
  const { config, clock } = setup();
  const src = new FakePodSource(config, 'api');
  await src.set(pod('a', { annotations: { keep: '1' } }));
  const [added] = drainUpdates(config);
  const seen = added.pods[0].metadata?.annotations?.[ConfigFirstSeenAnnotationKey];
  clock.step(5000);
  await src.set(withImage(pod('a', { annotations: { keep: '2' } }), 'x:2'));
  const [updated] = drainUpdates(config);
  t.equal(updated.op, PodOperation.UPDATE);
  const annotations = updated.pods[0].metadata?.annotations ?? {};
  t.equal(annotations[ConfigFirstSeenAnnotationKey], seen, 'first-seen time kept');
  t.equal(annotations[ConfigSourceAnnotationKey], 'api');
  t.equal(annotations.keep, '2');
  // Mutating what we got must not change the stored state.
  updated.pods[0].spec!.containers[0].image = 'mutated';
  t.equal(config.pods()[0].spec?.containers[0].image, 'x:2');
  // Nor may mutating what the source passed in.
  const input = pod('b');
  await src.set(withImage(pod('a', { annotations: { keep: '2' } }), 'x:2'), input);
  drainUpdates(config);
  input.spec!.containers[0].image = 'mutated';
  t.equal(config.pods().find((p) => p.metadata?.name === 'b')?.spec?.containers[0].image, 'busybox:1.36');
  t.notOk(input.metadata?.annotations?.[ConfigSourceAnnotationKey], 'the input pod was not annotated in place');
});

t.test('duplicate full names within one update: the first wins and the duplicate is reported', async (t) => {
  const { config, events, logger } = setup();
  const src = new FakePodSource(config, 'api');
  await src.set(pod('a', { uid: 'u1' }), pod('a', { uid: 'u2' }));
  const updates = drainUpdates(config);
  t.same(summarize(updates), ['ADD:a']);
  t.equal(updates[0].pods[0].metadata?.uid, 'u1');
  t.equal(events.length, 1);
  t.match(events[0], { type: 'Warning', reason: 'FailedValidation', message: /duplicate pod name "a"/ });
  t.match(events[0].object, { metadata: { name: 'a', uid: 'u2' } }, 'the event is about the duplicate pod');
  t.ok(logger.find('Pod failed validation due to duplicate pod name, ignoring'));
  t.equal(config.stats().duplicates, 1);
});

t.test('duplicate full names across sources: first seen wins, the other is reported, hidden, and promoted when the first goes', async (t) => {
  const { config, events, logger } = setup();
  const file = new FakePodSource(config, 'file');
  const http = new FakePodSource(config, 'http');
  await file.set(pod('web', { uid: 'from-file' }));
  await http.set(pod('web', { uid: 'from-http' }), pod('other', { uid: 'o' }));
  t.same(summarize(drainUpdates(config)), ['ADD:web', 'ADD:other']);
  t.equal(events.length, 1, 'the duplicate is reported');
  t.match(events[0].message, /from http due to duplicate pod name "web"/);
  t.ok(logger.find(/same full name as a pod seen first/));
  t.same(
    config.pods().map((p) => p.metadata?.uid),
    ['from-file', 'o'],
    'only the first is visible',
  );
  // Changes to the hidden pod are not sent.
  await http.set(withImage(pod('web', { uid: 'from-http' }), 'x:9'), pod('other', { uid: 'o' }));
  t.same(drainUpdates(config), []);
  // The first goes away: the hidden one takes over.
  await file.set();
  const updates = drainUpdates(config);
  t.same(summarize(updates), ['REMOVE:web', 'ADD:web']);
  t.equal(updates[0].source, 'file');
  t.equal(updates[1].source, 'http');
  t.equal(updates[1].pods[0].metadata?.uid, 'from-http');
  t.equal(updates[1].pods[0].spec?.containers[0].image, 'x:9', 'with its latest version');
  // The promoted pod now behaves normally.
  await http.set(pod('other', { uid: 'o' }));
  t.same(summarize(drainUpdates(config)), ['REMOVE:web']);
});

t.test('a hidden duplicate that goes away is not reported as a REMOVE', async (t) => {
  const { config } = setup();
  const a = new FakePodSource(config, 'a');
  const b = new FakePodSource(config, 'b');
  await a.set(pod('x', { uid: '1' }));
  await b.set(pod('x', { uid: '2' }));
  drainUpdates(config);
  await b.set();
  t.same(summarize(drainUpdates(config)), []);
  await a.set();
  t.same(summarize(drainUpdates(config)), ['REMOVE:x'], 'nothing left to promote');
});

t.test('promotion in snapshot modes shows up in the SET', async (t) => {
  const { config } = setup('snapshot');
  const a = new FakePodSource(config, 'a');
  const b = new FakePodSource(config, 'b');
  await a.set(pod('x', { uid: '1' }));
  await b.set(pod('x', { uid: '2' }));
  t.same(summarize(drainUpdates(config)), ['SET:x', 'SET:x']);
  await a.set();
  const [set] = drainUpdates(config);
  t.equal(set.op, PodOperation.SET);
  t.same(
    set.pods.map((p) => p.metadata?.uid),
    ['2'],
  );
});

t.test('a mirror pod in the API source is not a duplicate of its static pod', async (t) => {
  const { config, events } = setup();
  const file = new FakePodSource(config, 'file');
  const api = new FakePodSource(config, 'api');
  await file.set(pod('etcd-node1', { uid: 'static' }));
  await api.set(pod('etcd-node1', { uid: 'mirror', annotations: { [ConfigMirrorAnnotationKey]: 'hash' } }));
  t.same(summarize(drainUpdates(config)), ['ADD:etcd-node1', 'ADD:etcd-node1']);
  t.same(events, []);
});

t.test('a source replacing its own pod (new UID) keeps the name even while another source has a duplicate', async (t) => {
  const { config } = setup();
  const file = new FakePodSource(config, 'file');
  const http = new FakePodSource(config, 'http');
  await file.set(pod('x', { uid: 'v1' }));
  await http.set(pod('x', { uid: 'h' }));
  drainUpdates(config);
  await file.set(pod('x', { uid: 'v2' }));
  const updates = drainUpdates(config);
  t.same(summarize(updates), ['REMOVE:x', 'ADD:x']);
  t.equal(updates[1].pods[0].metadata?.uid, 'v2');
  t.equal(updates[1].source, 'file');
});

t.test('sourcesReady and seenAllSources', async (t) => {
  const { config } = setup();
  t.ok(config.sourcesReady(), 'no sources configured: ready');
  const file = new FakePodSource(config, 'file');
  const api = new FakePodSource(config, 'api');
  t.same(config.configuredSources(), ['file', 'api']);
  t.notOk(config.sourcesReady());
  await file.set(pod('a'));
  t.notOk(config.sourcesReady());
  await api.add(pod('b'));
  t.notOk(config.sourcesReady(), 'an ADD is not a first state');
  await api.set(pod('b'));
  t.ok(config.sourcesReady());
  t.notOk(config.seenAllSources(['file']), 'the consumer has not seen api yet');
  t.ok(config.seenAllSources(new Set(['file', 'api'])));
});

t.test('sync sends a SET of everything with source "*"', async (t) => {
  const { config } = setup();
  const src = new FakePodSource(config, 'api');
  await src.set(pod('a'), pod('b'));
  drainUpdates(config);
  await config.sync();
  const [u] = drainUpdates(config);
  t.equal(u.op, PodOperation.SET);
  t.equal(u.source, '*');
  t.same(
    u.pods.map((p) => p.metadata?.name),
    ['a', 'b'],
  );
  t.same(
    config.podsFromSource('api').map((p) => p.metadata?.name),
    ['a', 'b'],
  );
  t.same(config.podsFromSource('nope'), []);
});

t.test('updates(): ordered async iteration; a full buffer makes sources wait instead of dropping', async (t) => {
  const { config, clock } = setup('incremental', 2);
  const src = new FakePodSource(config, 'api');
  const settled: string[] = [];
  const p1 = src.add(pod('a')).then(() => settled.push('a'));
  const p2 = src.add(pod('b')).then(() => settled.push('b'));
  const p3 = src.add(pod('c')).then(() => settled.push('c'));
  await clock.flush();
  t.same(settled, ['a', 'b'], 'the third send waits for room');
  t.equal(config.stats().buffered, 3, 'but nothing is dropped');
  const got: PodUpdate[] = [];
  const consumer = (async () => {
    for await (const u of config.updates()) {
      got.push(u);
      if (got.length === 4) break;
    }
  })();
  await p1;
  await p2;
  await p3;
  t.same(settled, ['a', 'b', 'c']);
  await src.add(pod('d'));
  await consumer;
  t.same(summarize(got), ['ADD:a', 'ADD:b', 'ADD:c', 'ADD:d']);
  t.same(config.stats(), { merged: 4, emitted: 4, duplicates: 0, buffered: 0 });
});

t.test('updates(): one consumer at a time; close() ends iteration after draining and releases waiting sources', async (t) => {
  const { config } = setup('incremental', 1);
  const src = new FakePodSource(config, 'api');
  void src.add(pod('a'));
  const waiting = src.add(pod('b'));
  const it = config.updates()[Symbol.asyncIterator]();
  t.throws(() => config.updates()[Symbol.asyncIterator](), /already has a consumer/);
  config.close();
  await waiting;
  t.same(summarize([(await it.next()).value, (await it.next()).value]), ['ADD:a', 'ADD:b']);
  t.same(await it.next(), { value: undefined, done: true });
  await src.add(pod('c'));
  t.equal(config.stats().buffered, 0, 'nothing accepted after close');
  await it.return?.();
});

t.test('a consumer waiting on an empty stream gets the next update, and return() releases it', async (t) => {
  const { config } = setup();
  const src = new FakePodSource(config, 'api');
  const it = config.updates()[Symbol.asyncIterator]();
  const next = it.next();
  await src.add(pod('a'));
  t.same(summarize([(await next).value]), ['ADD:a']);
  const pending = it.next();
  await it.return?.();
  t.same(await pending, { value: undefined, done: true });
  const again = config.updates()[Symbol.asyncIterator]();
  t.ok(again, 'a new consumer may iterate after return()');
  await again.return?.();
});

t.test('isAnnotationMapEqual and checkAndUpdatePod directly', async (t) => {
  t.ok(isAnnotationMapEqual(undefined, undefined));
  t.ok(isAnnotationMapEqual({ [ConfigSourceAnnotationKey]: 'x' }, {}));
  t.ok(isAnnotationMapEqual({}, { [ConfigFirstSeenAnnotationKey]: 'x', [ConfigMirrorAnnotationKey]: 'y' }));
  t.notOk(isAnnotationMapEqual({ a: '1' }, {}), 'a stale entry differs');
  t.notOk(isAnnotationMapEqual({}, { a: '1' }));
  t.notOk(isAnnotationMapEqual({ a: '1' }, { a: '2' }));
  const existing = pod('a', { annotations: { [ConfigFirstSeenAnnotationKey]: 't0', x: '1' } });
  const ref = pod('a', { annotations: { [ConfigFirstSeenAnnotationKey]: 't1', x: '2' }, deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 0 });
  t.same(checkAndUpdatePod(existing, ref), { needUpdate: false, needReconcile: false, needGracefulDelete: true });
  t.same(existing.metadata?.annotations, { [ConfigFirstSeenAnnotationKey]: 't0', x: '2' });
  t.equal(existing.metadata?.deletionGracePeriodSeconds, 0);
  t.same(checkAndUpdatePod(existing, structuredClone(existing)), { needUpdate: false, needReconcile: false, needGracefulDelete: false });
});

t.test('a pod whose resourceVersion is the one last merged is not compared again; a new resourceVersion is', async (t) => {
  const { config } = setup();
  const src = new FakePodSource(config, 'api');
  const a = pod('a');
  a.metadata!.resourceVersion = '10';
  await src.set(a, pod('b'));
  t.same(summarize(drainUpdates(config)), ['ADD:a,b']);
  // The same resourceVersion is the same object on the API server: whatever the copy holds, nothing changed.
  await src.set({ ...structuredClone(a), status: { phase: 'Running' } }, pod('b'));
  t.same(summarize(drainUpdates(config)), []);
  await src.set({ ...structuredClone(a), metadata: { ...a.metadata, resourceVersion: '11' }, status: { phase: 'Running' } }, pod('b'));
  t.same(summarize(drainUpdates(config)), ['RECONCILE:a'], 'a new resourceVersion is compared: a status change');
  // Pods without one (files, URLs) are always compared.
  await src.set({ ...structuredClone(a), metadata: { ...a.metadata, resourceVersion: '11' }, status: { phase: 'Running' } }, { ...pod('b'), status: { phase: 'Running' } });
  t.same(summarize(drainUpdates(config)), ['RECONCILE:b']);
});
