// The service account and token controllers a kubelet's pods depend on (kube-controller-manager's, run here
// synchronously after each change): a `default` service account in every namespace, a token secret for every service
// account, listed in its `secrets` and removed with it. As a real v1.20.2 control plane (tools/kube) does them.
import t from 'tap';
import { http, pod, watch, withServer, type Obj } from './helpers.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString();

t.test('every namespace has a default service account with a token secret', async (t) => {
  const s = await withServer(t, { serviceAccountRootCA: 'CA PEM' });
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    const sa = s.store.get('serviceaccounts', ns, 'default') as Obj | undefined;
    t.equal(sa?.secrets?.length, 1, `${ns} has its default service account with one secret`);
  }
  const w = watch(s, '/api/v1/namespaces/team/serviceaccounts?watch=true&resourceVersion=' + s.store.resourceVersion);
  t.teardown(() => w.close());
  await s.waitForWatch('serviceaccounts');
  t.equal((await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'team' } })).status, 201);
  const sa = (await http(s, 'GET', '/api/v1/namespaces/team/serviceaccounts/default')).body;
  t.same(Object.keys(sa), ['kind', 'apiVersion', 'metadata', 'secrets']);
  t.same(sa.secrets.length, 1);
  const name = sa.secrets[0].name as string;
  t.match(name, /^default-token-[a-z0-9]{5}$/);
  const secret = (await http(s, 'GET', `/api/v1/namespaces/team/secrets/${name}`)).body;
  t.equal(secret.type, 'kubernetes.io/service-account-token');
  t.same(secret.metadata.annotations, { 'kubernetes.io/service-account.name': 'default', 'kubernetes.io/service-account.uid': sa.metadata.uid });
  t.same(Object.keys(secret.data).sort(), ['ca.crt', 'namespace', 'token']);
  t.equal(unb64(secret.data['ca.crt']), 'CA PEM', 'ca.crt is the root CA');
  t.equal(unb64(secret.data.namespace), 'team');
  t.equal(unb64(secret.data.token).split('.').length, 3, 'the token is a JWT');
  const events = await w.waitFor(2);
  t.same(
    events.map((e) => [e.type, e.object.secrets?.length ?? 0]),
    [
      ['ADDED', 0],
      ['MODIFIED', 1],
    ],
    'the service account appears, then lists its token secret',
  );
});

t.test('service accounts: created, deleted, their token secrets follow', async (t) => {
  const s = await withServer(t);
  const created = await http(s, 'POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'builder' } });
  t.equal(created.status, 201);
  t.same(created.body.secrets, undefined, 'the create answers before the token controller adds its secret');
  const sa = (await http(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/builder')).body;
  const secretName = sa.secrets[0].name as string;
  t.match(secretName, /^builder-token-[a-z0-9]{5}$/);

  // A deleted token secret is replaced by a new one, and the service account lists that instead.
  await http(s, 'DELETE', `/api/v1/namespaces/default/secrets/${secretName}`);
  const after = (await http(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/builder')).body;
  t.equal(after.secrets.length, 1);
  t.not(after.secrets[0].name, secretName, 'a new token secret');
  t.equal((await http(s, 'GET', `/api/v1/namespaces/default/secrets/${after.secrets[0].name}`)).status, 200);

  // A token secret made by hand for the service account gets its token; one for a missing service account is deleted.
  const manual = await http(s, 'POST', '/api/v1/namespaces/default/secrets', {
    metadata: { name: 'builder-manual', annotations: { 'kubernetes.io/service-account.name': 'builder' } },
    type: 'kubernetes.io/service-account-token',
  });
  t.equal(manual.status, 201);
  const filled = (await http(s, 'GET', '/api/v1/namespaces/default/secrets/builder-manual')).body;
  t.equal(filled.metadata.annotations['kubernetes.io/service-account.uid'], sa.metadata.uid, 'the uid annotation is added');
  t.equal(unb64(filled.data.namespace), 'default');
  t.ok(filled.data.token, 'and the token');
  await http(s, 'POST', '/api/v1/namespaces/default/secrets', {
    metadata: { name: 'orphan', annotations: { 'kubernetes.io/service-account.name': 'nobody' } },
    type: 'kubernetes.io/service-account-token',
    data: { token: b64('x') },
  });
  t.equal((await http(s, 'GET', '/api/v1/namespaces/default/secrets/orphan')).status, 404, 'a token secret of no service account is deleted');

  // Deleting the service account deletes its token secrets.
  await http(s, 'DELETE', '/api/v1/namespaces/default/serviceaccounts/builder');
  const left = (s.store.list('secrets', 'default') as Obj[]).filter((x) => x.metadata.annotations?.['kubernetes.io/service-account.name'] === 'builder');
  t.same(left, [], 'no token secret of builder is left');

  // default comes back when deleted.
  const oldUid = (s.store.get('serviceaccounts', 'default', 'default') as Obj).metadata.uid;
  await http(s, 'DELETE', '/api/v1/namespaces/default/serviceaccounts/default');
  const again = s.store.get('serviceaccounts', 'default', 'default') as Obj;
  t.not(again.metadata.uid, oldUid, 'the default service account is made again');
  t.equal(again.secrets.length, 1, 'with a token secret');
});

t.test('deleting a namespace leaves none of its service accounts or secrets', async (t) => {
  const s = await withServer(t);
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'gone' } });
  await http(s, 'POST', '/api/v1/namespaces/gone/serviceaccounts', { metadata: { name: 'x' } });
  await http(s, 'POST', '/api/v1/namespaces/gone/pods', pod('p'));
  await http(s, 'DELETE', '/api/v1/namespaces/gone');
  t.same(s.store.list('serviceaccounts', 'gone'), []);
  t.same(s.store.list('secrets', 'gone'), []);
  t.same(s.store.list('pods', 'gone'), []);
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'gone' } });
  t.equal((s.store.get('serviceaccounts', 'gone', 'default') as Obj).secrets.length, 1, 'made again with the namespace');
});

t.test('without NamespaceLifecycle a namespace that has no object gets its default service account on first use', async (t) => {
  const s = await withServer(t, { enforceNamespaces: false });
  const created = await http(s, 'POST', '/api/v1/namespaces/adhoc/pods', pod('p'));
  t.equal(created.status, 201);
  t.match(created.body.spec.volumes[0].name, /^default-token-[a-z0-9]{5}$/);
  t.equal((await http(s, 'POST', '/api/v1/namespaces/adhoc/pods', pod('q', { spec: { serviceAccountName: 'other' } }))).status, 403, 'other service accounts must exist');
  t.equal((await http(s, 'POST', '/api/v1/namespaces/adhoc/serviceaccounts/default/token', { spec: {} })).status, 201, 'a token for it');
});
