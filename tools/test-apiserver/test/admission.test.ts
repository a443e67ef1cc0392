// What kube-apiserver v1.20's default mutating admission plugins do to pods and nodes on create, as the stand-in-vs-real
// test in tools/cluster-e2e found them.
import t from 'tap';
import { http, pod, withServer } from './helpers.js';

const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const defaultTolerations = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
];

t.test('ServiceAccount: the default service account and its token secret, mounted read-only in every container', async (t) => {
  const s = await withServer(t);
  const created = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('a', { spec: { initContainers: [{ name: 'init', image: 'busybox:1.36' }], containers: [{ name: 'c', image: 'busybox:1.36' }] } }));
  t.equal(created.status, 201);
  const spec = created.body.spec;
  t.equal(spec.serviceAccountName, 'default');
  t.equal(spec.serviceAccount, 'default', 'the deprecated field mirrors the name');
  t.equal(spec.volumes.length, 1);
  const [volume] = spec.volumes;
  t.match(volume.name, /^default-token-[a-z0-9]{5}$/);
  t.same(volume.secret, { secretName: volume.name, defaultMode: 420 }, 'a secret volume, defaulted like any other');
  for (const c of [...spec.initContainers, ...spec.containers]) {
    t.same(c.volumeMounts, [{ name: volume.name, readOnly: true, mountPath: TOKEN_PATH }], `${c.name} mounts the token`);
  }
  const secret = await http(s, 'GET', `/api/v1/namespaces/default/secrets/${volume.name}`);
  t.equal(secret.status, 200, 'the token secret exists');
  t.equal(secret.body.type, 'kubernetes.io/service-account-token');
  t.equal(secret.body.metadata.annotations['kubernetes.io/service-account.name'], 'default');
  t.equal(Buffer.from(secret.body.data.namespace, 'base64').toString(), 'default');
  t.ok(secret.body.data.token, 'with a token');

  const second = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('b'));
  t.equal(second.body.spec.volumes[0].name, volume.name, 'one token secret per service account');
  t.equal((await http(s, 'POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'builder' } })).status, 201);
  const other = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('c', { spec: { serviceAccountName: 'builder' } }));
  t.match(other.body.spec.volumes[0].name, /^builder-token-[a-z0-9]{5}$/, "another service account's own secret");
  const builder = await http(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/builder');
  t.same(builder.body.secrets, [{ name: other.body.spec.volumes[0].name }], 'the one its service account lists');
});

t.test('ServiceAccount: a pod of a service account that does not exist is forbidden (403, before validation)', async (t) => {
  const s = await withServer(t);
  const r = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('ghost-pod', { spec: { serviceAccountName: 'ghost' } }));
  t.equal(r.status, 403);
  // As kube-apiserver v1.20.2 answered.
  t.same(r.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'pods "ghost-pod" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found',
    reason: 'Forbidden',
    details: { name: 'ghost-pod', kind: 'pods' },
    code: 403,
  });
  const optOut = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('q2', { spec: { serviceAccountName: 'ghost', automountServiceAccountToken: false } }));
  t.equal(optOut.status, 403, 'even when the pod mounts no token');
  const invalidToo = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('Bad_Name', { spec: { serviceAccountName: 'ghost' } }));
  t.equal(invalidToo.status, 403, 'admission runs before name validation');
  const generated = await http(s, 'POST', '/api/v1/namespaces/default/pods', { ...pod(''), metadata: { generateName: 'gen-' }, spec: { serviceAccountName: 'ghost', containers: [{ name: 'c', image: 'i' }] } });
  t.match(generated.body.message, /^pods "gen-" is forbidden: /, 'before its name is generated: named by its generateName');
  const nameless = await http(s, 'POST', '/api/v1/namespaces/default/pods', { ...pod(''), metadata: {}, spec: { serviceAccountName: 'ghost', containers: [{ name: 'c', image: 'i' }] } });
  t.match(nameless.body.message, /^pods "Unknown" is forbidden: /, 'without any name: Unknown');
  const noName = await http(s, 'POST', '/api/v1/namespaces/default/pods', { ...pod(''), metadata: {} });
  t.equal(noName.status, 422, 'a pod without a name of a service account that exists: 422');
  t.same(noName.body.details, { kind: 'Pod', causes: [{ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' }] }, 'details without a name');
  const noNs = await http(s, 'POST', '/api/v1/namespaces/nowhere/pods', pod('p', { spec: { serviceAccountName: 'ghost' } }));
  t.equal(noNs.status, 404, 'NamespaceLifecycle comes first');
  t.equal(noNs.body.message, 'namespaces "nowhere" not found');
});

t.test("ServiceAccount: the service account's automountServiceAccountToken and imagePullSecrets; a taken volume name", async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'quiet' }, automountServiceAccountToken: false, imagePullSecrets: [{ name: 'regcred' }] });
  const quiet = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('a', { spec: { serviceAccountName: 'quiet' } }));
  t.notOk(quiet.body.spec.volumes, 'no token where the service account opts out');
  t.same(quiet.body.spec.imagePullSecrets, [{ name: 'regcred' }], "the service account's pull secrets");
  const own = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('b', { spec: { serviceAccountName: 'quiet', automountServiceAccountToken: true, imagePullSecrets: [{ name: 'mine' }] } }));
  t.match(own.body.spec.volumes?.[0]?.name, /^quiet-token-[a-z0-9]{5}$/, "the pod's own automountServiceAccountToken wins");
  t.same(own.body.spec.imagePullSecrets, [{ name: 'mine' }], 'a pod with pull secrets keeps its own');

  const secretName = (await http(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).body.secrets[0].name as string;
  const taken = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('c', { spec: { volumes: [{ name: secretName, emptyDir: {} }], containers: [{ name: 'c', image: 'busybox:1.36', volumeMounts: [{ name: secretName, mountPath: '/data' }] }] } }));
  const tokenVolume = taken.body.spec.volumes.find((v: any) => v.secret?.secretName === secretName);
  t.match(tokenVolume?.name, new RegExp(`^${secretName}-[a-z0-9]{5}$`), 'a volume name already taken gets a suffix');
  t.same(taken.body.spec.containers[0].volumeMounts[1], { name: tokenVolume?.name, readOnly: true, mountPath: TOKEN_PATH });
  const mountsItself = await http(
    s,
    'POST',
    '/api/v1/namespaces/default/pods',
    pod('d', { spec: { volumes: [{ name: 'mine', emptyDir: {} }], containers: [{ name: 'c', image: 'busybox:1.36', volumeMounts: [{ name: 'mine', mountPath: TOKEN_PATH }] }] } }),
  );
  t.same(
    mountsItself.body.spec.volumes.map((v: any) => v.name),
    ['mine'],
    'no token volume when no container needs it',
  );
});

t.test('ServiceAccount: no token where the pod opts out, a container already mounts the path, or the pod is a mirror pod', async (t) => {
  const s = await withServer(t);
  const optOut = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('a', { spec: { automountServiceAccountToken: false } }));
  t.equal(optOut.body.spec.serviceAccountName, 'default');
  t.notOk(optOut.body.spec.volumes, 'automountServiceAccountToken: false');
  const own = await http(
    s,
    'POST',
    '/api/v1/namespaces/default/pods',
    pod('b', { spec: { volumes: [{ name: 'mine', emptyDir: {} }], containers: [{ name: 'c', image: 'busybox:1.36', volumeMounts: [{ name: 'mine', mountPath: TOKEN_PATH }] }] } }),
  );
  t.same(own.body.spec.containers[0].volumeMounts, [{ name: 'mine', mountPath: TOKEN_PATH }], 'a container that mounts the path keeps its own');
  const mirror = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('m', { metadata: { annotations: { 'kubernetes.io/config.mirror': 'hash' } } }));
  t.notOk(mirror.body.spec.serviceAccountName, 'a mirror pod gets no service account');
  t.notOk(mirror.body.spec.volumes, 'nor a token volume');
  t.same(mirror.body.spec.tolerations, defaultTolerations, 'but the default tolerations');
});

t.test('DefaultTolerationSeconds: not-ready and unreachable tolerated for 300 s unless the pod already tolerates them', async (t) => {
  const s = await withServer(t);
  const plain = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('a'));
  t.same(plain.body.spec.tolerations, defaultTolerations);
  const own = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 };
  const mine = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('b', { spec: { tolerations: [own] } }));
  t.same(mine.body.spec.tolerations, [own, defaultTolerations[0]], 'its own unreachable toleration stays, not-ready is added');
  const all = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('c', { spec: { tolerations: [{ operator: 'Exists' }] } }));
  t.same(all.body.spec.tolerations, [{ operator: 'Exists' }], 'a toleration of every taint covers both');
});

t.test('TaintNodesByCondition: a new node is tainted not-ready (NoSchedule)', async (t) => {
  const s = await withServer(t);
  const node = await http(s, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {} });
  t.same(node.body.spec.taints, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }]);
  const tainted = await http(s, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n2' }, spec: { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] } });
  t.equal(tainted.body.spec.taints.length, 1, 'not twice');
});

t.test('each plugin can be turned off', async (t) => {
  const s = await withServer(t, { admission: { ServiceAccount: false, DefaultTolerationSeconds: false, TaintNodesByCondition: false } });
  const created = await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('a'));
  t.notOk(created.body.spec.serviceAccountName);
  t.notOk(created.body.spec.volumes);
  t.notOk(created.body.spec.tolerations);
  const node = await http(s, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {} });
  t.notOk(node.body.spec.taints);
});
