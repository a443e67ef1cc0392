// The in-process client against the same handlers served over a unix socket: a differential test. Every call gives
// deepStrictEqual results and errors of the same class and message on both transports.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CanceledError,
  CriError,
  DeadlineExceededError,
  NotFoundError,
  RemoteImageService,
  RemoteRuntimeService,
  UnimplementedError,
  criCodec,
  grpcJs,
  inProcessClient,
  type InProcessServiceImplementation,
  type runtimeapi,
} from '../src/index.js';

type Call = { request: any; on(event: string, fn: () => void): void; cancelled: boolean };
type Callback = (error: unknown, response?: unknown) => void;

/** What the handlers saw, to check the in-process call reaches them as over a socket. */
interface Seen {
  requests: Record<string, unknown>;
  cancelled: string[];
}

function handlers(seen: Seen): { runtime: InProcessServiceImplementation; image: InProcessServiceImplementation } {
  const record = (name: string, call: Call) => {
    seen.requests[name] = call.request;
    call.on('cancelled', () => seen.cancelled.push(name));
  };
  const runtime = {
    Version: (call: Call, callback: Callback) => {
      record('Version', call);
      callback(null, { version: call.request.version, runtimeName: 'diff', runtimeVersion: '1', runtimeApiVersion: 'v1' });
    },
    ListContainers: (call: Call, callback: Callback) => {
      record('ListContainers', call);
      callback(null, {
        containers: [
          // int64 as numbers, enums as strings, nested defaults left out: the codec fills them.
          { id: 'c1', podSandboxId: 's1', metadata: { name: 'web', attempt: 2 }, state: 'CONTAINER_RUNNING', createdAt: 1_700_000_000_123_456_789, labels: { app: 'web' } },
          { id: 'c2', state: 3 },
        ],
      });
    },
    ContainerStatus: (call: Call, callback: Callback) =>
      callback({ code: 5, details: `an error occurred when try to find container "${call.request.containerId}": not found` }),
    RunPodSandbox: (call: Call, callback: Callback) => {
      record('RunPodSandbox', call);
      callback(null, { podSandboxId: `sb-${call.request.config.metadata.name}-${call.request.config.annotations.a}` });
    },
    ExecSync: (call: Call, callback: Callback) =>
      callback(null, { stdout: Buffer.from(call.request.cmd.join(' ')), stderr: Buffer.from('err'), exitCode: 3 }),
    // An error without a numeric code: UNKNOWN with the message.
    StopPodSandbox: (_call: Call, callback: Callback) => callback(new Error('plain failure')),
    // Never answers: deadlines and cancellation.
    StartContainer: (call: Call) => record('StartContainer', call),
    ContainerStats: (_call: Call, callback: Callback) =>
      callback(null, {
        stats: {
          attributes: { id: 'c1' },
          cpu: { timestamp: 5, usageCoreNanoSeconds: { value: 123_456_789_000 }, usageNanoCores: { value: 1_000_000 } },
          memory: { timestamp: 5, workingSetBytes: { value: 4 * 1024 * 1024 } },
        },
      }),
    GetContainerEvents: (call: Call & { write(m: unknown): void; end(): void }) => {
      record('GetContainerEvents', call);
      call.write({ containerId: 'c1', containerEventType: 'CONTAINER_STARTED_EVENT', createdAt: 5 });
      call.write({ containerId: 'c1', containerEventType: 'CONTAINER_STOPPED_EVENT', createdAt: 6, containersStatuses: [{ id: 'c1', exitCode: 1 }] });
      call.end();
    },
    // Status is left out: Unimplemented from the server.
  } as unknown as InProcessServiceImplementation;
  const image = {
    ListImages: (_call: Call, callback: Callback) => callback(null, { images: [{ id: 'sha256:1', repoTags: ['a:1'], size: 1234 }] }),
    ImageStatus: (_call: Call, callback: Callback) => callback(null, {}),
    PullImage: (call: Call, callback: Callback) =>
      call.request.image.image === 'missing'
        ? callback({ code: 5, details: 'failed to pull and unpack image "missing": not found' })
        : callback(null, { imageRef: `sha256:${call.request.sandboxConfig?.metadata?.name ?? 'none'}` }),
  } as unknown as InProcessServiceImplementation;
  return { runtime, image };
}

interface Clients {
  rs: RemoteRuntimeService;
  is: RemoteImageService;
  seen: Seen;
}

async function overSocket(t: Test): Promise<Clients> {
  const dir = mkdtempSync(join(tmpdir(), 'cri-inproc-'));
  const grpc = grpcJs();
  const defs = criCodec().serviceDefinitions();
  const seen: Seen = { requests: {}, cancelled: [] };
  const impl = handlers(seen);
  const server = new grpc.Server();
  server.addService(defs.RuntimeService, impl.runtime);
  server.addService(defs.ImageService, impl.image);
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())),
  );
  const rs = new RemoteRuntimeService({ endpoint, timeoutMs: 10_000 });
  const is = new RemoteImageService({ endpoint, timeoutMs: 10_000 });
  t.teardown(() => {
    rs.close();
    is.close();
    server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  return { rs, is, seen };
}

function inProcess(t: Test): Clients {
  const defs = criCodec().serviceDefinitions();
  const seen: Seen = { requests: {}, cancelled: [] };
  const impl = handlers(seen);
  const endpoint = 'inprocess://diff';
  const rs = new RemoteRuntimeService({ endpoint, timeoutMs: 10_000, client: inProcessClient(defs.RuntimeService, impl.runtime) });
  const is = new RemoteImageService({ endpoint, timeoutMs: 10_000, client: inProcessClient(defs.ImageService, impl.image) });
  t.teardown(() => {
    rs.close();
    is.close();
  });
  return { rs, is, seen };
}

/** A call's outcome in comparable form: its value, or its error's class, code and message (endpoint aside). */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { value: await call() };
  } catch (error) {
    const e = error as CriError;
    return { error: e.constructor.name, code: e.code, message: e.message.replace(/unix:\/\/\S+|inprocess:\/\/\S+/g, '<endpoint>') };
  }
}

const sandbox: runtimeapi.PodSandboxConfigInit = {
  metadata: { name: 'p', namespace: 'default', uid: 'u', attempt: 0 },
  annotations: { a: 'b' },
};

const scenarios: Record<string, (c: Clients) => Promise<unknown>> = {
  version: (c) => c.rs.version('v1'),
  listContainers: (c) => c.rs.listContainers({ labelSelector: { app: 'web' } }),
  notFound: (c) => c.rs.containerStatus('nope'),
  runPodSandbox: (c) => c.rs.runPodSandbox(sandbox, 'h'),
  execSync: (c) => c.rs.execSync('c1', ['echo', 'hi'], 5),
  plainError: (c) => c.rs.stopPodSandbox('s1'),
  unimplemented: (c) => c.rs.status(true),
  containerStats: (c) => c.rs.containerStats('c1'),
  listImages: (c) => c.is.listImages(),
  imageStatusNull: (c) => c.is.imageStatus({ image: 'x' }),
  pullImage: (c) => c.is.pullImage({ image: 'busybox' }, undefined, sandbox),
  pullNotFound: (c) => c.is.pullImage({ image: 'missing' }),
  events: async (c) => {
    const events: runtimeapi.ContainerEventResponse[] = [];
    for await (const event of c.rs.getContainerEvents()) events.push(event);
    return events;
  },
  eventsUnimplemented: async (c) => {
    // The image service has no GetContainerEvents; ask the runtime service of a client whose handler is missing.
    const events: unknown[] = [];
    for await (const event of c.rs.getContainerEvents()) events.push(event);
    return events;
  },
};

t.test('the same calls over a socket and in process give the same results and errors', async (t) => {
  const socket = await overSocket(t);
  const local = inProcess(t);
  for (const [name, scenario] of Object.entries(scenarios)) {
    if (name === 'eventsUnimplemented') continue;
    const viaSocket = await outcome(() => scenario(socket));
    const viaProcess = await outcome(() => scenario(local));
    t.strictSame(viaProcess, viaSocket, name);
  }
  t.strictSame(local.seen.requests, socket.seen.requests, 'the handlers got the same requests');
  t.match(await outcome(() => scenarios.notFound(local)), { error: NotFoundError.name, code: 'NotFound' });
  t.match(await outcome(() => scenarios.unimplemented(local)), {
    error: UnimplementedError.name,
    message: 'RuntimeService/Status failed: rpc error: code = Unimplemented desc = The server does not implement the method Status',
  });
  t.match(await outcome(() => scenarios.plainError(local)), { error: 'CriError', code: 'Unknown', message: /desc = plain failure$/ });
  t.match(await outcome(() => scenarios.events(local)), {
    value: [
      { containerId: 'c1', containerEventType: 'CONTAINER_STARTED_EVENT', createdAt: 5, podSandboxStatus: null, containersStatuses: [] },
      { containerId: 'c1', containerEventType: 'CONTAINER_STOPPED_EVENT', createdAt: 6, containersStatuses: [{ id: 'c1', exitCode: 1, state: 'CONTAINER_CREATED' }] },
    ],
  });
});

t.test('in process, a missing server-stream handler fails the iteration with Unimplemented, as the grpc-js server answers', async (t) => {
  const defs = criCodec().serviceDefinitions();
  const local = new RemoteRuntimeService({ endpoint: 'inprocess://x', client: inProcessClient(defs.RuntimeService, {}) });
  t.teardown(() => local.close());
  t.strictSame(await outcome(() => scenarios.eventsUnimplemented({ rs: local } as Clients)), {
    error: 'UnimplementedError',
    code: 'Unimplemented',
    message: 'RuntimeService/GetContainerEvents failed: rpc error: code = Unimplemented desc = The server does not implement the method GetContainerEvents',
  });
});

t.test('deadlines and AbortSignal: the same error classes, and the handler sees the call cancelled', async (t) => {
  for (const [transport, clients] of [['socket', await overSocket(t)], ['in-process', inProcess(t)]] as const) {
    const deadline = await outcome(() => clients.rs.startContainer('c1', { timeoutMs: 30 }));
    t.match(deadline, { error: DeadlineExceededError.name, code: 'DeadlineExceeded', message: /desc = Deadline exceeded/ }, `${transport}: deadline`);

    const controller = new AbortController();
    const pending = outcome(() => clients.rs.startContainer('c1', { signal: controller.signal, timeoutMs: 0 }));
    setImmediate(() => controller.abort(new Error('stop')));
    t.strictSame(
      await pending,
      {
        error: CanceledError.name,
        code: 'Canceled',
        message: 'RuntimeService/StartContainer for container "c1" failed: rpc error: code = Canceled desc = Cancelled on client',
      },
      `${transport}: abort`,
    );
    const early = new AbortController();
    early.abort(new Error('already'));
    t.match(await outcome(() => clients.rs.version('v1', { signal: early.signal })), { error: CanceledError.name }, `${transport}: aborted before`);
  }
});

t.test('in process, a deadline reaches the handler as a cancelled call; a stream the server ends ends the iteration', async (t) => {
  const local = inProcess(t);
  await outcome(() => local.rs.startContainer('c1', { timeoutMs: 5 }));
  t.strictSame(local.seen.cancelled, ['StartContainer']);
  const controller = new AbortController();
  const events = local.rs.getContainerEvents({ signal: controller.signal });
  const got: unknown[] = [];
  for await (const event of events) got.push(event);
  t.equal(got.length, 2, 'the stream ended by the server ends the iteration');
});

t.test('an event stream the client aborts ends quietly and the server side sees it cancelled', async (t) => {
  const defs = criCodec().serviceDefinitions();
  const writes: boolean[] = [];
  let cancelled = 0;
  let server: { write(m: unknown): boolean; writableLength: number } | undefined;
  const rs = new RemoteRuntimeService({
    endpoint: 'inprocess://events',
    client: inProcessClient(defs.RuntimeService, {
      GetContainerEvents: (call: any) => {
        server = call;
        call.on('cancelled', () => cancelled++);
        writes.push(call.write({ containerId: 'a', containerEventType: 'CONTAINER_CREATED_EVENT' }));
      },
    }),
  });
  t.teardown(() => rs.close());
  const controller = new AbortController();
  const got: runtimeapi.ContainerEventResponse[] = [];
  for await (const event of rs.getContainerEvents({ signal: controller.signal })) {
    got.push(event);
    if (got.length === 1) {
      t.equal(server?.writableLength, 0, 'the one message was read');
      server?.write({ containerId: 'b', containerEventType: 'CONTAINER_STARTED_EVENT' });
      server?.write({ containerId: 'c', containerEventType: 'CONTAINER_STARTED_EVENT' });
    }
    if (got.length === 2) controller.abort();
  }
  t.strictSame(got.map((e) => e.containerId), ['a', 'b']);
  t.equal(cancelled, 1, 'the handler saw the cancel');
  t.equal(server?.write({ containerId: 'd' }), false, 'writes after the cancel are dropped');
});

t.test('a closed in-process client throws as a closed grpc-js channel does', async (t) => {
  const defs = criCodec().serviceDefinitions();
  const rs = new RemoteRuntimeService({ endpoint: 'inprocess://closed', client: inProcessClient(defs.RuntimeService, {}) });
  rs.close();
  await t.rejects(rs.version('v1'), { message: 'Channel has been shut down' });
});

t.test('a server stream failing while nobody reads it does not crash the process', async (t) => {
  const defs = criCodec().serviceDefinitions();
  const client = inProcessClient(defs.RuntimeService, {
    GetContainerEvents: () => {
      throw new Error('handler broke');
    },
  });
  const stream = (client as unknown as Record<string, (request: unknown, options: unknown) => NodeJS.ReadableStream & { cancel(): void }>)
    .GetContainerEvents({}, {});
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  t.pass('no uncaught error');
  // A reader that comes later still sees the failure.
  await t.rejects(
    (async () => {
      for await (const event of stream) void event;
    })(),
    { code: 2, details: 'Server method handler threw error handler broke' },
  );
});
