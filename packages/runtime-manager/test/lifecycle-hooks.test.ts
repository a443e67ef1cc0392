import t from 'tap';
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import { isAbortError, podSyncError, resolveContainerPort } from '@kubelet-ts/core';
import {
  httpGetActionUrl,
  lifecycleRequestHeaders,
  lifecycleUserAgent,
  DEFAULT_LIFECYCLE_USER_AGENT,
} from '../src/index.js';
import { closedPort, startHookServer } from './hook-server.js';
import { makePod, setup } from './helpers.js';

type Setup = ReturnType<typeof setup>;

const stopCalls = (runtime: { calls: { method: string; args: unknown[] }[] }) =>
  runtime.calls.filter((c) => c.method === 'stopContainer').map((c) => c.args as [string, number]);

function podWithHook(hook: 'postStart' | 'preStop', handler: V1LifecycleHandler, container: Partial<V1Container> = {}, extra: { hostNetwork?: boolean } = {}): V1Pod {
  return makePod({ containers: [{ name: 'app', ...container, lifecycle: { [hook]: handler } }], hostNetwork: extra.hostNetwork });
}

async function sync(s: Setup, pod: V1Pod) {
  return s.manager.syncPod(pod, await s.manager.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!), [], s.backoff);
}

async function runningPod(s: Setup, pod: V1Pod) {
  const result = await sync(s, pod);
  if (podSyncError(result)) throw podSyncError(result);
  return (await s.manager.getPods(false)).find((p) => p.id === pod.metadata!.uid)!;
}

t.test('an httpGet postStart hook GETs the pod IP and the named port with the handler headers; the container runs', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  const s = setup({ kubeletVersion: 'v1.31.4' });
  s.runtime.podSandboxIp = '127.0.0.1';
  const pod = podWithHook(
    'postStart',
    { httpGet: { path: '/started?x=1', port: 'hook' as unknown as number, httpHeaders: [{ name: 'x-token', value: 'a' }, { name: 'X-Token', value: 'b' }] } },
    { ports: [{ name: 'hook', containerPort: server.port }] },
  );
  const result = await sync(s, pod);
  t.equal(podSyncError(result), undefined, 'the hook succeeded');
  t.equal(server.requests.length, 1);
  const [req] = server.requests;
  t.equal(req.method, 'GET');
  t.equal(req.url, '/started?x=1');
  t.equal(req.headers.host, `127.0.0.1:${server.port}`);
  t.equal(req.headers['user-agent'], 'kube-lifecycle/1.31');
  t.equal(req.headers.accept, '*/*');
  t.same(
    req.rawHeaders.flatMap((v, i, all) => (i % 2 === 0 && v === 'X-Token' ? [all[i + 1]] : [])),
    ['a', 'b'],
    'repeated headers are sent in order, under the canonical name',
  );
  t.notOk(s.recorder.find('FailedPostStartHook'));
  t.same(stopCalls(s.runtime), [], 'the container is not killed');
  t.equal((await s.manager.getPodStatus('uid-1', 'web', 'default')).containerStatuses[0].state, 'running');
});

t.test('an httpGet hook answered with 500 still succeeds: Go fails hooks on transport errors only', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  server.handle((_req, res) => {
    res.statusCode = 500;
    res.end('broken');
  });
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/x', port: server.port } });
  t.equal(podSyncError(await sync(s, pod)), undefined);
  t.equal(server.requests.length, 1);
  t.notOk(s.recorder.find('FailedPostStartHook'));
});

t.test('an httpGet postStart hook that cannot connect fails the start with Go message, event and kill', async (t) => {
  const port = await closedPort();
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/start', port } });
  const result = await sync(s, pod);
  const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'PostStartHookError');
  t.equal(
    start.message,
    `HTTP lifecycle hook (/start) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://127.0.0.1:${port}/start": dial tcp 127.0.0.1:${port}: connect: connection refused`,
  );
  t.same(s.recorder.find('FailedPostStartHook')?.message, 'PostStartHook failed', 'the event does not carry the message');
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 30]], 'the container is killed');
  t.ok(s.recorder.events.some((e) => e.reason === 'Killing' && e.message === 'FailedPostStartHook'));
});

t.test('HTTPS hooks do not verify the certificate', async (t) => {
  const server = await startHookServer({ tls: true });
  t.teardown(() => server.close());
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/tls', port: server.port, scheme: 'HTTPS' } });
  t.equal(podSyncError(await sync(s, pod)), undefined);
  t.same(server.requests.map((r) => r.url), ['/tls']);
});

t.test('an HTTPS hook answered in plain HTTP is retried over HTTP without Authorization, with a LifecycleHTTPFallback event', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  const s = setup();
  const pod = podWithHook('postStart', {
    httpGet: { host: '127.0.0.1', path: '/fallback', port: server.port, scheme: 'HTTPS', httpHeaders: [{ name: 'Authorization', value: 'Bearer x' }, { name: 'X-Keep', value: '1' }] },
  });
  t.equal(podSyncError(await sync(s, pod)), undefined);
  t.equal(server.requests.length, 1, 'the plain HTTP retry reached the server');
  t.equal(server.requests[0].url, '/fallback');
  t.equal(server.requests[0].headers.authorization, undefined, 'Authorization is dropped for the HTTP retry');
  t.equal(server.requests[0].headers['x-keep'], '1');
  const fallback = s.recorder.find('LifecycleHTTPFallback');
  t.equal(fallback?.type, 'Warning');
  t.equal(fallback?.message, `request to HTTPS lifecycle hook 127.0.0.1:${server.port} got HTTP response, retry with HTTP succeeded`);
});

t.test('redirects: followed on the same host, not to another host (the 3xx is then the answer)', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  server.handle((req, res) => {
    if (req.url === '/a') {
      res.writeHead(302, { location: '/b' });
      res.end();
    } else if (req.url === '/b') {
      res.writeHead(307, { location: 'http://hook.invalid/elsewhere' });
      res.end();
    } else res.end('?');
  });
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/a', port: server.port } });
  t.equal(podSyncError(await sync(s, pod)), undefined);
  t.same(server.requests.map((r) => r.url), ['/a', '/b']);
});

t.test('a redirect loop on the same host stops after 10 requests', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  server.handle((_req, res) => {
    res.writeHead(302, { location: '/loop' });
    res.end();
  });
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/loop', port: server.port } });
  const start = (await sync(s, pod)).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(server.requests.length, 10);
  t.equal(start.message, 'HTTP lifecycle hook (/loop) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "/loop": stopped after 10 redirects');
});

t.test('a server that closes the connection without answering fails the hook with EOF', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  server.handle((req) => req.socket.destroy());
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/x', port: server.port } });
  const start = (await sync(s, pod)).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.message, `HTTP lifecycle hook (/x) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://127.0.0.1:${server.port}/x": EOF`);
});

t.test('a port name the container does not declare fails the hook before any request', async (t) => {
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { host: '127.0.0.1', path: '/x', port: 'web' as unknown as number } });
  const start = (await sync(s, pod)).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.message, 'HTTP lifecycle hook (/x) for Container "app" in Pod "web_default(uid-1)" failed - error: strconv.Atoi: parsing "web": invalid syntax');
});

t.test('without a host, a host-network pod has no pod IP to send the hook to (as in Go)', async (t) => {
  const s = setup();
  const pod = podWithHook('postStart', { httpGet: { path: '/x', port: 8080 } }, {}, { hostNetwork: true });
  const start = (await sync(s, pod)).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'PostStartHookError');
  t.match(start.message, /^HTTP lifecycle hook \(\/x\) for Container "app" in Pod "web_default\(uid-1\)" failed - error: failed to find networking container: /);
});

t.test('an httpGet preStop hook drains before StopContainer and counts against the grace period', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  let answer: (() => void) | undefined;
  server.handle((_req, res) => {
    answer = () => res.end('drained');
  });
  const s = setup();
  const pod = podWithHook('preStop', { httpGet: { host: '127.0.0.1', path: '/drain', port: server.port } });
  const running = await runningPod(s, pod);
  const arrived = server.nextRequest();
  const killing = s.manager.killPod(pod, running);
  t.equal((await arrived).url, '/drain');
  await s.clock.advance(7_000);
  t.same(stopCalls(s.runtime), [], 'StopContainer waits for the hook');
  answer!();
  await killing;
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 23]], '30 s minus the 7 s the hook took');
  t.notOk(s.recorder.find('FailedPreStopHook'));
  t.equal(s.clock.pendingTimers(), 0);
});

t.test('an httpGet preStop hook that outlives the grace period is abandoned; StopContainer gets the minimum', async (t) => {
  const server = await startHookServer();
  t.teardown(() => server.close());
  server.handle(() => undefined); // never answers
  const s = setup();
  const pod = makePod({ terminationGracePeriodSeconds: 5, containers: [{ name: 'app', lifecycle: { preStop: { httpGet: { host: '127.0.0.1', path: '/hang', port: server.port } } } }] });
  const running = await runningPod(s, pod);
  const arrived = server.nextRequest();
  const killing = s.manager.killPod(pod, running);
  await arrived;
  await s.clock.advance(5_000);
  await killing;
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 2]]);
  t.notOk(s.recorder.find('FailedPreStopHook'), 'an abandoned hook is not a failure');
  t.ok(s.logger.messages().includes('PreStop hook not completed in grace period'));
});

t.test('a failing httpGet preStop hook is logged with an event; the container is still stopped', async (t) => {
  const port = await closedPort();
  const s = setup();
  const pod = podWithHook('preStop', { httpGet: { host: '127.0.0.1', path: '/drain', port } });
  const running = await runningPod(s, pod);
  await s.manager.killPod(pod, running);
  t.match(s.logger.find('PreStop hook failed')?.err, {
    message: `HTTP lifecycle hook (/drain) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://127.0.0.1:${port}/drain": dial tcp 127.0.0.1:${port}: connect: connection refused`,
  });
  t.equal(s.recorder.find('FailedPreStopHook')?.message, 'PreStopHook failed');
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 30]]);
});

t.test('a sleep preStop hook sleeps on the clock; an abort of the kill ends it and rejects with the reason', async (t) => {
  const s = setup();
  const pod = podWithHook('preStop', { sleep: { seconds: 20 } });
  const running = await runningPod(s, pod);
  const controller = new AbortController();
  let outcome: unknown = 'pending';
  const killing = s.manager.killPod(pod, running, undefined, { signal: controller.signal }).then(
    () => (outcome = 'resolved'),
    (err: unknown) => (outcome = err),
  );
  await s.clock.advance(10_000);
  t.equal(outcome, 'pending');
  controller.abort();
  await killing;
  t.ok(isAbortError(outcome), 'rejects with the AbortError');
  t.same(stopCalls(s.runtime), [], 'no StopContainer after the abort');
  t.notOk(s.recorder.find('FailedPreStopHook'));
  t.equal(s.clock.pendingTimers(), 0);
});

t.test('an exec postStart hook: Go message on a non-zero exit; aborting the sync while it runs rejects with the reason', async (t) => {
  const s = setup();
  const pod = podWithHook('postStart', { exec: { command: ['/bin/init', '--now'] } });
  s.runtime.execResults.set('app_web_default_uid-1_0_0', { stdout: Buffer.from('out\n'), stderr: Buffer.from('bad'), exitCode: 3 });
  const start = (await sync(s, pod)).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(
    start.message,
    `Exec lifecycle hook ([/bin/init --now]) for Container "app" in Pod "web_default(uid-1)" failed - error: command '/bin/init --now' exited with 3: bad, message: "out\\nbad"`,
  );

  const s2 = setup();
  const pod2 = podWithHook('postStart', { exec: { command: ['/bin/slow'] } });
  s2.runtime.execResults.set('app_web_default_uid-1_0_0', (_cmd, signal) => s2.clock.sleep(60_000, signal).then(() => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 })));
  const controller = new AbortController();
  const reason = new DOMException('pod is terminating', 'AbortError');
  const syncing = s2.manager.syncPod(pod2, await s2.manager.getPodStatus('uid-1', 'web', 'default'), [], s2.backoff, { signal: controller.signal });
  await s2.clock.advance(1_000);
  t.ok(s2.runtime.called.includes('execSync'), 'the hook is running');
  controller.abort(reason);
  await t.rejects(syncing, reason, 'rejects with the signal reason itself');
  t.notOk(s2.recorder.find('FailedPostStartHook'), 'an abort is not a hook failure');
  t.same(stopCalls(s2.runtime), [], 'nor a reason to kill the container');
  t.equal(s2.clock.pendingTimers(), 0);
});

t.test('helpers: URL, port resolution, headers and User-Agent as Go builds them', async (t) => {
  const container: V1Container = { name: 'c', ports: [{ name: 'http', containerPort: 8080 }] };
  t.equal(httpGetActionUrl({ port: 'http' as unknown as number, path: 'healthz' }, container, '10.0.0.5').href, 'http://10.0.0.5:8080/healthz');
  t.equal(httpGetActionUrl({ port: 8443, scheme: 'HTTPS', host: 'fd00::1', path: '/x?y=1' }, container, '10.0.0.5').href, 'https://[fd00::1]:8443/x?y=1');
  t.equal(httpGetActionUrl({ port: '81' as unknown as number }, container, '10.0.0.5').href, 'http://10.0.0.5:81/');
  t.equal(resolveContainerPort('8081', undefined), 8081);
  t.throws(() => resolveContainerPort(0, container), { message: 'invalid port number: 0' });
  t.throws(() => resolveContainerPort('nope', container), { message: 'strconv.Atoi: parsing "nope": invalid syntax' });
  t.same([...lifecycleRequestHeaders([{ name: 'accept', value: '' }, { name: 'user-agent', value: 'mine' }], 'kube-lifecycle/1.31')], [['User-Agent', ['mine']]]);
  t.same([...lifecycleRequestHeaders(undefined, 'kube-lifecycle/1.31')], [['User-Agent', ['kube-lifecycle/1.31']], ['Accept', ['*/*']]]);
  t.equal(lifecycleUserAgent('v1.29.3'), 'kube-lifecycle/1.29');
  t.match(DEFAULT_LIFECYCLE_USER_AGENT, /^kube-lifecycle\/\d+\.\d+$/);
});
