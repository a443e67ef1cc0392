// Integration over real TLS: client certificates verified by the TLS server against the client CA,
// mapped to users by the x509 authenticator; bearer tokens through a fake TokenReview reviewer.
import t from 'tap';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { FakeClock } from '@kubelet-ts/core/testing';
import { AlwaysAllowAuthorizer, authFilter, createAuthenticator, loadClientCA, requestUser, X509Authenticator, type AuthFilter } from '../src/auth/index.js';
import { FakeTokenReviewer } from './fixtures/auth-fakes.js';
import { call, close, listen, type Reply } from './fixtures/auth-http.js';
import { makeAuthPki, type KeyPair } from './fixtures/auth-pki.js';

const pki = makeAuthPki();
t.teardown(() => pki.cleanup());

const clock = new FakeClock();
const reviewer = new FakeTokenReviewer();
const prometheus = { name: 'system:serviceaccount:monitoring:prometheus', uid: 'sa-1', groups: ['system:serviceaccounts', 'system:authenticated'] };
reviewer.users.set('sa-token', prometheus);
reviewer.users.set('metrics-token', prometheus);

const filters: Record<string, AuthFilter> = {};
for (const anonymousEnabled of [false, true]) {
  const authenticator = createAuthenticator({ x509ClientCAFile: pki.caFile, webhookEnabled: true, anonymousEnabled, tokenReviewer: reviewer, clock });
  filters[String(anonymousEnabled)] = authFilter(authenticator, new AlwaysAllowAuthorizer(), 'node-1');
}

const server = https.createServer({ ...pki.server, ca: loadClientCA(pki.caFile), requestCert: true, rejectUnauthorized: false }, async (req, res) => {
  if (req.url === '/raw-x509') {
    // The x509 authenticator on its own, to see "no user" vs error.
    const result = await new X509Authenticator().authenticate(req);
    res.end(JSON.stringify({ user: result.user, error: result.error?.message, authorized: (req.socket as TLSSocket).authorized }));
    return;
  }
  const filter = filters[String(req.headers['x-anonymous'] === 'true')] as AuthFilter;
  if (!(await filter.checkRequest(req, res))) return;
  res.end(JSON.stringify(requestUser(req)));
});
t.before(() => listen(server));
t.teardown(() => close(server));

function get(path: string, cert?: KeyPair, headers: Record<string, string> = {}): Promise<Reply> {
  return call(server, path, { headers, tls: { ca: pki.ca, ...(cert ? { cert: cert.cert, key: cert.key } : {}) } });
}

const apiserverClient = pki.client('apiserver', '/O=system:masters/CN=kube-apiserver-kubelet-client');
const multiOrg = pki.client('multi', '/O=team-a/O=team-b/CN=multi');
const noEku = pki.client('no-eku', '/O=ops/CN=legacy', 'none');
const serverOnly = pki.client('server-only', '/CN=not-a-client', 'serverAuth');
const noCN = pki.client('no-cn', '/O=team-a');
const foreign = pki.foreignClient('/O=system:masters/CN=impostor');

t.test('a client certificate from the client CA is the user (CN) with its groups (O)', async (t) => {
  const res = await get('/stats/summary', apiserverClient);
  t.equal(res.status, 200);
  t.same(JSON.parse(res.body), { name: 'kube-apiserver-kubelet-client', groups: ['system:masters', 'system:authenticated'] });
});

t.test('every O of the subject is a group', async (t) => {
  const res = await get('/pods', multiOrg);
  t.same(JSON.parse(res.body), { name: 'multi', groups: ['team-a', 'team-b', 'system:authenticated'] });
});

t.test('a certificate without extended key usage is accepted (Go: any usage)', async (t) => {
  const res = await get('/pods', noEku);
  t.equal(res.status, 200);
  t.equal(JSON.parse(res.body).name, 'legacy');
});

t.test('a certificate from another CA names no user; alone it is refused, even with anonymous on', async (t) => {
  const raw = JSON.parse((await get('/raw-x509', foreign)).body);
  t.equal(raw.user, undefined);
  t.equal(raw.authorized, false);
  t.equal(raw.error, 'x509: certificate signed by unknown authority');

  let res = await get('/pods', foreign);
  t.equal(res.status, 401);
  t.equal(res.body, 'Unauthorized');
  res = await get('/pods', foreign, { 'x-anonymous': 'true' });
  t.equal(res.status, 401, 'Go: the x509 error fails the union before anonymous');

  res = await get('/pods', foreign, { authorization: 'Bearer sa-token' });
  t.equal(res.status, 200, 'the next authenticator still runs');
  t.equal(JSON.parse(res.body).name, 'system:serviceaccount:monitoring:prometheus');
});

t.test('a certificate not for client auth is refused', async (t) => {
  const raw = JSON.parse((await get('/raw-x509', serverOnly)).body);
  t.equal(raw.user, undefined);
  t.equal(raw.error, 'x509: certificate specifies an incompatible key usage');
  t.equal((await get('/pods', serverOnly)).status, 401);
});

t.test('a certificate without CN names no user, without error', async (t) => {
  const raw = JSON.parse((await get('/raw-x509', noCN)).body);
  t.same(raw, { authorized: true });
  t.equal((await get('/pods', noCN)).status, 401);
  t.equal(JSON.parse((await get('/pods', noCN, { 'x-anonymous': 'true' })).body).name, 'system:anonymous');
});

t.test('no certificate: no user from x509', async (t) => {
  t.same(JSON.parse((await get('/raw-x509')).body), { authorized: false });
});

t.test('bearer tokens over TLS through the TokenReview reviewer', async (t) => {
  const calls = reviewer.calls.length;
  let res = await get('/metrics', undefined, { authorization: 'Bearer metrics-token' });
  t.equal(res.status, 200);
  t.same(JSON.parse(res.body), prometheus);
  res = await get('/metrics', undefined, { authorization: 'Bearer metrics-token' });
  t.equal(reviewer.calls.length, calls + 1, 'second request served from the cache');

  res = await get('/metrics', undefined, { authorization: 'Bearer wrong', 'x-anonymous': 'true' });
  t.equal(res.status, 401, 'an invalid token is 401 even with anonymous on');

  res = await get('/metrics', undefined, { 'x-anonymous': 'true' });
  t.same(JSON.parse(res.body), { name: 'system:anonymous', groups: ['system:unauthenticated'] });
  res = await get('/metrics');
  t.equal(res.status, 401);
});

t.test('the certificate wins over a token (x509 is tried first)', async (t) => {
  const res = await get('/pods', apiserverClient, { authorization: 'Bearer sa-token' });
  t.equal(JSON.parse(res.body).name, 'kube-apiserver-kubelet-client');
});
