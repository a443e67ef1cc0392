// The service account token manager on a FakeClock: cached while fresh, refreshed at 80% of its life
// and at 24 h, a failed refresh falls back to a valid token, tokens forgotten by pod and on expiry.
import t from 'tap';
import type { AuthenticationV1TokenRequest } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { createTokenRequester, standaloneTokenRequester, tokenCacheKey, TokenManager } from '../src/token-manager.js';
import { KubeConfig } from '@kubernetes/client-node';

const HOUR = 60 * 60 * 1000;

function request(opts: { audiences?: string[]; seconds?: number; podUid?: string; podName?: string } = {}): AuthenticationV1TokenRequest {
  return {
    spec: {
      audiences: opts.audiences ?? ['api'],
      expirationSeconds: opts.seconds ?? 3600,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: opts.podName ?? 'web', uid: opts.podUid ?? 'uid-1' },
    },
  };
}

/** An API server that mints numbered tokens valid for the requested seconds from now. */
function setup(opts: { random?: number } = {}) {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const logger = new RecordingLogger();
  const calls: { namespace: string; name: string; request: AuthenticationV1TokenRequest }[] = [];
  let failWith: Error | undefined;
  let minted = 0;
  const manager = new TokenManager({
    clock,
    logger,
    random: () => opts.random ?? 0,
    requestToken: async (namespace, name, req) => {
      calls.push({ namespace, name, request: req });
      if (failWith) throw failWith;
      minted++;
      return {
        spec: req.spec,
        status: { token: `token-${minted}`, expirationTimestamp: new Date(clock.now() + (req.spec.expirationSeconds ?? 3600) * 1000) },
      };
    },
  });
  return {
    clock,
    logger,
    calls,
    manager,
    fail: (err: Error | undefined) => (failWith = err),
    get: async (req = request(), name = 'default') => (await manager.getServiceAccountToken('ns', name, req)).status?.token,
  };
}

t.test('tokenCacheKey is Go\'s keyFunc', async (t) => {
  t.equal(
    tokenCacheKey('default', 'ns', request({ audiences: ['a', 'b'], seconds: 600 })),
    '"default"/"ns"/[]string{"a", "b"}/600/v1.BoundObjectReference{Kind:"Pod", APIVersion:"v1", Name:"web", UID:"uid-1"}',
  );
  t.equal(
    tokenCacheKey('sa', 'ns', { spec: { audiences: undefined as unknown as string[] } }),
    '"sa"/"ns"/[]string(nil)/0/v1.BoundObjectReference{Kind:"", APIVersion:"", Name:"", UID:""}',
  );
  t.not(tokenCacheKey('sa', 'ns', request({ podUid: 'x' })), tokenCacheKey('sa', 'ns', request({ podUid: 'y' })));
  t.not(tokenCacheKey('sa', 'ns', request({ seconds: 600 })), tokenCacheKey('sa', 'ns', request({ seconds: 601 })));
});

t.test('cached while fresh; refreshed once within 20% of its lifetime of expiring', async (t) => {
  const { clock, calls, get } = setup();
  t.equal(await get(), 'token-1');
  t.same(calls.map((c) => [c.namespace, c.name]), [['ns', 'default']]);
  clock.step(0.79 * HOUR);
  t.equal(await get(), 'token-1', 'at 79% of an hour: cached');
  t.equal(calls.length, 1);
  clock.step(0.01 * HOUR + 1);
  t.equal(await get(), 'token-2', 'past 80%: refreshed');
  t.equal(await get(), 'token-2');
  t.equal(calls.length, 2);
  // Other audiences, lifetimes or pods are other tokens.
  t.equal(await get(request({ audiences: ['vault'] })), 'token-3');
  t.equal(await get(request({ podUid: 'uid-2' })), 'token-4');
  t.equal(await get(request(), 'other-sa'), 'token-5');
  t.equal(await get(), 'token-2');
});

t.test('the jitter brings the refresh forward by up to 10 whole seconds', async (t) => {
  const { clock, get } = setup({ random: 0.95 });
  t.equal(await get(), 'token-1');
  clock.step(0.8 * HOUR - 9_000);
  t.equal(await get(), 'token-1', '9 s before 80%: jitter 9 s, not yet past it');
  clock.step(1);
  t.equal(await get(), 'token-2');
});

t.test('a long-lived token is refreshed after 24 h', async (t) => {
  const { clock, get } = setup();
  const week = request({ seconds: 7 * 24 * 3600 });
  t.equal(await get(week), 'token-1');
  clock.step(24 * HOUR);
  t.equal(await get(week), 'token-1', 'exactly 24 h: not yet');
  clock.step(1);
  t.equal(await get(week), 'token-2');
});

t.test('a token issued in the future (the clock went back) is refreshed', async (t) => {
  const { clock, get } = setup();
  t.equal(await get(), 'token-1');
  clock.setTime(clock.now() - 1000);
  t.equal(await get(), 'token-2');
});

t.test('a failed refresh returns the still valid token and logs; an expired one or none rejects', async (t) => {
  const { clock, logger, calls, get, fail } = setup();
  t.equal(await get(), 'token-1');
  clock.step(0.9 * HOUR);
  fail(Object.assign(new Error('connection refused'), {}));
  t.equal(await get(), 'token-1');
  t.equal(calls.length, 2, 'the refresh was tried');
  const logged = logger.find("Couldn't update token");
  t.equal(logged?.level, 'error');
  t.match(logged?.kv, { cacheKey: tokenCacheKey('default', 'ns', request()) });
  t.equal(await get(), 'token-1', 'tried again on the next call');
  t.equal(calls.length, 3);

  clock.step(0.1 * HOUR + 1);
  await t.rejects(get(), { message: `token ${tokenCacheKey('default', 'ns', request())} expired and refresh failed: connection refused` });

  // An API error reads as its Status message, as Go prints a StatusError.
  const forbidden = Object.assign(new Error('HTTP-Code: 403 Message: Unknown API Status Code! Body: ... Headers: ...'), {
    code: 403,
    body: JSON.stringify({ kind: 'Status', message: 'serviceaccounts "nope" is forbidden: no relationship found', reason: 'Forbidden', code: 403 }),
  });
  fail(forbidden);
  const err = await get(request(), 'nope').catch((e: unknown) => e as Error);
  t.equal((err as Error).message, 'failed to fetch token: serviceaccounts "nope" is forbidden: no relationship found');
  t.equal((err as Error).cause, forbidden);

  fail(undefined);
  t.equal(await get(), 'token-2', 'recovers');
});

t.test('concurrent requests for one token share one TokenRequest', async (t) => {
  const { calls, manager } = setup();
  const [a, b] = await Promise.all([manager.getServiceAccountToken('ns', 'default', request()), manager.getServiceAccountToken('ns', 'default', request())]);
  t.equal(a.status?.token, 'token-1');
  t.equal(b, a);
  t.equal(calls.length, 1);
});

t.test('deleteServiceAccountToken forgets a pod\'s tokens only', async (t) => {
  const { calls, manager, get } = setup();
  await get(request({ podUid: 'a' }));
  await get(request({ podUid: 'a', audiences: ['vault'] }));
  await get(request({ podUid: 'b' }));
  t.equal(manager.size(), 3);
  manager.deleteServiceAccountToken('a');
  t.equal(manager.size(), 1);
  t.equal(await get(request({ podUid: 'b' })), 'token-3', 'the other pod\'s token is still cached');
  t.equal(await get(request({ podUid: 'a' })), 'token-4', 'a new pod with that uid gets a new token');
  t.equal(calls.length, 4);
});

t.test('the cleanup loop drops expired tokens every minute; stop ends it', async (t) => {
  const { clock, manager, get } = setup();
  await get(request({ seconds: 600 }));
  await get(request({ seconds: 3600 }));
  const controller = new AbortController();
  manager.start(controller.signal);
  manager.start(); // idempotent
  t.equal(clock.pendingTimers(), 1);
  await clock.advance(10 * 60_000);
  t.equal(manager.size(), 2, 'expiring at exactly this instant is not expired yet');
  await clock.advance(60_000);
  t.equal(manager.size(), 1, 'the 10-minute token was dropped by the next pass');
  controller.abort();
  t.equal(clock.pendingTimers(), 0, 'aborting the signal stops the loop');
  await clock.advance(2 * HOUR);
  t.equal(manager.size(), 1, 'nothing cleaned after stop');

  manager.start();
  await clock.advance(60_000);
  t.equal(manager.size(), 0);
  manager.stop();
  manager.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('a response without expirationSeconds falls back to the requested one; with neither it is never refreshed', async (t) => {
  const clock = new FakeClock(0);
  const logger = new RecordingLogger();
  let n = 0;
  const manager = new TokenManager({
    clock,
    logger,
    random: () => 0,
    requestToken: async (_ns, _name, req) => ({
      spec: { audiences: req.spec.audiences },
      status: { token: `t${++n}`, expirationTimestamp: new Date(clock.now() + 3600_000) },
    }),
  });
  await manager.getServiceAccountToken('ns', 'sa', request());
  clock.step(0.81 * HOUR);
  t.equal((await manager.getServiceAccountToken('ns', 'sa', request())).status?.token, 't2');

  const noLifetime: AuthenticationV1TokenRequest = { spec: { audiences: ['x'] } };
  await manager.getServiceAccountToken('ns', 'sa', noLifetime);
  clock.step(0.99 * HOUR);
  t.equal((await manager.getServiceAccountToken('ns', 'sa', noLifetime)).status?.token, 't3');
  const logged = logger.find('Expiration seconds was nil for token request');
  t.ok(logged);
  t.notOk(JSON.stringify(logged?.kv).includes('t3'), 'the token itself is not logged');
});

t.test('createTokenRequester and the standalone requester', async (t) => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  t.type(createTokenRequester(kc), 'function');
  await t.rejects(standaloneTokenRequester('ns', 'sa', request()), { message: 'cannot use TokenManager when kubelet is in standalone mode' });
  const manager = new TokenManager({ requestToken: standaloneTokenRequester, clock: new FakeClock(0) });
  await t.rejects(manager.getServiceAccountToken('ns', 'sa', request()), { message: 'failed to fetch token: cannot use TokenManager when kubelet is in standalone mode' });
});
