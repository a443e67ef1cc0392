// The TokenRequest and TokenReview APIs. Every status, message and claim asserted here is what kube-apiserver v1.20.2
// (tools/kube: --service-account-issuer and --api-audiences https://kubernetes.default.svc.cluster.local) answered to
// the same request.
import t from 'tap';
import { createPublicKey, verify } from 'node:crypto';
import { AuthenticationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ManualClock, http, pod, withServer, type Obj } from './helpers.js';

const NS = 'team';
const SA = `/api/v1/namespaces/${NS}/serviceaccounts`;
const REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';
const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const USER = `system:serviceaccount:${NS}:default`;
const GROUPS = ['system:serviceaccounts', `system:serviceaccounts:${NS}`, 'system:authenticated'];

function decode(token: string): { header: Obj; claims: Obj } {
  const [h, c] = token.split('.');
  return { header: JSON.parse(Buffer.from(h, 'base64url').toString()), claims: JSON.parse(Buffer.from(c, 'base64url').toString()) };
}

async function setup(t: Parameters<typeof withServer>[0], opts: Parameters<typeof withServer>[1] = {}) {
  const s = await withServer(t, opts);
  await http(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } });
  const p = (await http(s, 'POST', `/api/v1/namespaces/${NS}/pods`, pod('web', { spec: { nodeName: 'n1' } }))).body as Obj;
  const sa = s.store.get('serviceaccounts', NS, 'default') as Obj;
  const request = async (body: Obj, name = 'default') => http(s, 'POST', `${SA}/${name}/token`, body);
  const review = async (token: string, audiences?: string[]) => (await http(s, 'POST', REVIEWS, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences ? { audiences } : {}) } })).body as Obj;
  const tokenFor = async (spec: Obj) => (await request({ spec })).body.status.token as string;
  return { s, pod: p, sa, request, review, tokenFor };
}

t.test('TokenRequest: the defaults, the answer and the token', async (t) => {
  const clock = new ManualClock();
  const { s, sa, request } = await setup(t, { clock });
  const r = await request({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
  t.equal(r.status, 201);
  const now = clock.now() / 1000;
  t.same(r.body, {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: { audiences: [ISSUER], expirationSeconds: 3600, boundObjectRef: null },
    status: { token: r.body.status.token, expirationTimestamp: new Date((now + 3600) * 1000).toISOString().replace('.000Z', 'Z') },
  });
  const { header, claims } = decode(r.body.status.token);
  t.same(header, { alg: 'ES256', kid: header.kid }, 'a signed JWT with a key id');
  t.same(Object.keys(claims), ['aud', 'exp', 'iat', 'iss', 'kubernetes.io', 'nbf', 'sub'], 'the claims in the order go-jose writes them');
  t.same(claims, {
    aud: [ISSUER],
    exp: now + 3600,
    iat: now,
    iss: ISSUER,
    'kubernetes.io': { namespace: NS, serviceaccount: { name: 'default', uid: sa.metadata.uid } },
    nbf: now,
    sub: USER,
  });
  const [h, c, sig] = (r.body.status.token as string).split('.');
  const key = createPublicKey(s.tokens.publicKeyPem);
  t.ok(verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url')), 'the signature verifies with the server key');

  const nullSpec = await request({ spec: { audiences: [], expirationSeconds: null } });
  t.same(nullSpec.body.spec, { audiences: [ISSUER], expirationSeconds: 3600, boundObjectRef: null }, 'empty audiences and a null expiry are defaulted');
  const named = await request({ metadata: { name: 'foo', namespace: 'other' }, spec: {} });
  t.same(named.body.metadata, { name: 'foo', namespace: 'other', creationTimestamp: null }, "the body's name and namespace are echoed");
  t.ok(s.requests.some((x) => x.verb === 'create' && x.resource === 'serviceaccounts' && x.subresource === 'token' && x.status === 201), 'logged as a create of serviceaccounts/token');
});

t.test('TokenRequest: a token bound to a pod, for audiences', async (t) => {
  const clock = new ManualClock();
  const { s, pod: p, sa, request } = await setup(t, { clock });
  const r = await request({ spec: { audiences: ['aud1', 'aud2'], expirationSeconds: 600, boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: p.metadata.uid } } });
  t.equal(r.status, 201);
  t.same(r.body.spec, { audiences: ['aud1', 'aud2'], expirationSeconds: 600, boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: p.metadata.uid } });
  const now = clock.now() / 1000;
  t.same(decode(r.body.status.token).claims, {
    aud: ['aud1', 'aud2'],
    exp: now + 600,
    iat: now,
    iss: ISSUER,
    'kubernetes.io': { namespace: NS, pod: { name: 'web', uid: p.metadata.uid }, serviceaccount: { name: 'default', uid: sa.metadata.uid } },
    nbf: now,
    sub: USER,
  });
  const noUid = await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } } });
  t.same(noUid.body.spec.boundObjectRef, { kind: 'Pod', apiVersion: 'v1', name: 'web' }, 'the reference is echoed as sent');
  t.equal(decode(noUid.body.status.token).claims['kubernetes.io'].pod.uid, p.metadata.uid, 'the claim has the uid of record');

  // 3607 s, what 1.21+ admission projects: valid a year when pod-bound, warning after 3607 s; the status says 3607.
  const extended = await request({ spec: { expirationSeconds: 3607, boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } } });
  const ext = decode(extended.body.status.token).claims;
  t.equal(ext.exp - ext.iat, 365 * 24 * 3600, 'a pod-bound 3607 s token is valid a year');
  t.equal(ext['kubernetes.io'].warnafter, ext.iat + 3607, 'with warnafter at 3607 s');
  t.equal(Date.parse(extended.body.status.expirationTimestamp) / 1000, now + 3607, 'expirationTimestamp is the requested one');
  const unbound = decode((await request({ spec: { expirationSeconds: 3607 } })).body.status.token).claims;
  t.equal(unbound.exp - unbound.iat, 3607, 'not extended without a pod');
  t.notOk('warnafter' in unbound['kubernetes.io']);

  const secretName = sa.secrets[0].name;
  const secretBound = await request({ spec: { boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: secretName } } });
  t.equal(secretBound.status, 201, 'bound to a secret');
  const secret = s.store.get('secrets', NS, secretName) as Obj;
  t.same(decode(secretBound.body.status.token).claims['kubernetes.io'], {
    namespace: NS,
    secret: { name: secretName, uid: secret.metadata.uid },
    serviceaccount: { name: 'default', uid: sa.metadata.uid },
  });
});

t.test('TokenRequest: the errors', async (t) => {
  const { s, pod: p, request } = await setup(t);
  const tooShort = await request({ spec: { expirationSeconds: 599 } });
  t.same(tooShort.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
    reason: 'Invalid',
    details: {
      group: 'authentication.k8s.io',
      kind: 'TokenRequest',
      causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: 599: may not specify a duration less than 10 minutes', field: 'spec.expirationSeconds' }],
    },
    code: 422,
  });
  t.equal((await request({ spec: { expirationSeconds: 0 } })).body.message, 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 0: may not specify a duration less than 10 minutes');
  t.equal(
    (await request({ spec: { expirationSeconds: 4294967297 } })).body.message,
    'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds',
  );
  t.equal((await request({ spec: { expirationSeconds: 599 } }, 'nope')).status, 422, 'validation comes before the service account');

  const missing = await request({ spec: {} }, 'nope');
  t.same(missing.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'serviceaccounts "nope" not found', reason: 'NotFound', details: { name: 'nope', kind: 'serviceaccounts' }, code: 404 });
  t.equal((await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'nopod' } } }, 'nope')).body.message, 'serviceaccounts "nope" not found', 'the service account before the bound object');

  const noPod = await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'nopod' } } });
  t.same(noPod.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "nopod" not found', reason: 'NotFound', details: { name: 'nopod', kind: 'pods' }, code: 404 });
  const otherUid = await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'abc' } } });
  t.same(otherUid.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (abc) does not match the UID in record. The object might have been deleted and then recreated',
    reason: 'Conflict',
    details: { name: 'web', kind: 'Pod' },
    code: 409,
  });
  t.equal((await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: p.metadata.uid } } })).status, 201, 'the right uid');
  const node = await request({ spec: { boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'web' } } });
  t.same([node.status, node.body.reason, node.body.message], [400, 'BadRequest', 'cannot bind token to object of type /v1, Kind=Node']);
  t.equal((await request({ spec: { boundObjectRef: { name: 'web' } } })).body.message, 'cannot bind token to object of type /, Kind=');
  t.equal((await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1' } } })).body.message, 'Name parameter required.');
  t.equal((await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v2', name: 'web' } } })).body.message, 'pods "web" not found', 'another version finds nothing');
  t.equal((await request({ spec: { boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'nosecret' } } })).body.message, 'secrets "nosecret" not found');

  await http(s, 'POST', `${SA}`, { metadata: { name: 'builder' } });
  const otherSa = await request({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } } }, 'builder');
  t.same([otherSa.status, otherSa.body.message], [400, 'cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.']);

  t.equal((await http(s, 'POST', '/api/v1/namespaces/nons/serviceaccounts/default/token', { spec: {} })).body.message, 'namespaces "nons" not found', 'NamespaceLifecycle');
  const get = await http(s, 'GET', `${SA}/default/token`);
  t.same([get.status, get.body.message], [405, 'the server does not allow this method on the requested resource']);
  const wrongKind = await request({ kind: 'Pod', apiVersion: 'v1', spec: {} });
  t.equal(wrongKind.status, 400, 'another kind in the body');
  const empty = await http(s, 'POST', `${SA}/default/token`, '');
  t.equal(empty.status, 400, 'an empty body');
});

t.test('TokenRequest: --service-account-max-token-expiration and --service-account-extend-token-expiration=false', async (t) => {
  const { request } = await setup(t, { serviceAccountTokens: { maxExpirationSeconds: 1800, extendExpiration: false, apiAudiences: ['api', 'other'] } });
  const capped = await request({ spec: { expirationSeconds: 7200 } });
  const claims = decode(capped.body.status.token).claims;
  t.equal(claims.exp - claims.iat, 1800, 'capped at the maximum');
  t.same(claims.aud, ['api', 'other'], 'the API audiences');
  const notExtended = decode((await request({ spec: { expirationSeconds: 3607, boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } } })).body.status.token).claims;
  t.equal(notExtended.exp - notExtended.iat, 1800, 'no extension');
});

t.test('TokenReview: bound tokens, audiences, users', async (t) => {
  const { pod: p, sa, review, tokenFor } = await setup(t);
  const token = await tokenFor({ audiences: ['aud1', 'aud2'], boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: p.metadata.uid } });
  const ok = await review(token, ['aud1']);
  t.same(ok, {
    kind: 'TokenReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: { token, audiences: ['aud1'] },
    status: {
      authenticated: true,
      user: {
        username: USER,
        uid: sa.metadata.uid,
        groups: GROUPS,
        extra: { 'authentication.kubernetes.io/pod-name': ['web'], 'authentication.kubernetes.io/pod-uid': [p.metadata.uid] },
      },
      audiences: ['aud1'],
    },
  });
  t.same((await review(token, ['x', 'aud2', 'aud1'])).status.audiences, ['aud2', 'aud1'], 'the audiences asked for that the token has, in the order asked');
  t.same((await review(token)).status, {
    user: {},
    error: '[invalid bearer token, token audiences ["aud1" "aud2"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]]',
  }, "without audiences: the API server's own");

  const apiToken = await tokenFor({});
  const plain = await review(apiToken);
  t.same(plain.status, { authenticated: true, user: { username: USER, uid: sa.metadata.uid, groups: GROUPS }, audiences: [ISSUER] }, 'no extra without a pod');
  t.same(plain.spec, { token: apiToken });
});

t.test('TokenReview: the legacy token of the token secret', async (t) => {
  const { s, sa, review } = await setup(t);
  const secret = s.store.get('secrets', NS, sa.secrets[0].name) as Obj;
  const legacy = Buffer.from(secret.data.token, 'base64').toString();
  t.same(decode(legacy).claims, {
    iss: 'kubernetes/serviceaccount',
    'kubernetes.io/serviceaccount/namespace': NS,
    'kubernetes.io/serviceaccount/secret.name': secret.metadata.name,
    'kubernetes.io/serviceaccount/service-account.name': 'default',
    'kubernetes.io/serviceaccount/service-account.uid': sa.metadata.uid,
    sub: USER,
  });
  t.same((await review(legacy)).status, { authenticated: true, user: { username: USER, uid: sa.metadata.uid, groups: GROUPS }, audiences: [ISSUER] });
  t.same((await review(legacy, ['aud1'])).status, {
    user: {},
    error: '[invalid bearer token, token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["aud1"]]',
  });

  // The service account goes: the token controller deletes its secret, and the token with it.
  await http(s, 'DELETE', `${SA}/default`);
  t.same((await review(legacy)).status, { user: {}, error: '[invalid bearer token, Token has been invalidated]' });
});

t.test('TokenReview: tokens that are not ours, tampered, or of things that are gone', async (t) => {
  const clock = new ManualClock();
  const { s, pod: p, review, tokenFor } = await setup(t, { clock });
  t.same((await review('abc.def.ghi')).status, { user: {}, error: 'invalid bearer token' }, 'not a JWT');
  t.same((await review('sometoken')).status, { user: {}, error: 'invalid bearer token' });
  const token = await tokenFor({ audiences: ['aud1'], boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } });
  const [h, c, sig] = token.split('.');
  const otherIssuer = Buffer.from(JSON.stringify({ iss: 'other', sub: 'x', aud: ['aud1'] })).toString('base64url');
  t.same((await review(`${h}.${otherIssuer}.${sig}`, ['aud1'])).status, { user: {}, error: 'invalid bearer token' }, 'another issuer');
  const forged = Buffer.from(JSON.stringify({ iss: ISSUER, sub: 'x', aud: ['aud1'] })).toString('base64url');
  t.same((await review(`${h}.${forged}.${sig}`, ['aud1'])).status, { user: {}, error: '[invalid bearer token, square/go-jose: error in cryptographic primitive]' }, 'our issuer, a bad signature');
  t.same((await review(`${h}.${c}.${'A'.repeat(sig.length)}`, ['aud1'])).status.error, '[invalid bearer token, square/go-jose: error in cryptographic primitive]');

  // A pod being deleted vouches for its tokens until a minute after its deletionTimestamp.
  await http(s, 'DELETE', `/api/v1/namespaces/${NS}/pods/web`, { gracePeriodSeconds: 30 });
  clock.advance(30_000 + 60_000);
  t.equal((await review(token, ['aud1'])).status.authenticated, true, 'within a minute of the deletionTimestamp');
  clock.advance(1000);
  t.same((await review(token, ['aud1'])).status, { user: {}, error: '[invalid bearer token, Token has been invalidated]' }, 'a minute after it');
  await http(s, 'DELETE', `/api/v1/namespaces/${NS}/pods/web`, { gracePeriodSeconds: 0 });
  t.same((await review(token, ['aud1'])).status.error, '[invalid bearer token, Token has been invalidated]', 'the pod gone');
  const again = (await http(s, 'POST', `/api/v1/namespaces/${NS}/pods`, pod('web', { spec: { nodeName: 'n1' } }))).body;
  t.same((await review(token, ['aud1'])).status.error, `[invalid bearer token, Pod UID (${again.metadata.uid}) does not match claim (${p.metadata.uid})]`, 'a new pod of the name');

  // Expiry: a minute's leeway past exp.
  const short = await tokenFor({ expirationSeconds: 600 });
  clock.advance(659_000);
  t.equal((await review(short)).status.authenticated, true, 'within a minute past its expiry');
  clock.advance(1000);
  t.same((await review(short)).status, { user: {}, error: '[invalid bearer token, Token has expired.]' });

  // The service account goes, or comes back as another.
  const saToken = await tokenFor({});
  const oldUid = (s.store.get('serviceaccounts', NS, 'default') as Obj).metadata.uid;
  s.store.delete('serviceaccounts', NS, 'default');
  // The service account controller makes `default` again at once.
  const newUid = (s.store.get('serviceaccounts', NS, 'default') as Obj).metadata.uid;
  t.not(newUid, oldUid, 'default is made again');
  t.same((await review(saToken)).status.error, `[invalid bearer token, ServiceAccount UID (${newUid}) does not match claim (${oldUid})]`);
  await http(s, 'POST', SA, { metadata: { name: 'builder' } });
  const builderToken = (await http(s, 'POST', `${SA}/builder/token`, { spec: {} })).body.status.token;
  await http(s, 'DELETE', `${SA}/builder`);
  t.same((await review(builderToken)).status.error, '[invalid bearer token, serviceaccounts "builder" not found]');
});

t.test('TokenReview: the errors', async (t) => {
  const { s } = await setup(t);
  const empty = await http(s, 'POST', REVIEWS, { spec: {} });
  t.same(empty.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'token is required for TokenReview in authentication', reason: 'BadRequest', code: 400 });
  const wrongKind = await http(s, 'POST', REVIEWS, { kind: 'Pod', spec: { token: 'x' } });
  t.equal(wrongKind.status, 400);
  t.match(wrongKind.body.message, /^Pod in version "v1" cannot be handled as a TokenReview: no kind "Pod" is registered for version "authentication.k8s.io\/v1"/);
  const named = await http(s, 'POST', REVIEWS, { metadata: { name: 'n' }, spec: { token: 'x' } });
  t.same([named.status, named.body.metadata], [201, { name: 'n', creationTimestamp: null }]);
  t.same([(await http(s, 'GET', REVIEWS)).status, (await http(s, 'GET', REVIEWS)).body.message], [405, 'the server does not allow this method on the requested resource']);
  t.equal((await http(s, 'POST', `/apis/authentication.k8s.io/v1/namespaces/${NS}/tokenreviews`, { spec: { token: 'x' } })).status, 404, 'cluster-scoped');
});

t.test('client-node: createNamespacedServiceAccountToken and createTokenReview', async (t) => {
  const { s, pod: p } = await setup(t);
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(s.kubeconfig()));
  const core = kc.makeApiClient(CoreV1Api);
  const auth = kc.makeApiClient(AuthenticationV1Api);
  // What the kubelet's token manager sends for a projected serviceAccountToken source.
  const tr = await core.createNamespacedServiceAccountToken({
    namespace: NS,
    name: 'default',
    body: { spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: p.metadata.uid } } },
  });
  t.ok(tr.status?.token, 'a token');
  t.ok(tr.status?.expirationTimestamp instanceof Date, 'expirationTimestamp decodes as a time');
  t.same(tr.spec.audiences, [ISSUER]);
  const reviewed = await auth.createTokenReview({ body: { spec: { token: tr.status!.token } } });
  t.equal(reviewed.status?.authenticated, true);
  t.same(reviewed.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['web']);
  await t.rejects(core.createNamespacedServiceAccountToken({ namespace: NS, name: 'nope', body: { spec: { audiences: [] } } }), { code: 404 });
});

t.test('discovery lists the token subresource and tokenreviews', async (t) => {
  const s = await withServer(t);
  const core = (await http(s, 'GET', '/api/v1')).body.resources as Obj[];
  t.same(
    core.find((r) => r.name === 'serviceaccounts'),
    { name: 'serviceaccounts', singularName: 'serviceaccount', namespaced: true, kind: 'ServiceAccount', verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], shortNames: ['sa'] },
  );
  t.same(core.find((r) => r.name === 'serviceaccounts/token'), { name: 'serviceaccounts/token', singularName: '', namespaced: true, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] });
  const authn = (await http(s, 'GET', '/apis/authentication.k8s.io/v1')).body;
  t.same(authn.resources, [{ name: 'tokenreviews', singularName: 'tokenreview', namespaced: false, kind: 'TokenReview', verbs: ['create'] }]);
  t.ok(((await http(s, 'GET', '/apis')).body.groups as Obj[]).some((g) => g.name === 'authentication.k8s.io'));
});
