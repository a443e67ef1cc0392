// What sending the kubelet's requests to this server and to a real kube-apiserver v1.20.2 found
// (tools/cluster-e2e/test/stand-in-vs-real.test.ts), one case a fix: each asserts what the real server answered.
import t from 'tap';
import { canonicalQuantity, goFormat } from '../src/index.js';
import { ManualClock, http, pod, watch, withServer, type Obj } from './helpers.js';

const SMP = 'application/strategic-merge-patch+json';
const MERGE = 'application/merge-patch+json';
const PODS = '/api/v1/namespaces/default/pods';

t.test('quantities come back in canonical form; resource lists are rounded up to milli units', async (t) => {
  // Each pair as kube-apiserver v1.20.2 answered it (node status capacity).
  const seen: Record<string, string> = {
    '96636764000': '96636764k',
    '1000': '1k',
    '0.5Gi': '512Mi',
    '1.5Gi': '1536Mi',
    '24576Mi': '24Gi',
    '1e3': '1e3',
    '1500m': '1500m',
    '100Ki': '100Ki',
    '1024': '1024',
    '2048Ki': '2Mi',
    '1.5': '1500m',
    '12e6': '12e6',
    '0.5Ki': '512',
    '1Ei': '1Ei',
    '1E': '1E',
    '1e-3': '1e-3',
    '0.25': '250m',
    '7': '7',
  };
  for (const [sent, back] of Object.entries(seen)) t.equal(canonicalQuantity(sent, -3), back, `${sent} -> ${back}`);
  t.equal(canonicalQuantity('0.0001m', -3), '1m', 'a resource list value rounds up to 1m');
  t.equal(canonicalQuantity('0.0001m'), '100n', 'a lone quantity keeps nano precision');
  t.equal(canonicalQuantity(0.5), '500m', 'a JSON number is a quantity too');
  t.equal(canonicalQuantity('lots'), undefined);

  const s = await withServer(t);
  const node = await http(s, 'POST', '/api/v1/nodes', { metadata: { name: 'n1' }, status: { capacity: { memory: '24576Mi', cpu: 2, weird: '0.0001m' } } });
  t.same(node.body.status.capacity, { memory: '24Gi', cpu: '2', weird: '1m' });
  const p = await http(s, 'POST', PODS, pod('p', { spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: '0.1', memory: '0.0625Gi' } } }], volumes: [{ name: 'v', emptyDir: { sizeLimit: '1000Mi' } }] } }));
  t.same(p.body.spec.containers[0].resources, { limits: { cpu: '100m', memory: '64Mi' }, requests: { cpu: '100m', memory: '64Mi' } });
  t.equal(p.body.spec.volumes[0].emptyDir.sizeLimit, '1000Mi');
  t.equal(p.body.status.qosClass, 'Guaranteed');
});

t.test('node allocatable defaults to capacity, on every write', async (t) => {
  const s = await withServer(t);
  const node = await http(s, 'POST', '/api/v1/nodes', { metadata: { name: 'n1' }, status: { capacity: { cpu: '4' } } });
  t.same(node.body.status.allocatable, { cpu: '4' });
  const patched = await http(s, 'PATCH', '/api/v1/nodes/n1/status', { status: { capacity: { cpu: '8' }, allocatable: null } }, SMP);
  t.same(patched.body.status.allocatable, { cpu: '8' });
});

t.test('fields without omitempty come back even when not sent, as encoding/json writes them', async (t) => {
  const s = await withServer(t);
  const p = (await http(s, 'POST', PODS, pod('p', { spec: { nodeName: 'n1' } }))).body;
  const st = await http(
    s,
    'PATCH',
    `${PODS}/p/status`,
    {
      metadata: { uid: p.metadata.uid },
      status: {
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2030-01-02T00:00:00Z' }],
        containerStatuses: [{ name: 'c', ready: true, state: { terminated: { reason: 'Completed' } } }],
      },
    },
    SMP,
  );
  t.same(st.body.status.conditions, [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2030-01-02T00:00:00Z' }]);
  t.same(st.body.status.containerStatuses, [
    { name: 'c', ready: true, state: { terminated: { reason: 'Completed', exitCode: 0, startedAt: null, finishedAt: null } }, lastState: {}, restartCount: 0, image: '', imageID: '' },
  ]);

  const bare = await withServer(t, { admission: { TaintNodesByCondition: false } });
  const node = await http(bare, 'POST', '/api/v1/nodes', { metadata: { name: 'n1' }, status: { conditions: [{ type: 'Ready', status: 'False' }], images: [{ sizeBytes: 1 }] } });
  t.same(node.body.spec, {}, 'a struct is written even when empty');
  t.match(node.body.status, {
    conditions: [{ type: 'Ready', status: 'False', lastHeartbeatTime: null, lastTransitionTime: null }],
    images: [{ names: null, sizeBytes: 1 }],
    daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    nodeInfo: { machineID: '', kubeletVersion: '', architecture: '' },
  });

  const ev = await http(s, 'POST', '/api/v1/namespaces/default/events', { metadata: { name: 'e' }, involvedObject: { kind: 'Pod', name: 'p' }, reason: 'Started', firstTimestamp: '2030-01-02T00:00:00Z' });
  t.match(ev.body, { source: {}, lastTimestamp: null, eventTime: null, reportingComponent: '', reportingInstance: '' });
  const lease = await http(s, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { metadata: { name: 'l' } });
  t.same(lease.body.spec, {});
  const ns = await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'x' } });
  t.same(ns.body.status, { phase: 'Active' });
});

t.test('a bookmark is an empty object of the kind; before a timeout one comes when there is news', async (t) => {
  const clock = new ManualClock();
  const s = await withServer(t, { clock });
  await http(s, 'POST', PODS, pod('p'));
  const rv = String(s.store.resourceVersion);

  // Two seconds before its timeout a watch that allows bookmarks gets one, once the resourceVersion moved on.
  const w = watch(s, `${PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=${rv}`);
  const quiet = watch(s, `${PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=${rv}&fieldSelector=metadata.name%3Dother`);
  await s.waitForWatch('pods', 2);
  await http(s, 'PATCH', `${PODS}/p`, { metadata: { labels: { a: 'b' } } }, MERGE);
  await w.waitFor(1);
  clock.advance(2999);
  t.equal(w.events.length, 1, 'no bookmark before');
  clock.advance(1);
  const events = await w.waitFor(2);
  t.same(events[1], {
    type: 'BOOKMARK',
    object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(s.store.resourceVersion), creationTimestamp: null }, spec: { containers: null }, status: {} },
  });
  // The other watch saw no event, but the resourceVersion moved past where it started: it gets one too.
  t.equal((await quiet.waitFor(1))[0].type, 'BOOKMARK');
  clock.advance(2000);
  await w.waitEnded();

  // Nothing changed since the watch started: no bookmark.
  const idle = watch(s, `${PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=3`);
  await s.waitForWatch('pods');
  await idle.waitFor(1);
  clock.advance(3000);
  await idle.waitEnded();
  t.same(
    idle.events.map((e) => e.type),
    ['ADDED'],
  );

  const leases = watch(s, '/apis/coordination.k8s.io/v1/leases?watch=true&allowWatchBookmarks=true');
  t.teardown(() => leases.close());
  await s.waitForWatch('leases');
  s.sendBookmarks();
  t.same((await leases.waitFor(1))[0].object, { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', metadata: { resourceVersion: String(s.store.resourceVersion), creationTimestamp: null }, spec: {} });
});

t.test('a status write changes metadata too; a pod keeps its owner references', async (t) => {
  const s = await withServer(t);
  const owner = [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u-1' }];
  const p = (await http(s, 'POST', PODS, pod('p', { metadata: { ownerReferences: owner }, spec: { nodeName: 'n1' } }))).body;
  const r = await http(s, 'PATCH', `${PODS}/p/status`, { metadata: { labels: { a: 'b' }, ownerReferences: null }, spec: { nodeName: 'other' }, status: { phase: 'Running' } }, MERGE);
  t.equal(r.status, 200);
  t.same(r.body.metadata.labels, { a: 'b' });
  t.same(r.body.metadata.ownerReferences, owner);
  t.equal(r.body.spec.nodeName, 'n1', 'the spec is kept');
  t.equal(r.body.metadata.generation, p.metadata.generation);

  await http(s, 'POST', '/api/v1/nodes', { metadata: { name: 'n1' } });
  const n = await http(s, 'PATCH', '/api/v1/nodes/n1/status', { metadata: { annotations: { x: 'y' } }, spec: { unschedulable: true } }, SMP);
  t.same(n.body.metadata.annotations, { x: 'y' });
  t.equal(n.body.spec.unschedulable, undefined);
});

t.test('a patch changing the uid: two causes, the message says it once', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', PODS, pod('p'));
  const r = await http(s, 'PATCH', `${PODS}/p/status`, { metadata: { uid: 'other' } }, SMP);
  t.equal(r.status, 422);
  t.equal(r.body.message, 'Pod "p" is invalid: metadata.uid: Invalid value: "other": field is immutable');
  t.same(
    r.body.details.causes.map((c: Obj) => c.field),
    ['metadata.uid', 'metadata.uid'],
  );
});

t.test('pod updates: v1.20 rules and message; DefaultTolerationSeconds admits updates too', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', PODS, pod('p', { spec: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }] } }));
  const grace = await http(s, 'PATCH', `${PODS}/p`, { spec: { terminationGracePeriodSeconds: 10 } }, SMP);
  t.equal(grace.status, 422, 'terminationGracePeriodSeconds may not change in v1.20');
  t.equal(
    grace.body.message.split('\n')[0],
    'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations)',
  );
  t.match(grace.body.message, /\n- terminationGracePeriodSeconds: 10\n\+ terminationGracePeriodSeconds: 30\n$/);

  const removed = await http(s, 'PATCH', `${PODS}/p`, { spec: { tolerations: [] } }, MERGE);
  t.equal(removed.status, 422);
  t.equal(removed.body.message, 'Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds');

  const seconds = await http(s, 'GET', `${PODS}/p`);
  const tolerations = seconds.body.spec.tolerations.map((x: Obj) => (x.key === 'node.kubernetes.io/not-ready' ? { ...x, tolerationSeconds: 60 } : x));
  const changed = await http(s, 'PATCH', `${PODS}/p`, { spec: { tolerations } }, MERGE);
  t.equal(changed.status, 200, 'tolerationSeconds may change');
  const defaults = await http(s, 'PATCH', `${PODS}/p`, { spec: { tolerations: [changed.body.spec.tolerations[0]] } }, MERGE);
  t.equal(defaults.status, 200, 'the default tolerations come back on update');
  t.equal(defaults.body.spec.tolerations.find((x: Obj) => x.key === 'node.kubernetes.io/not-ready').tolerationSeconds, 300);

  const q = (await http(s, 'POST', PODS, pod('q'))).body;
  const again = await http(s, 'PATCH', `${PODS}/q`, { spec: { tolerations: [] } }, MERGE);
  t.equal(again.status, 200, 'removing only the default tolerations: they come back');
  t.same(again.body.spec.tolerations, q.spec.tolerations);
  t.equal(again.body.metadata.resourceVersion, q.metadata.resourceVersion, 'nothing changed');
});

t.test('pod deletion: the write of deletionTimestamp first, then the removal', async (t) => {
  const s = await withServer(t);
  const w = watch(s, `${PODS}?watch=true&resourceVersion=${s.store.resourceVersion}`);
  t.teardown(() => w.close());
  await s.waitForWatch('pods');

  // Unscheduled: it goes at once, answering with deletionTimestamp now and grace period 0.
  await http(s, 'POST', PODS, pod('pending'));
  const gone = await http(s, 'DELETE', `${PODS}/pending`);
  t.equal(gone.status, 200);
  t.equal(gone.body.kind, 'Pod');
  t.equal(gone.body.metadata.deletionGracePeriodSeconds, 0);
  t.ok(gone.body.metadata.deletionTimestamp);
  t.same(
    (await w.waitFor(3)).map((e) => `${e.type} ${e.object.metadata.deletionGracePeriodSeconds}`),
    ['ADDED undefined', 'MODIFIED 0', 'DELETED 0'],
  );

  // Scheduled: graceful; a delete without a grace period changes nothing, even once the pod finished; the kubelet's
  // final delete (grace 0, uid precondition) answers with grace period 0.
  const p = (await http(s, 'POST', PODS, pod('p', { spec: { nodeName: 'n1' } }))).body;
  const graceful = (await http(s, 'DELETE', `${PODS}/p`, { gracePeriodSeconds: 30 })).body;
  t.equal(graceful.metadata.deletionGracePeriodSeconds, 30);
  await http(s, 'PATCH', `${PODS}/p/status`, { status: { phase: 'Succeeded' } }, MERGE);
  const rv = s.store.resourceVersion;
  const pending = await http(s, 'DELETE', `${PODS}/p`);
  t.equal(pending.body.metadata.deletionGracePeriodSeconds, 30);
  t.equal(s.store.resourceVersion, rv, 'nothing written');
  const final = await http(s, 'DELETE', `${PODS}/p`, { gracePeriodSeconds: 0, preconditions: { uid: p.metadata.uid } });
  t.equal(final.status, 200);
  t.equal(final.body.metadata.deletionGracePeriodSeconds, 0);
  t.equal(Date.parse(final.body.metadata.deletionTimestamp), Date.parse(graceful.metadata.deletionTimestamp) - 30_000, 'deletionTimestamp moved back by the 30 s given up');
  t.same(
    (await w.waitFor(8)).slice(3).map((e) => `${e.type} ${e.object.metadata.deletionGracePeriodSeconds}`),
    ['ADDED undefined', 'MODIFIED 30', 'MODIFIED 30', 'MODIFIED 0', 'DELETED 0'],
  );

  // A negative grace period counts as 1 s.
  await http(s, 'POST', PODS, pod('neg', { spec: { nodeName: 'n1' } }));
  t.equal((await http(s, 'DELETE', `${PODS}/neg`, { gracePeriodSeconds: -5 })).body.metadata.deletionGracePeriodSeconds, 1);
});

t.test('a namespace delete answers with the namespace, Terminating', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'x' } });
  await http(s, 'POST', '/api/v1/namespaces/x/configmaps', { metadata: { name: 'c' } });
  const r = await http(s, 'DELETE', '/api/v1/namespaces/x');
  t.equal(r.status, 200);
  t.match(r.body, { kind: 'Namespace', metadata: { name: 'x', deletionTimestamp: String }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Terminating' } });
  // Its controller, which the stand-in runs at once, has removed what it held and then the namespace.
  t.equal((await http(s, 'GET', '/api/v1/namespaces/x/configmaps/c')).status, 404);
  t.equal((await http(s, 'GET', '/api/v1/namespaces/x')).status, 404);
});

t.test('field selectors as v1.20 reads them', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', PODS, pod('p', { spec: { nodeName: 'n1' } }));
  await http(s, 'PATCH', `${PODS}/p/status`, { status: { podIP: '10.0.0.9', podIPs: [{ ip: '10.0.0.1' }] } }, MERGE);
  const names = async (selector: string) => (await http(s, 'GET', `${PODS}?fieldSelector=${encodeURIComponent(selector)}`)).body.items?.map((p: Obj) => p.metadata.name);
  t.same(await names('spec.host=n1'), ['p'], 'spec.host is spec.nodeName for old v1 clients');
  t.same(await names('status.podIP=10.0.0.1'), ['p'], 'status.podIP is the first of status.podIPs');
  t.same(await names('status.podIP=10.0.0.9'), []);
  t.same(await names('status.podIPs='), ['p'], 'status.podIPs is a label with no field: always empty');
  t.same(await names('status.podIPs=10.0.0.1'), []);

  await http(s, 'POST', '/api/v1/namespaces/default/events', { metadata: { name: 'e' }, involvedObject: { kind: 'Pod', name: 'p' }, source: { component: 'kubelet', host: 'n1' } });
  const events = await http(s, 'GET', `/api/v1/namespaces/default/events?fieldSelector=source%3Dkubelet`);
  t.same(
    events.body.items.map((e: Obj) => e.metadata.name),
    ['e'],
    "an event's source is its component",
  );

  for (const path of ['/api/v1/namespaces/default/configmaps', '/api/v1/namespaces/default/services', '/apis/coordination.k8s.io/v1/namespaces/default/leases']) {
    const r = await http(s, 'GET', `${path}?fieldSelector=spec.x%3D1`);
    t.equal(r.status, 400);
    t.equal(r.body.message, '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"', path);
  }
  t.equal((await http(s, 'GET', `${PODS}?fieldSelector=spec.x%3D1`)).body.message, 'field label not supported: spec.x');
});

t.test('a patched object that does not decode: 422 Invalid on the field "patch"', async (t) => {
  t.equal(goFormat({ spec: { renewTime: 'x', leaseDurationSeconds: 40, big: 1000000, list: ['a', 1.5], none: null } }), 'map[spec:map[big:1e+06 leaseDurationSeconds:40 list:[a 1.5] none:<nil> renewTime:x]]');
  const s = await withServer(t);
  await http(s, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { metadata: { name: 'l' }, spec: { holderIdentity: 'h' } });
  const patch = { spec: { renewTime: '2030-01-02T00:00:20.500Z', leaseDurationSeconds: 40 } };
  const parse = 'parsing time "2030-01-02T00:00:20.500Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".500Z" as ".000000"';
  const smp = await http(s, 'PATCH', '/apis/coordination.k8s.io/v1/namespaces/default/leases/l', patch, SMP);
  t.equal(smp.status, 422);
  const value = 'Invalid value: "map[spec:map[leaseDurationSeconds:40 renewTime:2030-01-02T00:00:20.500Z]]": ' + parse;
  t.same(smp.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: ` "" is invalid: patch: ${value}`, reason: 'Invalid', details: { causes: [{ reason: 'FieldValueInvalid', message: value, field: 'patch' }] }, code: 422 });
  const merge = await http(s, 'PATCH', '/apis/coordination.k8s.io/v1/namespaces/default/leases/l', patch, MERGE);
  t.equal(merge.status, 422);
  t.match(merge.body.message, /^ "" is invalid: patch: Invalid value: "\{.*\}": parsing time/);
  // A body that does not decode on create or update stays a 400.
  const put = await http(s, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/default/leases/l', { metadata: { name: 'l' }, spec: { renewTime: '2030-01-02T00:00:20.500Z' } });
  t.equal(put.status, 400);
  t.equal(put.body.message, `Lease in version "v1" cannot be handled as a Lease: ${parse}`);
});

t.test("volume defaults: downward API fieldRef apiVersion, a resourceFieldRef's divisor, a token projection's expiry", async (t) => {
  const s = await withServer(t);
  const created = await http(
    s,
    'POST',
    PODS,
    pod('vols', {
      spec: {
        containers: [{ name: 'c', image: 'busybox:1.36', env: [{ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.memory' } } }] }],
        volumes: [
          {
            name: 'dapi',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'mem', resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' } },
                { path: 'cpu', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu' } },
              ],
            },
          },
          {
            name: 'proj',
            projected: {
              sources: [
                { serviceAccountToken: { audience: 'aud', path: 'token' } },
                { serviceAccountToken: { path: 'token2', expirationSeconds: 7200 } },
                { downwardAPI: { items: [{ path: 'podname', fieldRef: { fieldPath: 'metadata.name' } }] } },
              ],
            },
          },
        ],
      },
    }),
  );
  // As kube-apiserver v1.20.2 answered the same pod.
  const volumes = created.body.spec.volumes as Obj[];
  t.same(volumes[0].downwardAPI, {
    items: [
      { path: 'labels', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.labels' } },
      { path: 'mem', resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' } },
      { path: 'cpu', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu', divisor: '0' } },
    ],
    defaultMode: 420,
  });
  t.same(volumes[1].projected, {
    sources: [
      { serviceAccountToken: { audience: 'aud', path: 'token', expirationSeconds: 3600 } },
      { serviceAccountToken: { path: 'token2', expirationSeconds: 7200 } },
      { downwardAPI: { items: [{ path: 'podname', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } }] } },
    ],
    defaultMode: 420,
  });
  t.same(created.body.spec.containers[0].env, [{ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '0' } } }]);
});

t.test("a configMap watched by name, as the kubelet's managers do: events of that object only; bookmarks at the resource's own version", async (t) => {
  const clock = new ManualClock();
  const s = await withServer(t, { clock });
  const CMS = '/api/v1/namespaces/default/configmaps';
  const sel = `fieldSelector=${encodeURIComponent('metadata.name=cm1')}`;
  const listed = await http(s, 'GET', `${CMS}?${sel}&resourceVersion=0`);
  t.same(listed.body, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: listed.body.metadata.resourceVersion }, items: [] }, 'not there yet: an empty list');
  const from = listed.body.metadata.resourceVersion as string;
  const w = watch(s, `${CMS}?${sel}&resourceVersion=${from}&allowWatchBookmarks=true&timeoutSeconds=5&watch=true`);
  await s.waitForWatch('configmaps');
  await http(s, 'POST', CMS, { metadata: { name: 'cm1' }, data: { a: '1' } });
  await http(s, 'POST', CMS, { metadata: { name: 'cm2' }, data: { a: '1' } });
  await http(s, 'PUT', `${CMS}/cm1`, { metadata: { name: 'cm1' }, data: { a: '2' } });
  await http(s, 'PUT', `${CMS}/cm2`, { metadata: { name: 'cm2' }, data: { a: '2' } });
  const cm3 = (await http(s, 'POST', CMS, { metadata: { name: 'cm3' } })).body;
  await http(s, 'DELETE', `${CMS}/cm1`);
  const lastConfigMap = cm3.metadata.resourceVersion as string;
  const after = (await http(s, 'GET', `${CMS}?${sel}&resourceVersion=0`)).body;
  t.same(after.items, [], 'gone again');
  // A change of another resource moves the server's version, not the configmaps' watch cache's.
  const secret = (await http(s, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 's1' } })).body;
  const events = await w.waitFor(3);
  t.same(
    events.map((e) => [e.type, e.object.metadata.name, e.object.data]),
    [
      ['ADDED', 'cm1', { a: '1' }],
      ['MODIFIED', 'cm1', { a: '2' }],
      ['DELETED', 'cm1', { a: '2' }],
    ],
    'only cm1',
  );
  const deletedRv = events[2].object.metadata.resourceVersion as string;
  t.ok(Number(deletedRv) > Number(lastConfigMap), 'the deletion is the latest configmap change');
  clock.advance(3000);
  const withBookmark = await w.waitFor(4);
  t.same(
    withBookmark[3],
    { type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: deletedRv, creationTimestamp: null } } },
    "two seconds before the timeout, a bookmark at the configmaps' latest change, not the later secret's",
  );
  t.ok(Number(secret.metadata.resourceVersion) > Number(deletedRv));
  clock.advance(2000);
  await w.waitEnded();

  // Nothing of the resource changed since the watch started: no bookmark, whatever else changed.
  const idle = watch(s, `${CMS}?${sel}&resourceVersion=${deletedRv}&allowWatchBookmarks=true&timeoutSeconds=4&watch=true`);
  await s.waitForWatch('configmaps');
  await http(s, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 's2' } });
  clock.advance(4000);
  await idle.waitEnded();
  t.same(idle.events, [], 'no events, no bookmark');

  // On demand (a test control), a watch from a version past the configmaps' gets a bookmark at its own version.
  const now = String(s.store.resourceVersion);
  const late = watch(s, `${CMS}?${sel}&resourceVersion=${now}&allowWatchBookmarks=true&watch=true`);
  t.teardown(() => late.close());
  await s.waitForWatch('configmaps');
  s.sendBookmarks();
  t.equal((await late.waitFor(1))[0].object.metadata.resourceVersion, now, 'never a version older than the one it started from');

  const tooLarge = await http(s, 'GET', `${CMS}?${sel}&resourceVersion=99999999`);
  t.same([tooLarge.status, tooLarge.body.reason, tooLarge.body.message], [504, 'Timeout', `Timeout: Too large resource version: 99999999, current: ${s.store.resourceVersion}`]);
  const secrets = await http(s, 'GET', `/api/v1/namespaces/default/secrets?fieldSelector=${encodeURIComponent('type=Opaque,metadata.name=s1')}`);
  t.same(
    secrets.body.items.map((x: Obj) => x.metadata.name),
    ['s1'],
    'secrets also select on type',
  );
});
