// startInProcess(): the runtime reached with no socket. A differential test: the same scenario against a runtime on
// a socket and one in process gives the same responses and errors (ids aside, which are random).
import t from 'tap';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CriError, type ImageService, type RuntimeService, type runtimeapi as api } from '@kubelet-ts/cri-client';
import { FakeClock } from '@kubelet-ts/core/testing';
import { LocalRuntime } from '../src/index.js';
import { containerConfig, sandboxConfig, startRuntime, tempDir, waitFor } from './helpers.js';

async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { value: await call() };
  } catch (error) {
    const e = error as CriError;
    return { error: e.constructor.name, code: e.code, message: e.message };
  }
}

/** Runs the same CRI calls on a runtime; returns every outcome and the events seen, in order. */
async function scenario(rs: RuntimeService, is: ImageService, clock: FakeClock, logDir: string): Promise<unknown[]> {
  const out: unknown[] = [];
  const events: api.ContainerEventResponse[] = [];
  const abort = new AbortController();
  const consuming = (async () => {
    for await (const event of rs.getContainerEvents({ signal: abort.signal })) events.push(event);
  })();
  const record = async (call: () => Promise<unknown>) => out.push(await outcome(call));
  await record(() => rs.version('v1'));
  await record(() => rs.status(false));
  await record(() => rs.runtimeConfig());
  const sandbox = sandboxConfig('diff', { logDirectory: join(logDir, 'diff') });
  await record(() => is.pullImage({ image: 'busybox:1.36' }, undefined, sandbox));
  await record(() => is.listImages());
  await record(() => is.imageStatus({ image: 'busybox:1.36' }));
  await record(() => is.imageStatus({ image: 'notpulled' }));
  await record(() => is.pullImage({ image: 'doesnotexist/x' }));
  const sandboxId = await rs.runPodSandbox(sandbox);
  await record(() => rs.runPodSandbox(sandbox));
  const containerId = await rs.createContainer(sandboxId, containerConfig('app', [], { image: { image: 'busybox:1.36' } }), sandbox);
  await record(() => rs.startContainer(containerId));
  await record(() => rs.startContainer(containerId));
  await clock.advance(1000);
  await record(() => rs.containerStatus(containerId));
  await record(() => rs.containerStatus('nope'));
  await record(() => rs.listContainers({ state: { state: 'CONTAINER_RUNNING' } }));
  await record(() => rs.podSandboxStatus(sandboxId));
  await record(() => rs.listPodSandbox());
  await record(() => rs.containerStats(containerId));
  await record(() => rs.listPodSandboxStats());
  await record(() => rs.execSync(containerId, ['true'], 1));
  await record(() => rs.exec({ containerId, cmd: ['sh'] }));
  await record(() => rs.stopContainer(containerId, 10));
  await record(() => rs.listContainerStats());
  await record(() => rs.removePodSandbox(sandboxId));
  await record(() => rs.listContainers());
  await waitFor(() => events.length >= 4, 5000, 'four events');
  abort.abort();
  await consuming;
  out.push({ events });
  return out;
}

/** Replaces each random id by its first-seen order, so two runs compare equal. */
function normalize(value: unknown): unknown {
  const ids = new Map<string, string>();
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) => {
      const buffer = v as { type?: string; data?: number[] } | null;
      return buffer && typeof buffer === 'object' && buffer.type === 'Buffer' ? `buffer:${Buffer.from(buffer.data ?? []).toString()}` : v;
    }).replace(
      /[0-9a-f]{64}/g,
      (id) => {
        if (!ids.has(id)) ids.set(id, `id${ids.size}`);
        return ids.get(id)!;
      },
    ),
  );
}

// First in the file: nothing has loaded grpc-js yet.
t.test('in process: no socket, no grpc-js; stop() ends streams and later calls fail Unavailable', async (t) => {
  const dir = tempDir(t);
  const runtime = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'root') });
  await t.rejects(runtime.start(), /no socketPath/);
  const { runtimeService } = await runtime.startInProcess();
  const require = createRequire(import.meta.url);
  t.same(Object.keys(require.cache).filter((p) => /[\\/]@grpc[\\/]grpc-js[\\/]/.test(p)), [], 'grpc-js is not loaded');
  let ended = false;
  const consuming = (async () => {
    for await (const event of runtimeService.getContainerEvents()) void event;
    ended = true;
  })();
  t.match(await runtimeService.version('v1'), { runtimeName: 'local-runtime' });
  await runtime.stop();
  await consuming;
  t.ok(ended, 'the event stream ended');
  await t.rejects(runtimeService.version('v1'), { name: 'UnavailableError', message: /local runtime at inprocess:\/\/.* is stopped/ });
  await t.rejects(runtime.startInProcess(), /was stopped/);
});

t.test('the same scenario on a socket and in process gives the same responses, errors and events', async (t) => {
  const socketClock = new FakeClock();
  const socket = await startRuntime(t, { mode: 'simulated', clock: socketClock });
  const viaSocket = await scenario(socket.rs, socket.is, socketClock, socket.logDir);

  const dir = tempDir(t);
  const clock = new FakeClock();
  const runtime = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'root'), clock });
  const { runtimeService, imageService } = await runtime.startInProcess();
  t.teardown(() => runtime.stop());
  t.equal(runtimeService.endpoint, `inprocess://${join(dir, 'root')}`);
  const viaProcess = await scenario(runtimeService, imageService, clock, join(dir, 'pods'));

  const a = normalize(viaSocket) as unknown[];
  const b = normalize(viaProcess) as unknown[];
  // Paths differ by the temp dir; everything else is equal.
  const strip = (v: unknown) => JSON.parse(JSON.stringify(v).replaceAll(socket.dir, '<dir>').replaceAll(dir, '<dir>').replaceAll('unix://<dir>/cri.sock', '<endpoint>').replaceAll('inprocess://<dir>/root', '<endpoint>'));
  t.equal(b.length, a.length);
  for (let i = 0; i < a.length; i++) t.strictSame(strip(b[i]), strip(a[i]), `call ${i}: ${JSON.stringify(strip(a[i])).slice(0, 80)}`);
  t.match(viaProcess[12], { error: 'NotFoundError', code: 'NotFound' }, 'a not-found error, typed');
  t.match(viaProcess.at(-1), { events: [{ containerEventType: 'CONTAINER_CREATED_EVENT' }, { containerEventType: 'CONTAINER_STARTED_EVENT' }, {}, {}] });
});
