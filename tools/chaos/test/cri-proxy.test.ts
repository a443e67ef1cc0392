import t from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriError, RemoteImageService, RemoteRuntimeService, CRI_API_VERSION, type runtimeapi } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { pollUntil } from '@kubelet-ts/core';
import { FakeClock } from '@kubelet-ts/core/testing';
import { criConformance } from '@kubelet-ts/cri-conformance';
import { CRI_PROXY_DROP_MESSAGE, CriChaosProxy, encodeGrpcMessage, parseCriProxyArgs, remainingGrpcTimeout, unixSocketPath } from '../src/cri-proxy.js';

const POLL_MS = 5;
const BUSYBOX = 'localhost/kubelet-ts/busybox:1';
const WAIT_MS = 20_000;

const dir = mkdtempSync(join(tmpdir(), 'cri-proxy-'));
const runtimeSocket = join(dir, 'runtime.sock');
const local = new LocalRuntime({ socketPath: runtimeSocket, mode: 'process', rootDir: join(dir, 'root') });
await local.start();
const clock = new FakeClock();
let draws: number[] = [];
const proxy = await CriChaosProxy.start({
  socketPath: join(dir, 'proxy.sock'),
  upstream: local.endpoint,
  clock,
  random: () => draws.shift() ?? 0.5,
});
const direct = new RemoteRuntimeService({ endpoint: local.endpoint });
const runtime = new RemoteRuntimeService({ endpoint: proxy.endpoint });
const images = new RemoteImageService({ endpoint: proxy.endpoint });
t.teardown(async () => {
  runtime.close();
  images.close();
  direct.close();
  await proxy.close();
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
});

let podCounter = 0;
function sandboxConfig(name: string): runtimeapi.PodSandboxConfigInit {
  const uid = `cri-proxy-${process.pid}-${++podCounter}`;
  return {
    metadata: { name, namespace: 'default', uid, attempt: 0 },
    hostname: '',
    logDirectory: join(dir, 'logs', uid),
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

async function failure(promise: Promise<unknown>): Promise<CriError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CriError) return error;
    throw error;
  }
  throw new Error('the call succeeded');
}

t.test('helpers: endpoints and grpc-message encoding', async (t) => {
  t.equal(unixSocketPath('unix:///run/containerd/containerd.sock'), '/run/containerd/containerd.sock');
  t.equal(unixSocketPath('/x.sock'), '/x.sock');
  t.throws(() => unixSocketPath('tcp://127.0.0.1:1'), /not a unix socket/);
  t.equal(encodeGrpcMessage('100% ok\né'), '100%25 ok%0A%C3%A9');
  t.equal(proxy.endpoint, `unix://${join(dir, 'proxy.sock')}`);
});

t.test('pass-through: the same answers direct and through the proxy', async (t) => {
  proxy.resetStats();
  t.same(await runtime.version(CRI_API_VERSION), await direct.version(CRI_API_VERSION), 'Version');
  const id = await runtime.runPodSandbox(sandboxConfig('through-proxy'));
  t.ok(id, 'RunPodSandbox through the proxy');
  t.same(await runtime.listPodSandbox({ id }), await direct.listPodSandbox({ id }), 'ListPodSandbox');
  t.same((await runtime.podSandboxStatus(id)).status, (await direct.podSandboxStatus(id)).status, 'PodSandboxStatus (its timestamp aside)');
  const notFound = await failure(runtime.containerStatus('no-such-container'));
  t.equal(notFound.code, 'NotFound', 'an error status is relayed (trailers-only response)');
  await runtime.stopPodSandbox(id);
  await runtime.removePodSandbox(id);
  t.same(await direct.listPodSandbox({ id }), [], 'RemovePodSandbox reached the runtime');
  t.ok((await images.imageFsInfo()).imageFilesystems.length > 0, 'ImageService is relayed too');
  const stats = proxy.stats();
  t.equal(stats.calls, 8);
  t.same(stats.byMethod, { Version: 1, RunPodSandbox: 1, ListPodSandbox: 1, PodSandboxStatus: 1, ContainerStatus: 1, StopPodSandbox: 1, RemovePodSandbox: 1, ImageFsInfo: 1 });
  t.equal(stats.delayed + stats.dropped + stats.hung, 0, 'no fault, nothing held');
});

t.test('a server stream (GetContainerEvents) is relayed, and its cancel reaches the runtime', async (t) => {
  const before = proxy.stats().inFlight;
  const controller = new AbortController();
  const events: runtimeapi.ContainerEventResponse[] = [];
  const config = sandboxConfig('events');
  const sandboxId = await direct.runPodSandbox(config);
  await images.pullImage({ image: BUSYBOX });
  const reading = (async () => {
    try {
      for await (const event of runtime.getContainerEvents({ signal: controller.signal })) events.push(event);
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  await pollUntil(() => proxy.stats().inFlight === before + 1, POLL_MS, WAIT_MS);
  // Events go only to the streams open when they happen: create containers until the relayed stream has one.
  const created: string[] = [];
  let attempt = 0;
  await pollUntil(async () => {
    if (events.length > 0) return true;
    created.push(
      await direct.createContainer(sandboxId, { metadata: { name: 'c', attempt: attempt++ }, image: { image: BUSYBOX }, command: ['true'] }, config),
    );
    return false;
  }, POLL_MS, WAIT_MS);
  t.equal(events[0].containerEventType, 'CONTAINER_CREATED_EVENT');
  t.ok(created.includes(events[0].containerId), 'the event came from the runtime through the proxy');
  controller.abort();
  await reading;
  await pollUntil(() => proxy.stats().inFlight === before, POLL_MS, WAIT_MS);
  t.pass('the cancelled stream is closed upstream too');
  await direct.stopPodSandbox(sandboxId);
  await direct.removePodSandbox(sandboxId);
});

t.test('dropRate 1 for one method: that call fails UNAVAILABLE, the others pass', async (t) => {
  proxy.resetStats();
  proxy.setFault({ dropRate: 1, methods: ['ListPodSandbox'] });
  const error = await failure(runtime.listPodSandbox());
  t.equal(error.code, 'Unavailable');
  t.equal(error.details, CRI_PROXY_DROP_MESSAGE);
  t.equal(error.rpc, 'RuntimeService/ListPodSandbox');
  t.ok(await runtime.listContainers(), 'ListContainers passes');
  t.ok(await runtime.version(CRI_API_VERSION), 'Version passes');
  draws = [0.3, 0.7];
  proxy.setFault({ dropRate: 0.5 });
  t.equal((await failure(runtime.version(CRI_API_VERSION))).code, 'Unavailable', 'a draw under the rate drops');
  t.ok(await runtime.version(CRI_API_VERSION), 'a draw over the rate passes');
  proxy.setFault(undefined);
  t.ok(await runtime.listPodSandbox(), 'the fault cleared, ListPodSandbox passes');
  const stats = proxy.stats();
  t.equal(stats.dropped, 2);
  t.equal(stats.calls, 6);
  t.same(stats.byMethod, { ListPodSandbox: 2, ListContainers: 1, Version: 3 });
});

t.test('hang: the call is held until its deadline, and the proxy still serves the next call', async (t) => {
  proxy.resetStats();
  const before = proxy.stats().inFlight;
  proxy.setFault({ hang: true, methods: ['Version'] });
  // The deadline only has to outlast the call's trip to the proxy (checked by stats.hung below).
  const error = await failure(runtime.version(CRI_API_VERSION, { timeoutMs: 1000 }));
  t.equal(error.code, 'DeadlineExceeded');
  t.equal(proxy.stats().hung, 1);
  t.ok(await runtime.listContainers(), 'another method passes meanwhile');
  await pollUntil(() => proxy.stats().inFlight === before, POLL_MS, WAIT_MS);
  t.pass("the client's cancel released the held call");
  proxy.setFault(undefined);
  t.equal((await runtime.version(CRI_API_VERSION)).runtimeApiVersion, 'v1', 'the next call passes');
});

t.test('hang: the calls still held when the hang ends are forwarded then, as a wedged runtime answers its queue', async (t) => {
  proxy.resetStats();
  proxy.setFault({ hang: true, methods: ['Version'] });
  let settled = false;
  const held = runtime.version(CRI_API_VERSION, { timeoutMs: 60_000 }).finally(() => {
    settled = true;
  });
  await pollUntil(() => proxy.stats().hung === 1, POLL_MS, WAIT_MS);
  t.notOk(settled, 'held while the hang lasts');
  proxy.setFault(undefined);
  t.equal((await held).runtimeApiVersion, 'v1', 'answered by the runtime once the hang is cleared');
});

t.test('delay: calls wait on the clock before they are forwarded', async (t) => {
  proxy.resetStats();
  draws = [0.5];
  proxy.setFault({ delayMs: 60_000, jitterMs: 1000, methods: ['RunPodSandbox'] });
  let settled = false;
  const running = runtime.runPodSandbox(sandboxConfig('delayed')).finally(() => {
    settled = true;
  });
  await pollUntil(() => proxy.stats().delayed === 1, POLL_MS, WAIT_MS);
  t.ok(await runtime.version(CRI_API_VERSION), 'an unmatched method is not delayed');
  t.same(await direct.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': 'delayed' } }), [], 'not forwarded yet');
  t.notOk(settled, 'still waiting');
  await clock.advance(60_499);
  t.notOk(settled, 'the jitter is added');
  await clock.advance(1);
  const id = await running;
  t.equal((await direct.podSandboxStatus(id)).status?.metadata?.name, 'delayed', 'forwarded after the delay');
  proxy.setFault(undefined);
  t.equal(proxy.stats().delayed, 1);
  await runtime.stopPodSandbox(id);
  await runtime.removePodSandbox(id);
});

t.test('the upstream down: UNAVAILABLE naming its socket; back on the same path: calls pass again', async (t) => {
  const upstreamSocket = join(dir, 'restarting.sock');
  const rootDir = join(dir, 'restarting');
  let upstream = new LocalRuntime({ socketPath: upstreamSocket, mode: 'simulated', rootDir });
  await upstream.start();
  const relay = await CriChaosProxy.start({ socketPath: join(dir, 'relay.sock'), upstream: upstreamSocket });
  const client = new RemoteRuntimeService({ endpoint: relay.endpoint });
  t.teardown(async () => {
    client.close();
    await relay.close();
    await upstream.stop();
  });
  t.ok(await client.version(CRI_API_VERSION), 'passes while the runtime is up');
  await upstream.stop();
  const error = await failure(client.version(CRI_API_VERSION));
  t.equal(error.code, 'Unavailable');
  t.match(error.details, `unix://${upstreamSocket}`, 'the message names the upstream socket');
  t.equal((await failure(client.listContainers())).code, 'Unavailable', 'still down: still UNAVAILABLE');
  upstream = new LocalRuntime({ socketPath: upstreamSocket, mode: 'simulated', rootDir });
  await upstream.start();
  t.equal((await client.version(CRI_API_VERSION)).runtimeApiVersion, 'v1', 'the proxy dialled the runtime again');
});

t.test('close(): hung calls are answered UNAVAILABLE and the socket is removed', async (t) => {
  const path = join(dir, 'closing.sock');
  const closing = await CriChaosProxy.start({ socketPath: path, upstream: local.endpoint });
  const client = new RemoteRuntimeService({ endpoint: closing.endpoint, timeoutMs: 0 });
  t.teardown(() => client.close());
  t.ok(await client.version(CRI_API_VERSION));
  closing.setFault({ hang: true });
  const held = failure(client.listContainers());
  await pollUntil(() => closing.stats().hung === 1, POLL_MS, WAIT_MS);
  t.ok(existsSync(path));
  await closing.close();
  const error = await held;
  t.equal(error.code, 'Unavailable');
  t.match(error.details, 'closed');
  t.notOk(existsSync(path), 'the socket is gone');
  await closing.close(); // idempotent
});

t.test('a stale socket is replaced; a live one or a file is refused', async (t) => {
  const path = join(dir, 'stale.sock');
  // A server killed without cleaning up leaves its socket file behind.
  const killed = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  t.equal(killed.signal, 'SIGKILL');
  t.ok(existsSync(path), 'a stale socket is there');
  const first = await CriChaosProxy.start({ socketPath: path, upstream: local.endpoint });
  const client = new RemoteRuntimeService({ endpoint: first.endpoint });
  t.ok(await client.version(CRI_API_VERSION), 'the proxy serves on it');
  client.close();
  await t.rejects(CriChaosProxy.start({ socketPath: path, upstream: local.endpoint }), /in use by another server/);
  await first.close();
  const file = join(dir, 'not-a-socket');
  writeFileSync(file, '');
  await t.rejects(CriChaosProxy.start({ socketPath: file, upstream: local.endpoint }), /is not a socket/);
});

t.test("a call cancelled while it is delayed is never forwarded", async (t) => {
  proxy.resetStats();
  const before = proxy.stats().inFlight;
  proxy.setFault({ delayMs: 60_000 });
  const controller = new AbortController();
  const running = failure(runtime.runPodSandbox(sandboxConfig('cancelled-while-delayed'), '', { signal: controller.signal }));
  await pollUntil(() => proxy.stats().delayed === 1, POLL_MS, WAIT_MS);
  controller.abort();
  t.equal((await running).code, 'Canceled');
  await pollUntil(() => proxy.stats().inFlight === before, POLL_MS, WAIT_MS);
  await clock.advance(60_000);
  proxy.setFault(undefined);
  t.same(await direct.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': 'cancelled-while-delayed' } }), [], 'not forwarded');
  t.equal(proxy.stats().delayed, 1);
});

t.test("the runtime's RST_STREAM is relayed to the client", async (t) => {
  // A bare HTTP/2 upstream that resets every stream, as a runtime cancelling a call does.
  const path = join(dir, 'resetting.sock');
  const upstream = http2.createServer();
  upstream.on('stream', (stream) => stream.close(http2.constants.NGHTTP2_CANCEL));
  await new Promise<void>((resolve) => upstream.listen(path, resolve));
  const relay = await CriChaosProxy.start({ socketPath: join(dir, 'resetting-relay.sock'), upstream: path });
  const client = new RemoteRuntimeService({ endpoint: relay.endpoint });
  t.teardown(async () => {
    client.close();
    await relay.close();
    await new Promise((resolve) => upstream.close(resolve));
  });
  const error = await failure(client.version(CRI_API_VERSION));
  t.equal(error.code, 'Canceled', 'a CANCEL reset, not the proxy\'s UNAVAILABLE');
});

t.test('grpc-timeout: the time a call was held is taken off the deadline relayed upstream', async (t) => {
  t.equal(remainingGrpcTimeout('2000m', 0), '2000m', 'not held: unchanged');
  t.equal(remainingGrpcTimeout('2S', 500), '1500m');
  t.equal(remainingGrpcTimeout('1999871u', 1000.5), '1000m');
  t.equal(remainingGrpcTimeout('1H', 60_000), '3540000m');
  t.equal(remainingGrpcTimeout('10m', 60_000), '1m', 'past the deadline: the least there is');
  t.equal(remainingGrpcTimeout('bogus', 10), 'bogus');
});

t.test('CLI flags', async (t) => {
  const base = ['--listen', '/tmp/p.sock', '--upstream', 'unix:///run/c.sock'];
  t.same(parseCriProxyArgs(base), { listen: '/tmp/p.sock', upstream: 'unix:///run/c.sock', fault: undefined });
  t.same(parseCriProxyArgs([...base, '--delay', '200ms', '--jitter', '1s', '--drop', '0.1', '--methods', 'RunPodSandbox, ListContainers']).fault, {
    delayMs: 200,
    jitterMs: 1000,
    dropRate: 0.1,
    methods: ['RunPodSandbox', 'ListContainers'],
  });
  t.same(parseCriProxyArgs([...base, '--hang']).fault, { hang: true });
  t.throws(() => parseCriProxyArgs(['--listen', '/tmp/p.sock']), /usage:/);
  t.throws(() => parseCriProxyArgs([...base, '--drop', '2']), /--drop must be a fraction 0\.\.1: 2/);
  t.throws(() => parseCriProxyArgs([...base, '--drop', '']), /--drop/);
  t.throws(() => parseCriProxyArgs([...base, '--delay', 'soon']), /invalid duration "soon"/);
  t.throws(() => parseCriProxyArgs([...base, '--methods', 'Version']), /--methods needs a fault/);
  t.throws(() => parseCriProxyArgs([...base, '--bogus']), /Unknown option '--bogus'/);
});

t.test('the CLI relays with its fault and prints the stats when stopped', async (t) => {
  const listen = join(dir, 'cli.sock');
  const cli = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../src/cri-proxy-cli.ts', import.meta.url)), '--listen', listen, '--upstream', local.endpoint, '--drop', '1', '--methods', 'ListContainers'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  cli.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => cli.once('exit', resolve));
  t.teardown(() => cli.kill('SIGKILL'));
  await pollUntil(() => output.includes('listening'), POLL_MS, WAIT_MS);
  t.match(output, `CRI chaos proxy listening on unix://${listen}, relaying to ${local.endpoint}`);
  const client = new RemoteRuntimeService({ endpoint: `unix://${listen}` });
  t.ok(await client.version(CRI_API_VERSION), 'Version passes');
  t.equal((await failure(client.listContainers())).details, CRI_PROXY_DROP_MESSAGE, 'ListContainers is dropped');
  client.close();
  cli.kill('SIGTERM');
  t.equal(await exited, 0, 'exits cleanly');
  t.match(output, /CRI chaos proxy stats \{"calls":2,"delayed":0,"dropped":1,"hung":0,/);
  t.notOk(existsSync(listen), 'the socket is removed');
});

// The proxy is transparent: the CRI conformance suite passes through it.
criConformance(t, {
  name: 'local-runtime through the CRI chaos proxy',
  runtime,
  images,
  busyboxImage: BUSYBOX,
  logRoot: join(dir, 'conformance-logs'),
  supportsContainerEvents: true,
});
