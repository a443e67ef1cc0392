import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { FakeClock } from '@kubelet-ts/core/testing';
import {
  bearerToken,
  defaultShouldRetry,
  isWebSocketRequest,
  TokenReviewAuthenticator,
  WebSocketProtocolAuthenticator,
  withExponentialBackoff,
  INVALID_BEARER_TOKEN,
} from '../src/auth/index.js';
import { apiError, FakeTokenReviewer } from './fixtures/auth-fakes.js';

function req(headers: Record<string, string> = {}): IncomingMessage {
  return { headers: { ...headers }, method: 'GET', url: '/pods' } as unknown as IncomingMessage;
}

const bob = { name: 'bob', uid: 'u-1', groups: ['system:authenticated', 'devs'], extra: { scopes: ['a'] } };

function setup(cacheTTLMs?: number) {
  const clock = new FakeClock();
  const reviewer = new FakeTokenReviewer();
  reviewer.users.set('good', bob);
  const auth = new TokenReviewAuthenticator({ reviewer, clock, ...(cacheTTLMs !== undefined ? { cacheTTLMs } : {}) });
  return { clock, reviewer, auth };
}

t.test('bearer header parsing is Go bearertoken', async (t) => {
  t.equal(bearerToken('Bearer abc'), 'abc');
  t.equal(bearerToken('bearer abc'), 'abc');
  t.equal(bearerToken('BEARER abc'), 'abc');
  t.equal(bearerToken('  Bearer abc  '), 'abc', 'trimmed');
  t.equal(bearerToken('Bearer abc def'), 'abc', 'third part ignored');
  t.equal(bearerToken('Bearer  abc'), undefined, 'two spaces: empty token');
  t.equal(bearerToken('Bearer'), undefined);
  t.equal(bearerToken('Basic abc'), undefined);
  t.equal(bearerToken(''), undefined);
  t.equal(bearerToken(undefined), undefined);
});

t.test('valid token: user, header removed, cached for the TTL (default 2 min)', async (t) => {
  const { clock, reviewer, auth } = setup();
  const r = req({ authorization: 'Bearer good' });
  const res = await auth.authenticate(r);
  t.same(res.user, bob);
  t.equal(r.headers.authorization, undefined, 'Go deletes the Authorization header of a request it authenticated');
  t.equal(reviewer.calls.length, 1);

  await auth.authenticate(req({ authorization: 'Bearer good' }));
  clock.step(2 * 60_000 - 1);
  t.same((await auth.authenticate(req({ authorization: 'Bearer good' }))).user, bob);
  t.equal(reviewer.calls.length, 1, 'hits within the TTL');

  clock.step(1);
  await auth.authenticate(req({ authorization: 'Bearer good' }));
  t.equal(reviewer.calls.length, 2, 'expired at the TTL: reviewed again');
});

t.test('no or empty token: no user, no review', async (t) => {
  const { reviewer, auth } = setup();
  t.same(await auth.authenticate(req()), { user: undefined });
  t.same(await auth.authenticate(req({ authorization: 'Basic Zm9vOmJhcg==' })), { user: undefined });
  t.same(await auth.authenticate(req({ authorization: 'Bearer ' })), { user: undefined });
  t.equal(reviewer.calls.length, 0);
});

t.test('invalid token: an error ("invalid bearer token"), cached like a success', async (t) => {
  const { clock, reviewer, auth } = setup(10_000);
  const r = req({ authorization: 'Bearer nope' });
  const res = await auth.authenticate(r);
  t.equal(res.user, undefined);
  t.equal(res.error?.message, INVALID_BEARER_TOKEN);
  t.equal(r.headers.authorization, 'Bearer nope', 'kept when not authenticated');
  await auth.authenticate(req({ authorization: 'Bearer nope' }));
  t.equal(reviewer.calls.length, 1, 'the negative answer is cached');
  clock.step(10_000);
  await auth.authenticate(req({ authorization: 'Bearer nope' }));
  t.equal(reviewer.calls.length, 2);
});

t.test('a failed call is an error and is not cached', async (t) => {
  const { reviewer, auth } = setup();
  reviewer.failures.push(new Error('connection refused'));
  const res = await auth.authenticate(req({ authorization: 'Bearer good' }));
  t.equal(res.user, undefined);
  t.equal(res.error?.message, 'connection refused');
  t.same((await auth.authenticate(req({ authorization: 'Bearer good' }))).user, bob, 'asked again, and this time it works');
  t.equal(reviewer.calls.length, 2);
});

t.test('status.error is the error and is not cached', async (t) => {
  const { reviewer, auth } = setup();
  reviewer.statusErrors.set('weird', 'token lookup failed');
  const res = await auth.authenticate(req({ authorization: 'Bearer weird' }));
  t.equal(res.error?.message, 'token lookup failed');
  await auth.authenticate(req({ authorization: 'Bearer weird' }));
  t.equal(reviewer.calls.length, 2);
});

t.test('cacheTTL 0 disables the cache', async (t) => {
  const { reviewer, auth } = setup(0);
  await auth.authenticate(req({ authorization: 'Bearer good' }));
  await auth.authenticate(req({ authorization: 'Bearer good' }));
  t.equal(reviewer.calls.length, 2);
  t.equal(auth.cacheSize(), 0);
});

t.test('cache keys are hashes, never the token', async (t) => {
  const { auth } = setup();
  await auth.authenticate(req({ authorization: 'Bearer good' }));
  const keys = [...((auth as unknown as { cache: { entries: Map<string, unknown> } }).cache.entries.keys())];
  t.equal(keys.length, 1);
  t.notOk(keys[0]?.includes('good'));
  t.equal(Buffer.from(keys[0] as string, 'base64').length, 32, 'an HMAC-SHA256');
});

t.test('concurrent requests with one token share one review', async (t) => {
  const { reviewer, auth } = setup();
  let release!: () => void;
  reviewer.gate = new Promise((resolve) => (release = resolve));
  const pending = [1, 2, 3].map(() => auth.authenticate(req({ authorization: 'Bearer good' })));
  await new Promise((resolve) => setImmediate(resolve));
  release();
  const results = await Promise.all(pending);
  t.equal(reviewer.calls.length, 1);
  for (const r of results) t.same(r.user, bob);
});

t.test('returned users are copies of the cached one', async (t) => {
  const { auth } = setup();
  const first = await auth.authenticate(req({ authorization: 'Bearer good' }));
  first.user?.groups.push('mutated');
  const second = await auth.authenticate(req({ authorization: 'Bearer good' }));
  t.same(second.user?.groups, bob.groups);
});

t.test('audiences are sent, part of the key, and checked against status.audiences', async (t) => {
  const clock = new FakeClock();
  const reviewer = new FakeTokenReviewer();
  reviewer.review = async (token, audiences) => {
    reviewer.calls.push({ token, audiences });
    return token === 'other-aud' ? { authenticated: true, user: bob, audiences: ['elsewhere'] } : { authenticated: true, user: bob, audiences: ['kubelet'] };
  };
  const auth = new TokenReviewAuthenticator({ reviewer, clock, audiences: ['kubelet'] });
  t.same((await auth.authenticate(req({ authorization: 'Bearer ok' }))).user, bob);
  t.same(reviewer.calls[0]?.audiences, ['kubelet']);
  t.equal((await auth.authenticate(req({ authorization: 'Bearer other-aud' }))).error?.message, INVALID_BEARER_TOKEN);
});

t.test('retries transient failures with Go backoff (500 ms x1.5, 5 attempts)', async (t) => {
  const { clock, reviewer, auth } = setup();
  reviewer.failures.push(apiError(500, 'InternalError'), apiError(429, 'TooManyRequests'));
  const pending = auth.authenticate(req({ authorization: 'Bearer good' }));
  await clock.advance(500 * 1.2 + 750 * 1.2);
  t.same((await pending).user, bob);
  t.equal(reviewer.calls.length, 3);

  // Not retried: a 403 (the kubelet may not create TokenReviews) fails at once.
  reviewer.failures.push(apiError(403, 'Forbidden'));
  const res = await auth.authenticate(req({ authorization: 'Bearer fresh' }));
  t.match(res.error?.message, /HTTP-Code: 403/);
  t.equal(reviewer.calls.length, 4);
});

t.test('gives up after 5 attempts with the last error', async (t) => {
  const { clock, reviewer, auth } = setup();
  for (let i = 0; i < 6; i++) reviewer.failures.push(apiError(503 + (i === 4 ? 1 : 0), i === 4 ? 'Timeout' : 'InternalError'));
  const pending = auth.authenticate(req({ authorization: 'Bearer good' }));
  await clock.advance(10_000);
  const res = await pending;
  t.equal(reviewer.calls.length, 5);
  t.equal(JSON.parse((res.error as unknown as { body: string }).body).reason, 'Timeout', 'the fifth error');
});

t.test('a review that hangs times out after 30 s, not cached', async (t) => {
  const clock = new FakeClock();
  let calls = 0;
  const auth = new TokenReviewAuthenticator({
    clock,
    reviewer: {
      review: (_token, _auds, signal) => {
        calls++;
        return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted'))));
      },
    },
  });
  const pending = auth.authenticate(req({ authorization: 'Bearer slow' }));
  await clock.advance(30_000);
  t.match((await pending).error?.message, /timed out|aborted/);
  t.equal(calls, 1);
  t.equal(clock.pendingTimers(), 0, 'no timer left behind');
});

t.test('defaultShouldRetry is Go DefaultShouldRetry', async (t) => {
  t.ok(defaultShouldRetry(Object.assign(new Error('reset'), { code: 'ECONNRESET' })));
  t.ok(defaultShouldRetry(apiError(500, 'InternalError')));
  t.ok(defaultShouldRetry(apiError(500, 'SomethingNew')));
  t.notOk(defaultShouldRetry(apiError(500, 'Conflict')), 'a known reason on a 500 is what it says');
  t.ok(defaultShouldRetry(apiError(504, 'Timeout')));
  t.ok(defaultShouldRetry(apiError(429, 'TooManyRequests')));
  t.ok(defaultShouldRetry(apiError(409, 'Conflict', { retryAfterSeconds: 1 })), 'Retry-After');
  t.ok(defaultShouldRetry(apiError(504, 'ServerTimeout', {})));
  t.notOk(defaultShouldRetry(apiError(403, 'Forbidden')));
  t.notOk(defaultShouldRetry(apiError(401, 'Unauthorized')));
  t.notOk(defaultShouldRetry(new Error('connect ECONNREFUSED')));
});

t.test('withExponentialBackoff sleeps 500, 750, 1125, 1687.5 ms without jitter', async (t) => {
  const clock = new FakeClock();
  const start = clock.now();
  const at: number[] = [];
  const pending = withExponentialBackoff(
    clock,
    { durationMs: 500, factor: 1.5, jitter: 0, steps: 5 },
    async () => {
      at.push(clock.now() - start);
      throw apiError(500, 'InternalError');
    },
  ).catch((err: Error) => err);
  await clock.advance(10_000);
  await pending;
  t.same(at, [0, 500, 1250, 2375, 4062.5]);
});

t.test('WebSocket subprotocol tokens (Go websocket.ProtocolAuthenticator)', async (t) => {
  const { reviewer, auth } = setup();
  const ws = new WebSocketProtocolAuthenticator(auth);
  const enc = (s: string) => Buffer.from(s).toString('base64url');
  const upgrade = { connection: 'keep-alive, Upgrade', upgrade: 'websocket' };

  t.ok(isWebSocketRequest(req(upgrade)));
  t.notOk(isWebSocketRequest(req({ connection: 'Upgrade', upgrade: 'SPDY/3.1' })));
  t.notOk(isWebSocketRequest(req({ upgrade: 'websocket' })));

  const r = req({ ...upgrade, 'sec-websocket-protocol': `v4.channel.k8s.io, base64url.bearer.authorization.k8s.io.${enc('good')}` });
  t.same((await ws.authenticate(r)).user, bob);
  t.equal(r.headers['sec-websocket-protocol'], 'v4.channel.k8s.io', 'the token protocol is removed');

  t.same(await ws.authenticate(req({ 'sec-websocket-protocol': `x, base64url.bearer.authorization.k8s.io.${enc('good')}` })), { user: undefined }, 'not a WebSocket request');
  t.same(await ws.authenticate(req({ ...upgrade, 'sec-websocket-protocol': 'v4.channel.k8s.io' })), { user: undefined }, 'no token');
  t.equal(
    (await ws.authenticate(req({ ...upgrade, 'sec-websocket-protocol': `base64url.bearer.authorization.k8s.io.${enc('good')}` }))).error?.message,
    'missing additional subprotocol',
  );
  t.equal(
    (await ws.authenticate(req({ ...upgrade, 'sec-websocket-protocol': `a, base64url.bearer.authorization.k8s.io.${enc('a')}, base64url.bearer.authorization.k8s.io.${enc('b')}` }))).error
      ?.message,
    'multiple base64.bearer.authorization tokens specified',
  );
  t.equal(
    (await ws.authenticate(req({ ...upgrade, 'sec-websocket-protocol': 'a, base64url.bearer.authorization.k8s.io.a+b/' }))).error?.message,
    'invalid base64.bearer.authorization token encoding',
  );
  t.equal((await ws.authenticate(req({ ...upgrade, 'sec-websocket-protocol': `a, base64url.bearer.authorization.k8s.io.${enc('bad')}` }))).error?.message, INVALID_BEARER_TOKEN);
  t.equal(reviewer.calls.length, 2, 'good was reviewed once (cache shared), bad once');
});
