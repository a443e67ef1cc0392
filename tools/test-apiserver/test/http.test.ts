import t from 'tap';
import { http, pod, withServer } from './helpers.js';

t.test('discovery, version and health endpoints', async (t) => {
  const s = await withServer(t);
  t.match(s.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const api = await http(s, 'GET', '/api');
  t.equal(api.body.kind, 'APIVersions');
  t.same(api.body.versions, ['v1']);
  const v1 = await http(s, 'GET', '/api/v1');
  t.equal(v1.body.kind, 'APIResourceList');
  t.equal(v1.body.groupVersion, 'v1');
  const names = v1.body.resources.map((r: any) => r.name);
  for (const n of ['pods', 'pods/status', 'pods/binding', 'nodes', 'nodes/status', 'namespaces', 'events', 'configmaps', 'secrets', 'services']) {
    t.ok(names.includes(n), `core/v1 lists ${n}`);
  }
  t.same(v1.body.resources.find((r: any) => r.name === 'pods'), {
    name: 'pods',
    singularName: 'pod',
    namespaced: true,
    kind: 'Pod',
    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    shortNames: ['po'],
  });
  const apis = await http(s, 'GET', '/apis');
  t.equal(apis.body.kind, 'APIGroupList');
  t.ok(apis.body.groups.some((g: any) => g.name === 'coordination.k8s.io' && g.preferredVersion.groupVersion === 'coordination.k8s.io/v1'));
  t.ok(apis.body.groups.some((g: any) => g.name === 'events.k8s.io'));
  const coord = await http(s, 'GET', '/apis/coordination.k8s.io/v1');
  t.equal(coord.body.resources[0].name, 'leases');
  t.equal((await http(s, 'GET', '/apis/coordination.k8s.io')).body.kind, 'APIGroup');
  const version = await http(s, 'GET', '/version');
  t.equal(version.body.major, '1');
  t.match(version.body.gitVersion, /^v1\./);
  for (const p of ['/healthz', '/readyz', '/livez']) {
    const r = await http(s, 'GET', p);
    t.equal(r.status, 200);
    t.equal(r.body, 'ok');
  }
  const missing = await http(s, 'GET', '/api/v1/widgets');
  t.equal(missing.status, 404);
  t.same(missing.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  });
});

t.test('create, get and list pods with server-set metadata and defaults', async (t) => {
  const s = await withServer(t);
  const created = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('web', { metadata: { labels: { app: 'web' } } }));
  t.equal(created.status, 201);
  const p = created.body;
  t.equal(p.kind, 'Pod');
  t.equal(p.apiVersion, 'v1');
  t.equal(p.metadata.namespace, 'default', 'namespace defaults from the path');
  t.match(p.metadata.uid, /^[0-9a-f-]{36}$/);
  t.match(p.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.match(p.metadata.resourceVersion, /^\d+$/);
  t.equal(p.metadata.generation, 1);
  t.same(p.status, { phase: 'Pending', qosClass: 'BestEffort' });
  t.equal(p.spec.restartPolicy, 'Always');
  t.equal(p.spec.terminationGracePeriodSeconds, 30);
  t.equal(p.spec.dnsPolicy, 'ClusterFirst');
  t.equal(p.spec.containers[0].imagePullPolicy, 'IfNotPresent');
  t.equal(p.spec.containers[0].terminationMessagePath, '/dev/termination-log');

  const got = await http(s, 'GET', '/api/v1/namespaces/default/pods/web');
  t.equal(got.status, 200);
  t.same(got.body, p);

  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('db', { metadata: { labels: { app: 'db', tier: 'backend' } }, spec: { nodeName: 'node-a' } }));
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'other' } });
  await http(s, 'POST', '/api/v1/namespaces/other/pods', pod('web', { metadata: { labels: { app: 'web' } }, spec: { nodeName: 'node-b' } }));

  const all = await http(s, 'GET', '/api/v1/pods');
  t.equal(all.body.kind, 'PodList');
  t.equal(all.body.apiVersion, 'v1');
  t.equal(all.body.metadata.resourceVersion, String(s.store.resourceVersion));
  t.same(
    all.body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`),
    ['default/db', 'default/web', 'other/web'],
    'sorted by namespace/name',
  );
  t.equal(all.body.items[0].kind, undefined, 'items of a typed list carry no kind');

  const ns = await http(s, 'GET', '/api/v1/namespaces/default/pods');
  t.equal(ns.body.items.length, 2);

  const sel = async (q: string): Promise<string[]> =>
    (await http(s, 'GET', `/api/v1/pods?${q}`)).body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`);
  t.same(await sel('labelSelector=app%3Dweb'), ['default/web', 'other/web']);
  t.same(await sel('labelSelector=app%3Dweb%2Capp!%3Ddb'), ['default/web', 'other/web']);
  t.same(await sel('labelSelector=tier'), ['default/db']);
  t.same(await sel('labelSelector=!tier'), ['default/web', 'other/web']);
  t.same(await sel('labelSelector=app%20in%20(db%2Cx)'), ['default/db']);
  t.same(await sel('fieldSelector=spec.nodeName%3Dnode-b'), ['other/web']);
  t.same(await sel('fieldSelector=spec.nodeName%3D'), ['default/web'], 'empty value matches unset fields');
  t.same(await sel('fieldSelector=metadata.namespace%3Dother'), ['other/web']);
  t.same(await sel('fieldSelector=metadata.name%3Dweb%2Cmetadata.namespace!%3Dother'), ['default/web']);
  const bad = await http(s, 'GET', '/api/v1/pods?fieldSelector=spec.bogus%3Dx');
  t.equal(bad.status, 400);
  t.equal(bad.body.reason, 'BadRequest');
  t.equal(bad.body.message, 'field label not supported: spec.bogus');

  const nf = await http(s, 'GET', '/api/v1/namespaces/default/pods/x');
  t.equal(nf.status, 404);
  t.same(nf.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'pods "x" not found',
    reason: 'NotFound',
    details: { name: 'x', kind: 'pods' },
    code: 404,
  });
});

t.test('create errors: AlreadyExists, Invalid, BadRequest, missing namespace, generateName', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm' }, data: { a: '1' } });
  const dup = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm' } });
  t.equal(dup.status, 409);
  t.same(dup.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'configmaps "cm" already exists',
    reason: 'AlreadyExists',
    details: { name: 'cm', kind: 'configmaps' },
    code: 409,
  });
  const noName = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: {} });
  t.equal(noName.status, 422);
  t.equal(noName.body.reason, 'Invalid');
  t.equal(noName.body.message, 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required');
  t.same(noName.body.details.causes, [{ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' }]);
  const badName = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'Not_Valid' } });
  t.equal(badName.status, 422);
  t.match(badName.body.message, /^ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain/);
  const noContainers = await http(s, 'POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'p' }, spec: {} });
  t.equal(noContainers.status, 422);
  t.equal(noContainers.body.message, 'Pod "p" is invalid: spec.containers: Required value');
  const mismatch = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x', namespace: 'other' } });
  t.equal(mismatch.status, 400);
  t.equal(mismatch.body.message, 'the namespace of the provided object does not match the namespace sent on the request');
  const garbage = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', '{not json');
  t.equal(garbage.status, 400);
  t.equal(garbage.body.reason, 'BadRequest');
  t.match(garbage.body.message, /^couldn't get version\/kind; json parse error/);
  const noNs = await http(s, 'POST', '/api/v1/namespaces/missing/configmaps', { metadata: { name: 'x' } });
  t.equal(noNs.status, 404);
  t.equal(noNs.body.message, 'namespaces "missing" not found');
  const withRv = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'y', resourceVersion: '5' } });
  t.equal(withRv.status, 500);
  const gen = await http(s, 'POST', '/api/v1/namespaces/default/pods', { metadata: { generateName: 'web-' }, spec: { containers: [{ name: 'c', image: 'x' }] } });
  t.equal(gen.status, 201);
  t.match(gen.body.metadata.name, /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  const wrongKind = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { kind: 'Secret', apiVersion: 'v1', metadata: { name: 'z' } });
  t.equal(wrongKind.status, 400);
  const put = await http(s, 'POST', '/api/v1/namespaces/default/configmaps/cm', { metadata: { name: 'cm' } });
  t.equal(put.status, 405);
  t.equal(put.body.reason, 'MethodNotAllowed');
  const ctype = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', 'a: b', 'text/plain');
  t.equal(ctype.status, 415);
  t.equal(ctype.body.reason, 'UnsupportedMediaType');
});

t.test('update (PUT): optimistic concurrency, no-op updates, status is ignored', async (t) => {
  const s = await withServer(t);
  const p = (await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('p', { spec: { nodeName: 'n1' } }))).body;
  const stale = p.metadata.resourceVersion;
  const upd = structuredClone(p);
  upd.metadata.labels = { a: 'b' };
  upd.status = { phase: 'Running' };
  const r1 = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', upd);
  t.equal(r1.status, 200);
  t.same(r1.body.metadata.labels, { a: 'b' });
  t.equal(r1.body.status.phase, 'Pending', 'PUT to the main resource ignores status');
  t.ok(Number(r1.body.metadata.resourceVersion) > Number(stale));
  t.equal(r1.body.metadata.generation, 1, 'metadata-only change keeps generation');
  t.equal(r1.body.metadata.uid, p.metadata.uid);

  const again = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', upd);
  t.equal(again.status, 409);
  t.same(again.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again',
    reason: 'Conflict',
    details: { name: 'p', kind: 'pods' },
    code: 409,
  });

  const rvBefore = s.store.resourceVersion;
  const noop = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', r1.body);
  t.equal(noop.status, 200);
  t.equal(noop.body.metadata.resourceVersion, r1.body.metadata.resourceVersion, 'a no-op update does not bump resourceVersion');
  t.equal(s.store.resourceVersion, rvBefore);

  const unconditional = structuredClone(r1.body);
  delete unconditional.metadata.resourceVersion;
  unconditional.spec.containers[0].image = 'busybox:1.37';
  const r2 = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', unconditional);
  t.equal(r2.status, 200, 'no resourceVersion = unconditional update');
  t.equal(r2.body.metadata.generation, 2, 'spec change bumps generation');

  const forbidden = structuredClone(r2.body);
  forbidden.spec.restartPolicy = 'Never';
  const r3 = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', forbidden);
  t.equal(r3.status, 422);
  t.match(r3.body.message, /pod updates may not change fields other than/);

  const wrongUid = structuredClone(r2.body);
  wrongUid.metadata.uid = 'not-the-uid';
  const r4 = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', wrongUid);
  t.equal(r4.status, 409);
  t.match(r4.body.message, /Precondition failed: UID in precondition: not-the-uid, UID in object meta: /);

  const renamed = structuredClone(r2.body);
  renamed.metadata.name = 'q';
  t.equal((await http(s, 'PUT', '/api/v1/namespaces/default/pods/p', renamed)).status, 400);
  t.equal((await http(s, 'PUT', '/api/v1/namespaces/default/pods/nope', { metadata: { name: 'nope' } })).status, 404);
});

t.test('status subresource isolation for pods and nodes', async (t) => {
  const s = await withServer(t);
  const p = (await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('p', { spec: { nodeName: 'n1' } }))).body;
  const body = structuredClone(p);
  body.status = { phase: 'Running', podIP: '10.0.0.5' };
  body.metadata.labels = { sneaky: 'yes' };
  body.spec.containers[0].image = 'other';
  const r = await http(s, 'PUT', '/api/v1/namespaces/default/pods/p/status', body);
  t.equal(r.status, 200);
  t.equal(r.body.status.phase, 'Running');
  t.equal(r.body.status.podIP, '10.0.0.5');
  t.same(r.body.metadata.labels, { sneaky: 'yes' }, 'status update writes metadata too (as podStatusStrategy does)');
  t.equal(r.body.spec.containers[0].image, 'busybox:1.36', 'status update leaves spec alone');
  t.equal(r.body.metadata.generation, 1);
  const g = await http(s, 'GET', '/api/v1/namespaces/default/pods/p/status');
  t.equal(g.body.status.phase, 'Running');

  const node = (await http(s, 'POST', '/api/v1/nodes', { metadata: { name: 'n1', labels: { a: '1' } }, status: { capacity: { cpu: '4' } } })).body;
  t.same(node.status.capacity, { cpu: '4' }, 'node status is kept on create (kubelet registration)');
  t.same(node.status.allocatable, { cpu: '4' }, 'allocatable defaults to capacity');
  t.equal(node.metadata.namespace, undefined);
  const patched = await http(
    s,
    'PATCH',
    '/api/v1/nodes/n1/status',
    { metadata: { labels: { b: '2' } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
    'application/strategic-merge-patch+json',
  );
  t.equal(patched.status, 200);
  t.same(patched.body.metadata.labels, { a: '1', b: '2' }, 'labels sent to nodes/status are written (only the spec is kept)');
  t.same(patched.body.status.conditions, [{ type: 'Ready', status: 'True', lastHeartbeatTime: null, lastTransitionTime: null }]);
  const main = await http(s, 'PATCH', '/api/v1/nodes/n1', { metadata: { labels: { b: '2' } }, status: { capacity: { cpu: '8' } } }, 'application/merge-patch+json');
  t.same(main.body.metadata.labels, { a: '1', b: '2' });
  const owned = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('owned', { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: node.metadata.uid }] } }));
  const ownerless = structuredClone(owned.body);
  ownerless.metadata.ownerReferences = [];
  const kept = await http(s, 'PUT', '/api/v1/namespaces/default/pods/owned/status', ownerless);
  t.same(kept.body.metadata.ownerReferences, owned.body.metadata.ownerReferences, 'pods/status keeps the owner references');
  t.equal(main.body.status.capacity.cpu, '4', 'patching the main resource ignores status');
  t.equal((await http(s, 'GET', '/api/v1/namespaces/default/configmaps/x/status')).status, 404, 'no status subresource on configmaps');
});

t.test('patch: merge, strategic merge (conditions by type), json patch, preconditions', async (t) => {
  const s = await withServer(t);
  const p = (await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('p', { metadata: { labels: { a: '1', b: '2' } }, spec: { nodeName: 'n1' } }))).body;
  const merge = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p', { metadata: { labels: { a: null, c: '3' } } }, 'application/merge-patch+json');
  t.equal(merge.status, 200);
  t.same(merge.body.metadata.labels, { b: '2', c: '3' });

  const st1 = await http(
    s,
    'PATCH',
    '/api/v1/namespaces/default/pods/p/status',
    {
      metadata: { uid: p.metadata.uid },
      status: {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'False' },
          { type: 'Initialized', status: 'True' },
        ],
        containerStatuses: [
          { name: 'c', ready: false, restartCount: 0 },
          { name: 'd', ready: false, restartCount: 0 },
        ],
        podIPs: [{ ip: '10.0.0.1' }],
      },
    },
    'application/strategic-merge-patch+json',
  );
  t.equal(st1.status, 200);
  const st2 = await http(
    s,
    'PATCH',
    '/api/v1/namespaces/default/pods/p/status',
    {
      metadata: { uid: p.metadata.uid },
      status: {
                '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }, { type: 'ContainersReady' }],
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'ContainersReady', status: 'True' },
        ],
        containerStatuses: [{ name: 'c', ready: true, restartCount: 1 }],
        podIPs: [{ ip: 'fd00::1' }],
      },
    },
    'application/strategic-merge-patch+json',
  );
  t.equal(st2.status, 200);
  const noTimes = { lastProbeTime: null, lastTransitionTime: null };
  t.same(
    st2.body.status.conditions,
    [
      { type: 'Initialized', status: 'True', ...noTimes },
      { type: 'Ready', status: 'True', ...noTimes },
      { type: 'ContainersReady', status: 'True', ...noTimes },
    ],
    'conditions merged by type, in $setElementOrder order',
  );
  t.same(st2.body.status.containerStatuses, [{ name: 'c', ready: true, restartCount: 1, state: {}, lastState: {}, image: '', imageID: '' }], 'containerStatuses is atomic, as in kube');
  t.same(st2.body.status.podIPs, [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }], 'podIPs merged by ip');

  const del = await http(
    s,
    'PATCH',
    '/api/v1/namespaces/default/pods/p/status',
    { status: { conditions: [{ type: 'ContainersReady', $patch: 'delete' }] } },
    'application/strategic-merge-patch+json',
  );
  t.same(
    del.body.status.conditions.map((c: any) => c.type),
    ['Initialized', 'Ready'],
    '$patch: delete removes a list element by key',
  );

  const wrongUid = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p/status', { metadata: { uid: 'other-uid' }, status: { phase: 'Failed' } }, 'application/strategic-merge-patch+json');
  t.equal(wrongUid.status, 422, 'a patch changing metadata.uid fails validation (uid is immutable)');
  t.equal(wrongUid.body.message, 'Pod "p" is invalid: metadata.uid: Invalid value: "other-uid": field is immutable');

  const staleRv = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p', { metadata: { resourceVersion: p.metadata.resourceVersion, labels: { z: '1' } } }, 'application/merge-patch+json');
  t.equal(staleRv.status, 409);
  t.equal(staleRv.body.reason, 'Conflict');
  t.match(staleRv.body.message, /the object has been modified/);

  const jp = await http(
    s,
    'PATCH',
    '/api/v1/namespaces/default/pods/p',
    [
      { op: 'test', path: '/metadata/labels/b', value: '2' },
      { op: 'add', path: '/metadata/annotations', value: { 'x/y': 'z' } },
      { op: 'remove', path: '/metadata/labels/b' },
      { op: 'replace', path: '/spec/containers/0/image', value: 'busybox:2' },
    ],
    'application/json-patch+json',
  );
  t.equal(jp.status, 200);
  t.same(jp.body.metadata.labels, { c: '3' });
  t.same(jp.body.metadata.annotations, { 'x/y': 'z' });
  t.equal(jp.body.spec.containers[0].image, 'busybox:2');
  const failedTest = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p', [{ op: 'test', path: '/metadata/name', value: 'q' }], 'application/json-patch+json');
  t.equal(failedTest.status, 422);

  const smpContainers = await http(
    s,
    'PATCH',
    '/api/v1/namespaces/default/pods/p',
    { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u1' }] }, spec: { containers: [{ name: 'c', image: 'busybox:3' }] } },
    'application/strategic-merge-patch+json',
  );
  t.equal(smpContainers.status, 200);
  t.equal(smpContainers.body.spec.containers.length, 1);
  t.equal(smpContainers.body.spec.containers[0].image, 'busybox:3');
  t.equal(smpContainers.body.spec.containers[0].terminationMessagePath, '/dev/termination-log', 'containers merged by name keep other fields');
  t.equal(smpContainers.body.metadata.ownerReferences[0].uid, 'u1');

  const unsupported = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p', { a: 1 }, 'application/json');
  t.equal(unsupported.status, 415);
  const apply = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p', 'a: 1', 'application/apply-patch+yaml');
  t.equal(apply.status, 415);
  const badJson = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p', '{', 'application/merge-patch+json');
  t.equal(badJson.status, 400);
  const nf = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/none', {}, 'application/merge-patch+json');
  t.equal(nf.status, 404);

  // The opt-in 409 behaviour for uid mismatches in patches.
  const s2 = await withServer(t, { patchUidMismatch: 'conflict' });
  await http(s2, 'POST', '/api/v1/namespaces/default/pods', pod('p'));
  const c = await http(s2, 'PATCH', '/api/v1/namespaces/default/pods/p/status', { metadata: { uid: 'X' } }, 'application/strategic-merge-patch+json');
  t.equal(c.status, 409);
  t.match(c.body.message, /^Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, Key: \/registry\/pods\/default\/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: X, UID in object meta: [0-9a-f-]{36}$/);
});

t.test('delete: pods with grace period, preconditions, Status answers, finalizers', async (t) => {
  const s = await withServer(t);
  const scheduled = (await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('sched', { spec: { nodeName: 'n1' } }))).body;
  const r1 = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/sched', { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 30 });
  t.equal(r1.status, 200);
  t.ok(r1.body.metadata.deletionTimestamp, 'a scheduled pod gets a deletionTimestamp');
  t.equal(r1.body.metadata.deletionGracePeriodSeconds, 30);
  t.equal(r1.body.metadata.generation, 2);
  t.ok(s.store.get('pods', 'default', 'sched'), 'and stays in the store');
  const again = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/sched', { gracePeriodSeconds: 60 });
  t.equal(again.body.metadata.deletionGracePeriodSeconds, 30, 'a longer grace period does not extend the deletion');
  const pre = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/sched', { gracePeriodSeconds: 0, preconditions: { uid: 'wrong' } });
  t.equal(pre.status, 409);
  t.equal(pre.body.reason, 'Conflict');
  t.equal(
    pre.body.message,
    `Operation cannot be fulfilled on Pod "sched": the UID in the precondition (wrong) does not match the UID in record (${scheduled.metadata.uid}). The object might have been deleted and then recreated`,
    "kube-apiserver's BeforeDelete message",
  );
  t.same(pre.body.details, { name: 'sched', kind: 'Pod' });
  const preRv = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/sched', { gracePeriodSeconds: 0, preconditions: { resourceVersion: '1' } });
  t.equal(preRv.status, 409);
  t.match(preRv.body.message, /^Operation cannot be fulfilled on Pod "sched": the ResourceVersion in the precondition \(1\) does not match the ResourceVersion in record \(\d+\)\. The object might have been modified$/);
  const force = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/sched', { gracePeriodSeconds: 0, preconditions: { uid: scheduled.metadata.uid } });
  t.equal(force.status, 200);
  t.equal(force.body.kind, 'Pod', 'pods answer DELETE with the object');
  t.equal(s.store.get('pods', 'default', 'sched'), undefined, 'grace period 0 removes it');

  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('unsched'));
  const r2 = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/unsched');
  t.equal(r2.status, 200);
  t.equal(s.store.get('pods', 'default', 'unsched'), undefined, 'an unscheduled pod is removed at once');

  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('q', { spec: { nodeName: 'n1' } }));
  const byQuery = await http(s, 'DELETE', '/api/v1/namespaces/default/pods/q?gracePeriodSeconds=0');
  t.equal(byQuery.status, 200);
  t.equal(s.store.get('pods', 'default', 'q'), undefined, 'gracePeriodSeconds from the query');

  const cm = (await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm' } })).body;
  const r3 = await http(s, 'DELETE', '/api/v1/namespaces/default/configmaps/cm');
  t.same(r3.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'cm', kind: 'configmaps', uid: cm.metadata.uid } });
  const r4 = await http(s, 'DELETE', '/api/v1/namespaces/default/configmaps/cm');
  t.equal(r4.status, 404);

  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'fin', finalizers: ['example.com/x'] } });
  const r5 = await http(s, 'DELETE', '/api/v1/namespaces/default/configmaps/fin');
  t.ok(r5.body.metadata.deletionTimestamp, 'an object with finalizers waits');
  const r6 = await http(s, 'PATCH', '/api/v1/namespaces/default/configmaps/fin', { metadata: { finalizers: null } }, 'application/merge-patch+json');
  t.equal(r6.status, 200);
  t.equal(s.store.get('configmaps', 'default', 'fin'), undefined, 'removing the last finalizer deletes it');

  const lease = await http(s, 'POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', { metadata: { name: 'n1' }, spec: { holderIdentity: 'n1' } });
  const r7 = await http(s, 'DELETE', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1');
  t.same(r7.body.details, { name: 'n1', group: 'coordination.k8s.io', kind: 'leases', uid: lease.body.metadata.uid });
  const nf = await http(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1');
  t.equal(nf.body.message, 'leases.coordination.k8s.io "n1" not found');
  t.same(nf.body.details, { name: 'n1', group: 'coordination.k8s.io', kind: 'leases' });

  const immortal = await http(s, 'DELETE', '/api/v1/namespaces/default');
  t.equal(immortal.status, 403);
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'tmp' } });
  await http(s, 'POST', '/api/v1/namespaces/tmp/configmaps', { metadata: { name: 'a' } });
  const nsDel = await http(s, 'DELETE', '/api/v1/namespaces/tmp');
  t.equal(nsDel.status, 200);
  t.same(s.store.list('configmaps', 'tmp'), [], 'deleting a namespace deletes its contents');

  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'l1', labels: { x: 'y' } } });
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'l2', labels: { x: 'y' } } });
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'l3' } });
  const coll = await http(s, 'DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=x%3Dy');
  t.equal(coll.body.kind, 'ConfigMapList');
  t.equal(coll.body.items.length, 2);
  t.same(
    s.store.list('configmaps', 'default').map((c) => (c.metadata as any).name),
    ['l3'],
  );
});

t.test('binding, leases, events in both API groups', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('p'));
  const b = await http(s, 'POST', '/api/v1/namespaces/default/pods/p/binding', { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'p' }, target: { kind: 'Node', name: 'n1' } });
  t.equal(b.status, 201);
  t.equal(b.body.status, 'Success');
  t.equal((s.store.get('pods', 'default', 'p') as any).spec.nodeName, 'n1');
  const b2 = await http(s, 'POST', '/api/v1/namespaces/default/pods/p/binding', { target: { kind: 'Node', name: 'n2' } });
  t.equal(b2.status, 409);

  const lease = await http(s, 'POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'n1' },
    spec: { holderIdentity: 'n1', leaseDurationSeconds: 40, renewTime: '2024-01-01T00:00:00.000000Z' },
  });
  t.equal(lease.status, 201);
  t.equal(lease.body.apiVersion, 'coordination.k8s.io/v1');
  const l2 = structuredClone(lease.body);
  l2.spec.renewTime = '2024-01-01T00:00:10.000000Z';
  const renewed = await http(s, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', l2);
  t.equal(renewed.status, 200);
  t.equal(renewed.body.spec.renewTime, '2024-01-01T00:00:10.000000Z');
  t.equal((await http(s, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', l2)).status, 409);

  const ev = await http(s, 'POST', '/api/v1/namespaces/default/events', {
    metadata: { name: 'p.1' },
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', uid: 'u' },
    reason: 'Started',
    message: 'Started container c',
    type: 'Normal',
    source: { component: 'kubelet', host: 'n1' },
    count: 1,
  });
  t.equal(ev.status, 201);
  const sel = await http(s, 'GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dp%2CinvolvedObject.kind%3DPod');
  t.equal(sel.body.items.length, 1);
  const none = await http(s, 'GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dq');
  t.equal(none.body.items.length, 0);
  const asV1 = await http(s, 'GET', '/apis/events.k8s.io/v1/namespaces/default/events/p.1');
  t.equal(asV1.body.apiVersion, 'events.k8s.io/v1');
  t.equal(asV1.body.note, 'Started container c');
  t.same(asV1.body.regarding, { kind: 'Pod', namespace: 'default', name: 'p', uid: 'u' });
  t.same(asV1.body.deprecatedSource, { component: 'kubelet', host: 'n1' });
  const created = await http(s, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: 'p.2' },
    eventTime: '2024-01-01T00:00:00.000000Z',
    reportingController: 'kubelet',
    reportingInstance: 'n1',
    action: 'Pulling',
    reason: 'Pulling',
    regarding: { kind: 'Pod', namespace: 'default', name: 'p' },
    note: 'Pulling image',
    type: 'Normal',
  });
  t.equal(created.status, 201);
  const asCore = await http(s, 'GET', '/api/v1/namespaces/default/events/p.2');
  t.equal(asCore.body.message, 'Pulling image');
  t.equal(asCore.body.reportingComponent, 'kubelet');
  const v1sel = await http(s, 'GET', '/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dp');
  t.equal(v1sel.body.items.length, 2);
});

t.test('list pagination with limit and continue', async (t) => {
  const s = await withServer(t);
  for (let i = 0; i < 5; i++) await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: `cm-${i}` } });
  const first = await http(s, 'GET', '/api/v1/namespaces/default/configmaps?limit=2');
  t.equal(first.body.items.length, 2);
  t.equal(first.body.metadata.remainingItemCount, 3);
  t.ok(first.body.metadata.continue);
  // A change between pages does not show up: pages come from one snapshot.
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm-9' } });
  const second = await http(s, 'GET', `/api/v1/namespaces/default/configmaps?limit=2&continue=${first.body.metadata.continue}`);
  t.same(
    second.body.items.map((i: any) => i.metadata.name),
    ['cm-2', 'cm-3'],
  );
  t.equal(second.body.metadata.resourceVersion, first.body.metadata.resourceVersion);
  const third = await http(s, 'GET', `/api/v1/namespaces/default/configmaps?limit=2&continue=${second.body.metadata.continue}`);
  t.same(
    third.body.items.map((i: any) => i.metadata.name),
    ['cm-4'],
  );
  t.equal(third.body.metadata.continue, undefined);
  s.compact();
  const expired = await http(s, 'GET', `/api/v1/namespaces/default/configmaps?limit=2&continue=${first.body.metadata.continue}`);
  t.equal(expired.status, 410);
  t.equal(expired.body.reason, 'Expired');
  const exact = await http(s, 'GET', `/api/v1/namespaces/default/configmaps?resourceVersion=${first.body.metadata.resourceVersion}&resourceVersionMatch=Exact`);
  t.equal(exact.status, 410, 'an exact list older than the history is gone');
  const future = await http(s, 'GET', `/api/v1/namespaces/default/configmaps?resourceVersion=99999999`);
  t.equal(future.status, 504);
  t.equal(future.body.reason, 'Timeout');
});

t.test('request log, injected failures, outages, restart on the same port, token auth', async (t) => {
  const s = await withServer(t, { token: 'sekret' });
  const auth = { Authorization: 'Bearer sekret' };
  const denied = await http(s, 'GET', '/api/v1/pods');
  t.equal(denied.status, 401);
  t.equal(denied.body.reason, 'Unauthorized');
  t.equal((await http(s, 'GET', '/healthz')).status, 200, 'health needs no token');
  s.clearRequests();
  await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm' } }, 'application/json', auth);
  await http(s, 'GET', '/api/v1/namespaces/default/configmaps?labelSelector=a%3Db', undefined, 'application/json', auth);
  t.equal(s.requests.length, 2);
  t.match(s.requests[0], { method: 'POST', path: '/api/v1/namespaces/default/configmaps', verb: 'create', resource: 'configmaps', namespace: 'default', contentType: 'application/json', status: 201 });
  t.ok(s.requests[0].requestBytes > 0);
  t.ok(s.requests[0].responseBytes > 0);
  t.match(s.requests[1], { verb: 'list', query: { labelSelector: 'a=b' }, status: 200 });

  s.failNext(2, 500);
  t.equal((await http(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, undefined, auth)).status, 500);
  const second = await http(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, undefined, auth);
  t.equal(second.status, 500);
  t.equal(second.body.reason, 'InternalError');
  t.equal((await http(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, undefined, auth)).status, 200);
  s.failNext(1, { code: 429, match: (r) => r.verb === 'create' });
  t.equal((await http(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, undefined, auth)).status, 200, 'the rule only matches creates');
  const limited = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } }, 'application/json', auth);
  t.equal(limited.status, 429);
  t.equal(limited.body.reason, 'TooManyRequests');

  s.setUnavailable(true);
  const down = await http(s, 'GET', '/readyz');
  t.equal(down.status, 503);
  t.equal((await http(s, 'GET', '/api/v1/pods', undefined, undefined, auth)).body.reason, 'ServiceUnavailable');
  s.setUnavailable(false);

  const port = s.port;
  await s.stop();
  t.equal(s.running, false);
  await t.rejects(fetch(`${s.url}/healthz`), 'connection refused while stopped');
  await s.restart();
  t.equal(s.port, port, 'same port after restart');
  const kept = await http(s, 'GET', '/api/v1/namespaces/default/configmaps/cm', undefined, undefined, auth);
  t.equal(kept.status, 200, 'the store survives a restart');
});
