import t from 'tap';
import { FakeClock } from '@kubelet-ts/core/testing';
import {
  AlwaysAllowAuthorizer,
  createAuthorizer,
  requestAttributes,
  SubjectAccessReviewAuthorizer,
  subjectAccessReviewSpec,
  type RequestAttributes,
  type UserInfo,
} from '../src/auth/index.js';
import { apiError, FakeSubjectAccessReviewer } from './fixtures/auth-fakes.js';

const alice: UserInfo = { name: 'alice', uid: 'u-a', groups: ['devs', 'system:authenticated'], extra: { b: ['2'], a: ['1'] } };
const attrs = (user: UserInfo, url = '/stats/summary', method = 'GET'): RequestAttributes => requestAttributes(user, { method, url }, 'node-1');

function setup() {
  const clock = new FakeClock();
  const reviewer = new FakeSubjectAccessReviewer();
  const authz = new SubjectAccessReviewAuthorizer({ reviewer, clock });
  return { clock, reviewer, authz };
}

t.test('AlwaysAllow allows', async (t) => {
  t.same(await new AlwaysAllowAuthorizer().authorize(attrs(alice)), { decision: 'allow' });
});

t.test('the review spec (Go webhook authorizer)', async (t) => {
  t.same(subjectAccessReviewSpec(attrs(alice, '/logs/x', 'DELETE')), {
    user: 'alice',
    uid: 'u-a',
    groups: ['devs', 'system:authenticated'],
    extra: { b: ['2'], a: ['1'] },
    resourceAttributes: { namespace: '', verb: 'delete', group: '', version: 'v1', resource: 'nodes', subresource: 'log', name: 'node-1' },
  });
  t.same(subjectAccessReviewSpec({ ...attrs({ name: 'x', groups: [] }, '/healthz'), resourceRequest: false }), {
    user: 'x',
    groups: [],
    nonResourceAttributes: { path: '/healthz', verb: 'get' },
  });
});

t.test('decisions from the status', async (t) => {
  const { reviewer, authz } = setup();
  reviewer.decide = (spec) => {
    switch (spec.user) {
      case 'allowed':
        return { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding' };
      case 'denied':
        return { allowed: false, denied: true, reason: 'no way' };
      case 'both':
        return { allowed: true, denied: true };
      default:
        return { allowed: false, reason: 'no RBAC policy matched' };
    }
  };
  t.same(await authz.authorize(attrs({ name: 'allowed', groups: [] })), { decision: 'allow', reason: 'RBAC: allowed by ClusterRoleBinding' });
  t.same(await authz.authorize(attrs({ name: 'denied', groups: [] })), { decision: 'deny', reason: 'no way' });
  t.same(await authz.authorize(attrs({ name: 'other', groups: [] })), { decision: 'no-opinion', reason: 'no RBAC policy matched' });
  await t.rejects(authz.authorize(attrs({ name: 'both', groups: [] })), /returned both allow and deny response/);
});

t.test('allowed answers are cached 5 min, others 30 s', async (t) => {
  const { clock, reviewer, authz } = setup();
  reviewer.decide = (spec) => ({ allowed: spec.user === 'alice' });
  const bob = { name: 'bob', groups: [] };

  await authz.authorize(attrs(alice));
  await authz.authorize(attrs(bob));
  t.equal(reviewer.calls.length, 2);

  clock.step(30_000 - 1);
  await authz.authorize(attrs(alice));
  await authz.authorize(attrs(bob));
  t.equal(reviewer.calls.length, 2, 'both cached just before 30 s');

  clock.step(1);
  t.same(await authz.authorize(attrs(bob)), { decision: 'no-opinion', reason: '' });
  await authz.authorize(attrs(alice));
  t.equal(reviewer.calls.length, 3, 'the denial expired at 30 s, the allow did not');

  clock.step(5 * 60_000 - 30_000 - 1);
  await authz.authorize(attrs(alice));
  t.equal(reviewer.calls.length, 3, 'allow still cached just before 5 min');
  clock.step(1);
  t.same(await authz.authorize(attrs(alice)), { decision: 'allow', reason: '' });
  t.equal(reviewer.calls.length, 4, 'allow expired at 5 min');
});

t.test('the cache key is the whole review: user, groups, uid, extra and attributes', async (t) => {
  const { reviewer, authz } = setup();
  await authz.authorize(attrs(alice));
  await authz.authorize(attrs({ ...alice, extra: { a: ['1'], b: ['2'] } }));
  t.equal(reviewer.calls.length, 1, 'extra key order does not matter');
  await authz.authorize(attrs({ ...alice, groups: ['devs'] }));
  await authz.authorize(attrs({ ...alice, uid: 'u-other' }));
  await authz.authorize(attrs({ ...alice, extra: { a: ['1'] } }));
  await authz.authorize(attrs(alice, '/metrics'));
  await authz.authorize(attrs(alice, '/stats/summary', 'POST'));
  t.equal(reviewer.calls.length, 6);
  await authz.authorize(attrs(alice, '/stats/container'));
  t.equal(reviewer.calls.length, 6, 'the path is not part of a resource review');
});

t.test('custom TTLs; 0 disables', async (t) => {
  const clock = new FakeClock();
  const reviewer = new FakeSubjectAccessReviewer();
  const authz = createAuthorizer({ mode: 'Webhook', subjectAccessReviewer: reviewer, clock, cacheAuthorizedTTLMs: 1000, cacheUnauthorizedTTLMs: 0 });
  reviewer.decide = (spec) => ({ allowed: spec.user === 'alice' });
  await authz.authorize(attrs(alice));
  clock.step(999);
  await authz.authorize(attrs(alice));
  t.equal(reviewer.calls.length, 1);
  clock.step(1);
  await authz.authorize(attrs(alice));
  t.equal(reviewer.calls.length, 2);
  await authz.authorize(attrs({ name: 'bob', groups: [] }));
  await authz.authorize(attrs({ name: 'bob', groups: [] }));
  t.equal(reviewer.calls.length, 4, 'denials not cached with TTL 0');
});

t.test('errors are not cached', async (t) => {
  const { reviewer, authz } = setup();
  reviewer.failures.push(apiError(403, 'Forbidden'));
  await t.rejects(authz.authorize(attrs(alice)), /HTTP-Code: 403/);
  t.same(await authz.authorize(attrs(alice)), { decision: 'allow', reason: '' });
  t.equal(reviewer.calls.length, 2);
});

t.test('transient errors are retried', async (t) => {
  const { clock, reviewer, authz } = setup();
  reviewer.failures.push(apiError(500, 'InternalError'));
  const pending = authz.authorize(attrs(alice));
  await clock.advance(1000);
  t.same(await pending, { decision: 'allow', reason: '' });
  t.equal(reviewer.calls.length, 2);
});

t.test('requests with huge attributes are not cached (Go shouldCache)', async (t) => {
  const { reviewer, authz } = setup();
  const long = '/stats/' + 'x'.repeat(10_000);
  await authz.authorize(attrs(alice, long));
  await authz.authorize(attrs(alice, long));
  t.equal(reviewer.calls.length, 2);
  t.equal(authz.cacheSize(), 0);
});

t.test('createAuthorizer errors are Go BuildAuthz errors', async (t) => {
  t.ok(createAuthorizer({ mode: 'AlwaysAllow' }) instanceof AlwaysAllowAuthorizer);
  t.throws(() => createAuthorizer({ mode: 'Webhook' }), { message: 'no client provided, cannot use webhook authorization' });
  t.throws(() => createAuthorizer({ mode: '' }), { message: 'no authorization mode specified' });
  t.throws(() => createAuthorizer({ mode: 'RBAC' }), { message: 'unknown authorization mode RBAC' });
});
