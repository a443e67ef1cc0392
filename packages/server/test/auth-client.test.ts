// The default reviewers over client-node, against a fake API server speaking the review APIs.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { FakeClock } from '@kubelet-ts/core/testing';
import { createAuthenticator, createAuthorizer, createSubjectAccessReviewer, createTokenReviewer, requestAttributes } from '../src/auth/index.js';
import { close, listen } from './fixtures/auth-http.js';

const received: { path: string; body: any }[] = [];
let failNext = 0;

const apiserver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    received.push({ path: req.url ?? '', body });
    res.setHeader('Content-Type', 'application/json');
    if (failNext > 0) {
      failNext--;
      res.statusCode = 403;
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'tokenreviews is forbidden' }));
      return;
    }
    if (req.method === 'POST' && req.url === '/apis/authentication.k8s.io/v1/tokenreviews') {
      const token = body.spec?.token;
      const status =
        token === 'good'
          ? { authenticated: true, user: { username: 'jane', uid: 'j-1', groups: ['devs', 'system:authenticated'], extra: { 'scopes.example.com': ['x'] } }, audiences: ['https://kubernetes.default.svc'] }
          : token === 'broken'
            ? { authenticated: false, error: 'could not verify token' }
            : { authenticated: false };
      res.end(JSON.stringify({ ...body, status }));
      return;
    }
    if (req.method === 'POST' && req.url === '/apis/authorization.k8s.io/v1/subjectaccessreviews') {
      const spec = body.spec;
      const status = spec.user === 'jane' ? { allowed: true, reason: 'RBAC: allowed' } : { allowed: false, denied: spec.user === 'mallory', reason: 'no' };
      res.end(JSON.stringify({ ...body, status }));
      return;
    }
    res.statusCode = 404;
    res.end('{}');
  });
});

t.before(() => listen(apiserver));
t.teardown(() => close(apiserver));

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  const { port } = apiserver.address() as AddressInfo;
  kc.loadFromOptions({
    // client-node refuses plain http unless TLS verification is off.
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'kubelet', token: 'kubelet-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'kubelet' }],
    currentContext: 'ctx',
  });
  return kc;
}

t.test('createTokenReviewer posts a TokenReview and maps its status', async (t) => {
  const reviewer = createTokenReviewer(kubeConfig());
  t.same(await reviewer.review('good'), {
    authenticated: true,
    audiences: ['https://kubernetes.default.svc'],
    user: { name: 'jane', groups: ['devs', 'system:authenticated'], uid: 'j-1', extra: { 'scopes.example.com': ['x'] } },
  });
  t.same(received.at(-1), {
    path: '/apis/authentication.k8s.io/v1/tokenreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 'good' } },
  });
  t.same(await reviewer.review('other'), { authenticated: false });
  t.same(await reviewer.review('broken'), { authenticated: false, error: 'could not verify token' });
  await reviewer.review('good', ['aud-1']);
  t.same(received.at(-1)?.body.spec, { token: 'good', audiences: ['aud-1'] });
  failNext = 1;
  await t.rejects(reviewer.review('good'), { code: 403 });
});

t.test('createSubjectAccessReviewer posts a SubjectAccessReview (empty fields omitted, as Go omitempty)', async (t) => {
  const reviewer = createSubjectAccessReviewer(kubeConfig());
  const attrs = requestAttributes({ name: 'jane', uid: 'j-1', groups: ['devs'], extra: { k: ['v'] } }, { method: 'GET', url: '/stats/summary' }, 'node-1');
  const authz = createAuthorizer({ mode: 'Webhook', subjectAccessReviewer: reviewer, clock: new FakeClock() });
  t.same(await authz.authorize(attrs), { decision: 'allow', reason: 'RBAC: allowed' });
  t.same(received.at(-1), {
    path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: 'jane',
        uid: 'j-1',
        groups: ['devs'],
        extra: { k: ['v'] },
        resourceAttributes: { verb: 'get', version: 'v1', resource: 'nodes', subresource: 'stats', name: 'node-1' },
      },
    },
  });
  const resourceAttributes = { namespace: '', verb: 'create', group: '', version: 'v1', resource: 'nodes', subresource: 'proxy', name: 'node-1' };
  t.same(await reviewer.review({ user: 'mallory', groups: [], resourceAttributes }), { allowed: false, denied: true, reason: 'no' });
  t.same(received.at(-1)?.body.spec, { user: 'mallory', resourceAttributes: { verb: 'create', version: 'v1', resource: 'nodes', subresource: 'proxy', name: 'node-1' } });
  await reviewer.review({ user: 'jane', groups: [], nonResourceAttributes: { path: '/healthz', verb: 'get' } });
  t.same(received.at(-1)?.body.spec, { user: 'jane', nonResourceAttributes: { path: '/healthz', verb: 'get' } });
  failNext = 1;
  await t.rejects(authz.authorize({ ...attrs, user: { name: 'other', groups: [] } }), { code: 403 });
});

t.test('createAuthenticator/createAuthorizer build the clients from the kubeconfig', async (t) => {
  const clock = new FakeClock();
  const authn = createAuthenticator({ webhookEnabled: true, anonymousEnabled: false, kubeConfig: kubeConfig(), clock });
  const req = { headers: { authorization: 'Bearer good' }, method: 'GET', url: '/pods' } as unknown as http.IncomingMessage;
  t.same((await authn.authenticate(req)).user, { name: 'jane', uid: 'j-1', groups: ['devs', 'system:authenticated'], extra: { 'scopes.example.com': ['x'] } });
  const authz = createAuthorizer({ mode: 'Webhook', kubeConfig: kubeConfig(), clock });
  t.equal((await authz.authorize(requestAttributes({ name: 'bob', groups: [] }, { method: 'GET', url: '/pods' }, 'n'))).decision, 'no-opinion');
});
