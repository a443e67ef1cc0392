import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  Health,
  KubeConfig,
  KubernetesObjectApi,
  ListWatch,
  PatchStrategy,
  Watch,
  makeInformer,
  setHeaderOptions,
  type V1Lease,
  type V1Pod,
} from '@kubernetes/client-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { TestApiServer } from '../src/index.js';
import { eventually, withServer } from './helpers.js';

async function kubeconfigFor(t: { teardown(fn: () => unknown): void }, s: TestApiServer): Promise<KubeConfig> {
  const dir = await mkdtemp(join(tmpdir(), 'test-apiserver-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = await s.writeKubeconfig(join(dir, 'kubeconfig.yaml'));
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

function newPod(name: string, nodeName?: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'web' } },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox:1.36' }] },
  };
}

/** The Status a failed client-node call carries (the body comes back as text). */
function statusOf(err: unknown): { code: number; reason: string; message: string } {
  if (!(err instanceof ApiException)) throw err;
  const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
  return { code: err.code, reason: body.reason, message: body.message };
}

async function expectStatus(t: { equal: (...args: any[]) => unknown }, p: Promise<unknown>, code: number, reason: string): Promise<{ code: number; reason: string; message: string }> {
  try {
    await p;
  } catch (err) {
    const s = statusOf(err);
    t.equal(s.code, code, `HTTP ${code}`);
    t.equal(s.reason, reason, `reason ${reason}`);
    return s;
  }
  throw new Error(`expected HTTP ${code}, got success`);
}

t.test('KubeConfig.loadFromFile accepts the written kubeconfig (token included)', async (t) => {
  const s = await withServer(t, { token: 'abc' });
  const kc = await kubeconfigFor(t, s);
  t.equal(kc.getCurrentCluster()?.server, s.url);
  t.equal(kc.getCurrentUser()?.token, 'abc');
  t.equal(kc.getCurrentCluster()?.skipTLSVerify, true, 'plain http needs insecure-skip-tls-verify for client-node');
  t.equal(s.kubeconfig()['current-context'], 'test-apiserver');
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await core.readNamespace({ name: 'default' });
  t.equal(ns.status?.phase, 'Active');
  t.equal(s.requests.at(-1)?.status, 200, 'the token was accepted');
  const health = new Health(kc);
  t.equal(await health.readyz({}), true);
  t.equal(await health.livez({}), true);
});

t.test('CoreV1Api: create, get, list, replace, conflict, 404, 409, patches, status, delete', async (t) => {
  const s = await withServer(t);
  const kc = await kubeconfigFor(t, s);
  const core = kc.makeApiClient(CoreV1Api);

  const created = await core.createNamespacedPod({ namespace: 'default', body: newPod('web', 'node-a') });
  t.equal(created.metadata?.namespace, 'default');
  t.ok(created.metadata?.uid);
  t.ok(created.metadata?.creationTimestamp instanceof Date, 'timestamps deserialize as Dates');
  t.equal(created.status?.phase, 'Pending');

  const got = await core.readNamespacedPod({ name: 'web', namespace: 'default' });
  t.equal(got.metadata?.resourceVersion, created.metadata?.resourceVersion);

  await core.createNamespacedPod({ namespace: 'default', body: newPod('other', 'node-b') });
  const list = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=node-a' });
  t.same(
    list.items.map((p) => p.metadata?.name),
    ['web'],
  );
  t.equal(list.metadata?.resourceVersion, String(s.store.resourceVersion));
  const byLabel = await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' });
  t.equal(byLabel.items.length, 2);

  const dup = await expectStatus(t, core.createNamespacedPod({ namespace: 'default', body: newPod('web') }), 409, 'AlreadyExists');
  t.equal(dup.message, 'pods "web" already exists');
  const nf = await expectStatus(t, core.readNamespacedPod({ name: 'nope', namespace: 'default' }), 404, 'NotFound');
  t.equal(nf.message, 'pods "nope" not found');

  got.metadata!.labels = { app: 'web', v: '2' };
  const replaced = await core.replaceNamespacedPod({ name: 'web', namespace: 'default', body: got });
  t.equal(replaced.metadata?.labels?.v, '2');
  const conflict = await expectStatus(t, core.replaceNamespacedPod({ name: 'web', namespace: 'default', body: got }), 409, 'Conflict');
  t.match(conflict.message, /the object has been modified; please apply your changes to the latest version and try again/);

  // PATCH with each content type (client-node picks JSON patch unless told otherwise).
  const jp = await core.patchNamespacedPod({ name: 'web', namespace: 'default', body: [{ op: 'add', path: '/metadata/annotations', value: { a: '1' } }] });
  t.same(jp.metadata?.annotations, { a: '1' });
  t.equal(s.requests.at(-1)?.contentType, 'application/json-patch+json');
  const mp = await core.patchNamespacedPod(
    { name: 'web', namespace: 'default', body: { metadata: { annotations: { a: null, b: '2' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  t.same(mp.metadata?.annotations, { b: '2' });

  const uid = created.metadata!.uid!;
  const st1 = await core.patchNamespacedPodStatus(
    {
      name: 'web',
      namespace: 'default',
      body: {
        metadata: { uid },
        status: {
          phase: 'Running',
          conditions: [
            { type: 'Initialized', status: 'True' },
            { type: 'Ready', status: 'False' },
          ],
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.equal(st1.status?.phase, 'Running');
  const st2 = await core.patchNamespacedPodStatus(
    { name: 'web', namespace: 'default', body: { metadata: { uid }, status: { conditions: [{ type: 'Ready', status: 'True' }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.same(
    st2.status?.conditions?.map((c) => [c.type, c.status]),
    [
      ['Initialized', 'True'],
      ['Ready', 'True'],
    ],
    'strategic merge merges conditions by type',
  );
  t.equal(st2.metadata?.labels?.v, '2', 'status patch keeps metadata');
  await expectStatus(
    t,
    core.patchNamespacedPodStatus(
      { name: 'web', namespace: 'default', body: { metadata: { uid: 'stale-uid' }, status: { phase: 'Failed' } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    ),
    422,
    'Invalid',
  );
  const statusViaPut = await core.replaceNamespacedPodStatus({ name: 'web', namespace: 'default', body: { ...st2, status: { ...st2.status, phase: 'Succeeded' } } });
  t.equal(statusViaPut.status?.phase, 'Succeeded');

  // Graceful deletion of a scheduled pod, then the kubelet's final delete with a uid precondition.
  await core.createNamespacedPod({ namespace: 'default', body: newPod('bound', 'node-a') });
  const terminating = await core.deleteNamespacedPod({ name: 'bound', namespace: 'default', gracePeriodSeconds: 30 });
  t.ok(terminating.metadata?.deletionTimestamp, 'deletionTimestamp set');
  t.equal(terminating.metadata?.deletionGracePeriodSeconds, 30);
  await expectStatus(
    t,
    core.deleteNamespacedPod({ name: 'bound', namespace: 'default', body: { gracePeriodSeconds: 0, preconditions: { uid: 'wrong' } } }),
    409,
    'Conflict',
  );
  await core.deleteNamespacedPod({ name: 'bound', namespace: 'default', body: { gracePeriodSeconds: 0, preconditions: { uid: terminating.metadata!.uid } } });
  await expectStatus(t, core.readNamespacedPod({ name: 'bound', namespace: 'default' }), 404, 'NotFound');

  // Nodes and their status subresource.
  const node = await core.createNode({ body: { metadata: { name: 'node-a' }, status: { capacity: { cpu: '4', memory: '8Gi' } } } });
  t.equal(node.status?.capacity?.cpu, '4');
  const ns2 = await core.patchNodeStatus(
    { name: 'node-a', body: { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }], addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.equal(ns2.status?.conditions?.[0].reason, 'KubeletReady');
  const ns3 = await core.patchNodeStatus(
    { name: 'node-a', body: { status: { addresses: [{ type: 'Hostname', address: 'node-a' }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.same(
    ns3.status?.addresses?.map((a) => a.type),
    ['InternalIP', 'Hostname'],
    'addresses merged by type',
  );

  // Events through client-node.
  const ev = await core.createNamespacedEvent({
    namespace: 'default',
    body: { metadata: { name: 'web.1' }, involvedObject: { kind: 'Pod', name: 'web', namespace: 'default' }, reason: 'Started', message: 'ok', type: 'Normal' },
  });
  t.equal(ev.reason, 'Started');
  const evs = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=web' });
  t.equal(evs.items.length, 1);

  // The generic object client discovers resources through /api/v1.
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const viaDiscovery = await objects.read<V1Pod>({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default' } });
  t.equal(viaDiscovery.metadata?.uid, uid);
});

t.test('CoordinationV1Api: lease create, renew with optimistic concurrency, MicroTime strictness', async (t) => {
  const s = await withServer(t);
  const kc = await kubeconfigFor(t, s);
  const coord = kc.makeApiClient(CoordinationV1Api);
  // Like kube-apiserver, MicroTime fields need exactly six fractional digits: client-node serializes a
  // Date with toISOString() (three digits), which a real API server rejects, so send strings.
  const micro = (iso: string): Date => iso as unknown as Date;
  const rejected = await expectStatus(
    t,
    coord.createNamespacedLease({ namespace: 'kube-node-lease', body: { metadata: { name: 'node-a' }, spec: { holderIdentity: 'node-a', renewTime: new Date('2024-01-01T00:00:00.123Z') } } }),
    400,
    'BadRequest',
  );
  t.match(rejected.message, /^Lease in version "v1" cannot be handled as a Lease: parsing time "2024-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00"/);
  const body: V1Lease = {
    metadata: { name: 'node-a', namespace: 'kube-node-lease' },
    spec: { holderIdentity: 'node-a', leaseDurationSeconds: 40, renewTime: micro('2024-01-01T00:00:00.123456Z') },
  };
  const lease = await coord.createNamespacedLease({ namespace: 'kube-node-lease', body });
  t.equal(lease.spec?.holderIdentity, 'node-a');
  t.equal(lease.spec?.renewTime as unknown, '2024-01-01T00:00:00.123456Z', 'client-node hands MicroTime back as the string');
  lease.spec!.renewTime = micro('2024-01-01T00:00:10.000000Z');
  const renewed = await coord.replaceNamespacedLease({ name: 'node-a', namespace: 'kube-node-lease', body: lease });
  t.equal(renewed.spec?.renewTime as unknown, '2024-01-01T00:00:10.000000Z');
  await expectStatus(t, coord.replaceNamespacedLease({ name: 'node-a', namespace: 'kube-node-lease', body: lease }), 409, 'Conflict');
  const got = await coord.readNamespacedLease({ name: 'node-a', namespace: 'kube-node-lease' });
  t.equal(got.metadata?.resourceVersion, renewed.metadata?.resourceVersion);
  t.equal(s.store.get('leases', 'kube-node-lease', 'node-a')?.apiVersion, 'coordination.k8s.io/v1');
});

t.test('Watch: events, bookmarks, fieldSelector, 410 on a stale resourceVersion', async (t) => {
  const s = await withServer(t);
  const kc = await kubeconfigFor(t, s);
  const core = kc.makeApiClient(CoreV1Api);
  const list = await core.listPodForAllNamespaces();
  const rv = list.metadata!.resourceVersion!;
  const seen: Array<[string, string]> = [];
  let doneErr: unknown = 'not called';
  const controller = await new Watch(kc).watch(
    '/api/v1/pods',
    { resourceVersion: rv, allowWatchBookmarks: true, fieldSelector: 'spec.nodeName=node-a' },
    (phase, obj: any) => seen.push([phase, phase === 'BOOKMARK' ? obj.metadata.resourceVersion : obj.metadata.name]),
    (err) => {
      doneErr = err;
    },
  );
  await s.waitForWatch('pods');
  await core.createNamespacedPod({ namespace: 'default', body: newPod('mine', 'node-a') });
  await core.createNamespacedPod({ namespace: 'default', body: newPod('theirs', 'node-b') });
  await core.deleteNamespacedPod({ name: 'mine', namespace: 'default', gracePeriodSeconds: 0 });
  s.sendBookmarks();
  await eventually(() => seen.length >= 4, 5000, 'watch events');
  // A pod delete first writes deletionTimestamp and the grace period (MODIFIED), then removes the pod, as kube does.
  t.same(seen, [
    ['ADDED', 'mine'],
    ['MODIFIED', 'mine'],
    ['DELETED', 'mine'],
    ['BOOKMARK', String(s.store.resourceVersion)],
  ]);
  controller.abort();
  await eventually(() => s.activeWatches() === 0, 5000, 'watch closed on abort');
  t.not(doneErr, 'not called');

  s.compact();
  const errors: any[] = [];
  let ended = false;
  await new Watch(kc).watch(
    '/api/v1/pods',
    { resourceVersion: rv },
    (phase, obj) => {
      if (phase === 'ERROR') errors.push(obj);
    },
    () => {
      ended = true;
    },
  );
  await eventually(() => ended, 5000, 'stale watch ends');
  t.equal(errors.length, 1);
  t.equal(errors[0].code, 410);
  t.equal(errors[0].reason, 'Expired');
  t.match(errors[0].message, /^too old resource version: \d+ \(\d+\)$/);
});

t.test('informer: ADDED/MODIFIED/DELETED, and a relist after 410 when the server comes back', async (t) => {
  const s = await withServer(t, { maxHistory: 1000 });
  const kc = await kubeconfigFor(t, s);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedPod({ namespace: 'default', body: newPod('pre') });
  const informer = makeInformer<V1Pod>(kc, '/api/v1/namespaces/default/pods', () => core.listNamespacedPod({ namespace: 'default' }));
  const log: string[] = [];
  informer.on('add', (p) => log.push(`add ${p.metadata?.name}`));
  informer.on('update', (p) => log.push(`update ${p.metadata?.name}`));
  informer.on('delete', (p) => log.push(`delete ${p.metadata?.name}`));
  let errors = 0;
  let done = false;
  informer.on('error', () => {
    // The documented client-node pattern: restart the informer a little after an error.
    errors++;
    setTimeout(() => {
      if (!done) void informer.start();
    }, 50);
  });
  t.teardown(async () => {
    done = true;
    await informer.stop();
  });
  await informer.start();
  await s.waitForWatch('pods');
  t.same(log, ['add pre']);

  await core.createNamespacedPod({ namespace: 'default', body: newPod('a') });
  await core.patchNamespacedPod({ name: 'a', namespace: 'default', body: { metadata: { labels: { x: '1' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await core.deleteNamespacedPod({ name: 'pre', namespace: 'default' });
  await eventually(() => log.length >= 5, 5000, 'informer events');
  // 'pre' has no node: it goes at once, after the write of its deletionTimestamp (an update).
  t.same(log, ['add pre', 'add a', 'update a', 'update pre', 'delete pre']);
  t.same(
    informer.list().map((p) => p.metadata?.name),
    ['a'],
  );

  // Outage: the server goes away, things change, history is compacted, the server comes back.
  const listsBefore = s.requests.filter((r) => r.verb === 'list').length;
  log.length = 0;
  await s.stop();
  s.store.create('pods', { metadata: { name: 'b', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }] } });
  s.store.delete('pods', 'default', 'a');
  await eventually(() => errors >= 1, 5000, 'the informer to notice the outage');
  s.compact();
  await s.restart();
  await eventually(() => log.length >= 2, 10000, 'informer relist after 410');
  t.ok(s.requests.some((r) => r.verb === 'watch' && r.status === 200 && r.responseBytes > 0), 'the stale watch was answered');
  t.ok(s.requests.filter((r) => r.verb === 'list').length > listsBefore, 'the informer relisted');
  t.same(log.sort(), ['add b', 'delete a']);
  t.same(
    informer.list().map((p) => p.metadata?.name),
    ['b'],
  );
  t.ok(informer instanceof ListWatch);
});
