import t from 'tap';
import { ManualClock, eventually, http, pod, watch, withServer } from './helpers.js';

t.test('watch without resourceVersion sends the current state as ADDED, then changes', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('a'));
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('b'));
  const w = watch(s, '/api/v1/namespaces/default/pods?watch=true');
  t.teardown(() => w.close());
  await w.waitFor(2);
  t.equal(w.status, 200);
  t.same(
    w.events.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'a'],
      ['ADDED', 'b'],
    ],
  );
  t.equal(w.events[0].object.kind, 'Pod', 'watch objects carry kind');
  t.equal(w.events[0].object.apiVersion, 'v1');
  await s.waitForWatch('pods');
  await http(s, 'PATCH', '/api/v1/namespaces/default/pods/a', { metadata: { labels: { x: 'y' } } }, 'application/merge-patch+json');
  await http(s, 'DELETE', '/api/v1/namespaces/default/pods/b');
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'other' } });
  await http(s, 'POST', '/api/v1/namespaces/other/pods', pod('c'));
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('d'));
  const events = await w.waitFor(6);
  t.same(
    events.slice(2).map((e) => [e.type, e.object.metadata.name]),
    [
      ['MODIFIED', 'a'],
      // A pod delete first writes deletionTimestamp and the grace period, then removes the pod.
      ['MODIFIED', 'b'],
      ['DELETED', 'b'],
      ['ADDED', 'd'],
    ],
    'namespace-scoped watch ignores other namespaces',
  );
  const deleted = events[4].object;
  t.ok(Number(deleted.metadata.resourceVersion) > Number(events[3].object.metadata.resourceVersion), 'DELETED carries the deletion resourceVersion');
  t.equal(deleted.metadata.deletionGracePeriodSeconds, 0);
  t.equal(s.activeWatches('pods'), 1);
  t.equal(s.requests.find((r) => r.verb === 'watch')?.resource, 'pods');
});

t.test('watch from a resourceVersion replays history; too old gets 410 Expired', async (t) => {
  const s = await withServer(t, { maxHistory: 5 });
  const list = await http(s, 'GET', '/api/v1/namespaces/default/configmaps');
  const rv0 = list.body.metadata.resourceVersion;
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'one' } });
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'two' } });
  const w = watch(s, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv0}`);
  t.teardown(() => w.close());
  const ev = await w.waitFor(2);
  t.same(
    ev.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'one'],
      ['ADDED', 'two'],
    ],
  );
  const fromTwo = watch(s, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${ev[0].object.metadata.resourceVersion}`);
  t.teardown(() => fromTwo.close());
  t.same(
    (await fromTwo.waitFor(1)).map((e) => e.object.metadata.name),
    ['two'],
    'only events after the given resourceVersion',
  );

  // Overflow the history (max 5 events): rv0 falls out.
  for (let i = 0; i < 6; i++) await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: `x${i}` } });
  const old = watch(s, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv0}`);
  await old.waitEnded();
  t.equal(old.status, 200, 'the stream starts with 200');
  t.equal(old.events.length, 1);
  t.equal(old.events[0].type, 'ERROR');
  t.same(old.events[0].object, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `too old resource version: ${rv0} (${s.store.raw.oldestResourceVersion})`,
    reason: 'Expired',
    code: 410,
  });

  // compact() drops everything up to now.
  const rvNow = String(s.store.resourceVersion);
  const before = watch(s, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${Number(rvNow) - 1}`);
  await before.waitFor(1);
  await before.close();
  s.compact();
  const compacted = watch(s, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${Number(rvNow) - 1}`);
  await compacted.waitEnded();
  t.equal(compacted.events[0].type, 'ERROR');
  t.equal(compacted.events[0].object.code, 410);
  const current = watch(s, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rvNow}`);
  t.teardown(() => current.close());
  await s.waitForWatch('configmaps', 3);
  t.notOk(current.ended, 'a watch from the current resourceVersion is fine after compaction');
});

t.test('bookmarks: on demand, periodic with an injected clock, and initial-events-end', async (t) => {
  const clock = new ManualClock();
  const s = await withServer(t, { clock, bookmarkIntervalMs: 1000 });
  await http(s, 'POST', '/api/v1/nodes', { metadata: { name: 'n1' } });
  const rv = String(s.store.resourceVersion);
  const w = watch(s, `/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`);
  const plain = watch(s, `/api/v1/nodes?watch=true&resourceVersion=${rv}`);
  t.teardown(() => w.close());
  t.teardown(() => plain.close());
  await s.waitForWatch('nodes', 2);
  s.sendBookmarks();
  const ev = await w.waitFor(1);
  // An empty Node (Go's zero value as encoding/json writes it) with only the resourceVersion set, as kube sends.
  t.same(ev[0], {
    type: 'BOOKMARK',
    object: {
      kind: 'Node',
      apiVersion: 'v1',
      metadata: { resourceVersion: rv, creationTimestamp: null },
      spec: {},
      status: {
        daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
        nodeInfo: {
          machineID: '',
          systemUUID: '',
          bootID: '',
          kernelVersion: '',
          osImage: '',
          containerRuntimeVersion: '',
          kubeletVersion: '',
          kubeProxyVersion: '',
          operatingSystem: '',
          architecture: '',
        },
      },
    },
  });
  await http(s, 'PATCH', '/api/v1/nodes/n1', { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
  await w.waitFor(2);
  clock.advance(1000);
  const ev3 = await w.waitFor(3);
  t.equal(ev3[2].type, 'BOOKMARK');
  t.equal(ev3[2].object.metadata.resourceVersion, String(s.store.resourceVersion), 'bookmark at the latest resourceVersion');
  await plain.waitFor(1);
  t.same(
    plain.events.map((e) => e.type),
    ['MODIFIED'],
    'no bookmarks without allowWatchBookmarks',
  );

  const wl = watch(s, '/api/v1/nodes?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan');
  t.teardown(() => wl.close());
  const initial = await wl.waitFor(2);
  t.equal(initial[0].type, 'ADDED');
  t.equal(initial[1].type, 'BOOKMARK');
  t.same(initial[1].object.metadata.annotations, { 'k8s.io/initial-events-end': 'true' });

  const timed = watch(s, `/api/v1/nodes?watch=true&timeoutSeconds=5&resourceVersion=${rv}`);
  await s.waitForWatch('nodes', 4);
  clock.advance(4000);
  t.notOk(timed.ended);
  clock.advance(1000);
  await timed.waitEnded();
  t.pass('timeoutSeconds ends the stream cleanly');
});

t.test('field and label selectors filter watch events; objects leaving the selector are DELETED', async (t) => {
  const s = await withServer(t);
  const rv = String(s.store.resourceVersion);
  const mine = watch(s, `/api/v1/pods?watch=true&resourceVersion=${rv}&fieldSelector=spec.nodeName%3Dnode-a`);
  const labelled = watch(s, `/api/v1/namespaces/default/pods?watch=true&resourceVersion=${rv}&labelSelector=app%3Dweb`);
  t.teardown(() => mine.close());
  t.teardown(() => labelled.close());
  await s.waitForWatch('pods', 2);
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('on-a', { spec: { nodeName: 'node-a' }, metadata: { labels: { app: 'web' } } }));
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('on-b', { spec: { nodeName: 'node-b' } }));
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('unscheduled', { metadata: { labels: { app: 'web' } } }));
  await http(s, 'POST', '/api/v1/namespaces/default/pods/unscheduled/binding', { target: { kind: 'Node', name: 'node-a' } });
  await http(s, 'PATCH', '/api/v1/namespaces/default/pods/on-a', { metadata: { labels: { app: 'db' } } }, 'application/merge-patch+json');
  const ev = await mine.waitFor(3);
  t.same(
    ev.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'on-a'],
      ['ADDED', 'unscheduled'],
      ['MODIFIED', 'on-a'],
    ],
    'a pod bound to the node appears as ADDED',
  );
  const lev = await labelled.waitFor(4);
  t.same(
    lev.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'on-a'],
      ['ADDED', 'unscheduled'],
      ['MODIFIED', 'unscheduled'],
      ['DELETED', 'on-a'],
    ],
    'a pod whose labels stop matching is DELETED for the watcher',
  );
  t.equal(lev[3].object.metadata.labels.app, 'db', 'with its new state');

  const bad = await http(s, 'GET', '/api/v1/pods?watch=true&fieldSelector=nope%3D1');
  t.equal(bad.status, 400, 'selector errors are plain HTTP errors');
});

t.test('stop(), setUnavailable() and close() end open watches', async (t) => {
  const s = await withServer(t);
  const w1 = watch(s, '/api/v1/pods?watch=true');
  await s.waitForWatch('pods');
  s.setUnavailable(true);
  await w1.waitEnded();
  s.setUnavailable(false);
  const w2 = watch(s, '/api/v1/pods?watch=true');
  await s.waitForWatch('pods');
  await s.stop();
  await w2.waitEnded();
  await s.restart();
  const w3 = watch(s, '/api/v1/pods?watch=true');
  await s.waitForWatch('pods');
  await s.close();
  await w3.waitEnded();
  t.equal(s.activeWatches(), 0);
  await eventually(() => w3.ended);
});
