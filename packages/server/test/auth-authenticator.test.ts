import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '@kubelet-ts/core/testing';
import {
  AnonymousAuthenticator,
  AuthenticatedGroupAdder,
  createAuthenticator,
  loadClientCA,
  UnionAuthenticator,
  type Authenticator,
  type AuthenticationResult,
} from '../src/auth/index.js';
import { FakeTokenReviewer } from './fixtures/auth-fakes.js';
import { makeAuthPki } from './fixtures/auth-pki.js';

const req = (headers: Record<string, string> = {}): IncomingMessage => ({ headers: { ...headers }, method: 'GET', url: '/pods' }) as unknown as IncomingMessage;
const fixed = (result: AuthenticationResult | Error): Authenticator => ({
  authenticate: async () => {
    if (result instanceof Error) throw result;
    return result;
  },
});

t.test('union: first user wins, errors remembered, aggregated when nobody succeeds', async (t) => {
  const u = { name: 'u', groups: [] };
  t.same(await new UnionAuthenticator([fixed({ user: undefined }), fixed({ user: u })]).authenticate(req()), { user: u });
  t.same(await new UnionAuthenticator([fixed({ user: undefined, error: new Error('bad cert') }), fixed({ user: u })]).authenticate(req()), { user: u });
  t.same(await new UnionAuthenticator([fixed({ user: undefined })]).authenticate(req()), { user: undefined });
  const res = await new UnionAuthenticator([fixed({ user: undefined, error: new Error('a') }), fixed(new Error('b'))]).authenticate(req());
  t.equal(res.error?.message, '[a, b]');
  const one = await new UnionAuthenticator([fixed({ user: undefined, error: new Error('a') }), fixed({ user: undefined })]).authenticate(req());
  t.equal(one.error?.message, 'a');
  const failFast = await new UnionAuthenticator([fixed(new Error('a')), fixed({ user: u })], { failOnError: true }).authenticate(req());
  t.equal(failFast.error?.message, 'a', 'failOnError stops at the first error');
});

t.test('group adder adds system:authenticated except to anonymous or already-grouped users', async (t) => {
  const add = async (user: { name: string; groups: string[] }) => (await new AuthenticatedGroupAdder(fixed({ user })).authenticate(req())).user?.groups;
  t.same(await add({ name: 'u', groups: ['system:masters'] }), ['system:masters', 'system:authenticated']);
  t.same(await add({ name: 'u', groups: ['system:authenticated', 'x'] }), ['system:authenticated', 'x']);
  t.same(await add({ name: 'u', groups: ['system:unauthenticated'] }), ['system:unauthenticated']);
  t.same(await add({ name: 'system:anonymous', groups: [] }), []);
});

t.test('anonymous', async (t) => {
  t.same(await new AnonymousAuthenticator().authenticate(req()), { user: { name: 'system:anonymous', groups: ['system:unauthenticated'] } });
});

t.test('createAuthenticator: the kubelet composition', async (t) => {
  const clock = new FakeClock();
  const reviewer = new FakeTokenReviewer();
  reviewer.users.set('good', { name: 'system:serviceaccount:kube-system:metrics', groups: ['system:serviceaccounts'] });
  const auth = createAuthenticator({ webhookEnabled: true, anonymousEnabled: true, tokenReviewer: reviewer, clock });

  t.same((await auth.authenticate(req({ authorization: 'Bearer good' }))).user, {
    name: 'system:serviceaccount:kube-system:metrics',
    groups: ['system:serviceaccounts', 'system:authenticated'],
  });
  t.same((await auth.authenticate(req())).user, { name: 'system:anonymous', groups: ['system:unauthenticated'] }, 'no credentials: anonymous');
  const bad = await auth.authenticate(req({ authorization: 'Bearer wrong' }));
  t.equal(bad.user, undefined, 'a bad token is not anonymous even with anonymous on (401 in Go)');
  t.equal(bad.error?.message, 'invalid bearer token');

  const noAnon = createAuthenticator({ webhookEnabled: true, anonymousEnabled: false, tokenReviewer: reviewer, clock });
  t.same(await noAnon.authenticate(req()), { user: undefined });

  const ttl = createAuthenticator({ webhookEnabled: true, webhookCacheTTLMs: 1000, anonymousEnabled: false, tokenReviewer: reviewer, clock });
  await ttl.authenticate(req({ authorization: 'Bearer good' }));
  clock.step(1000);
  await ttl.authenticate(req({ authorization: 'Bearer good' }));
  t.equal(reviewer.calls.filter((c) => c.token === 'good').length, 3, 'webhookCacheTTLMs is the TTL');

  const ws = await auth.authenticate(
    req({ connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-protocol': `v4.channel.k8s.io,base64url.bearer.authorization.k8s.io.${Buffer.from('good').toString('base64url')}` }),
  );
  t.equal(ws.user?.name, 'system:serviceaccount:kube-system:metrics', 'WebSocket protocol tokens too');
});

t.test('createAuthenticator errors are Go BuildAuthn errors', async (t) => {
  t.throws(() => createAuthenticator({ webhookEnabled: true, anonymousEnabled: true }), { message: 'no client provided, cannot use webhook authentication' });
  t.throws(() => createAuthenticator({ webhookEnabled: false, anonymousEnabled: false }), { message: 'No authentication method configured' });
  t.ok(createAuthenticator({ webhookEnabled: false, anonymousEnabled: true }) instanceof AnonymousAuthenticator, 'anonymous only');
  t.throws(() => createAuthenticator({ webhookEnabled: false, anonymousEnabled: false, x509ClientCAFile: '/nonexistent/ca.crt' }), /unable to load client CA file \/nonexistent\/ca.crt/);
});

t.test('client CA loading', async (t) => {
  const pki = makeAuthPki();
  t.teardown(() => pki.cleanup());
  t.same(loadClientCA(pki.caFile), pki.ca);
  const empty = join(pki.dir, 'empty.crt');
  writeFileSync(empty, 'not a certificate\n');
  t.throws(() => loadClientCA(empty), /data does not contain any valid RSA or ECDSA certificates/);
  const broken = join(pki.dir, 'broken.crt');
  writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  t.throws(() => loadClientCA(broken), /unable to load client CA file/);
  const auth = createAuthenticator({ x509ClientCAFile: pki.caFile, webhookEnabled: false, anonymousEnabled: false });
  t.same(await auth.authenticate(req()), { user: undefined }, 'no TLS socket: nothing to check');
});
