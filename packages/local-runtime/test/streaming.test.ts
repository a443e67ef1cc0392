import t from 'tap';
import { connect, createServer, type AddressInfo } from 'node:net';
import { CriError } from '@kubelet-ts/cri-client';
import { FakeClock } from '@kubelet-ts/core/testing';
import { containerConfig, isAlive, runContainer, sandboxConfig, startRuntime, waitFor, type Harness } from './helpers.js';
import { readAll, session, upgrade } from './spdy-client.js';

const SUCCESS = '{"metadata":{},"status":"Success"}';

function exitStatus(cmd: string[], code: number): string {
  return JSON.stringify({
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${cmd.join(' ')}], exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  });
}

/** Exec through the runtime's URL as kubectl would: the upgrade, then the session. */
async function exec(
  h: Harness,
  containerId: string,
  cmd: string[],
  options: { stdin?: string; tty?: boolean } = {},
): Promise<{ stdout: string; stderr: string; error: string }> {
  const { url } = await h.rs.exec({ containerId, cmd, stdin: options.stdin !== undefined, stdout: true, stderr: !options.tty, tty: options.tty ?? false });
  const up = await upgrade(url);
  if (!up.spdy) throw new Error(`upgrade refused: ${up.status} ${up.body}`);
  return session(up.spdy, { stdin: options.stdin, tty: options.tty });
}

t.test('process mode: exec streams stdin, stdout, stderr and the exit code in the v4 status', async (t) => {
  const h = await startRuntime(t, { mode: 'process' });
  const { containerId } = await runContainer(h, 'app', ['sleep', '1000'], { envs: [{ key: 'GREETING', value: 'hi' }] });

  const cmd = ['sh', '-c', 'cat; echo "$GREETING" >&2; exit 3'];
  const result = await exec(h, containerId, cmd, { stdin: 'from stdin\n' });
  t.equal(result.stdout, 'from stdin\n', 'stdin reached the command, its stdout came back');
  t.equal(result.stderr, 'hi\n', "stderr on its own stream, in the container's environment");
  t.equal(result.error, exitStatus(cmd, 3), "the exit code as Go's ServeExec writes it");

  const ok = await exec(h, containerId, ['pwd']);
  t.match(ok.stdout, /sandboxes\/[0-9a-f]{64}\n$/, "in the container's working directory");
  t.equal(ok.error, SUCCESS);

  const tty = await exec(h, containerId, ['sh', '-c', 'echo out; echo err >&2'], { tty: true });
  t.equal(tty.stdout.split('\n').sort().join('\n'), '\nerr\nout', 'with tty (no terminal is made) stderr goes to stdout');

  const missing = await exec(h, containerId, ['no-such-binary']);
  const status = JSON.parse(missing.error);
  t.equal(status.reason, 'InternalError', 'a command that cannot start is an internal error, as containerd');
  t.equal(status.code, 500);
  t.match(status.message, /^Internal error occurred: error executing command in container: failed to exec in container: .*"no-such-binary": executable file not found/);
});

t.test('process mode: a large output arrives whole, in order', async (t) => {
  const h = await startRuntime(t, { mode: 'process' });
  const { containerId } = await runContainer(h, 'app', ['sleep', '1000']);
  const input = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n') + '\n';
  const result = await exec(h, containerId, ['cat'], { stdin: input });
  t.equal(result.stdout.length, input.length);
  t.ok(result.stdout === input, 'byte for byte');
  t.equal(result.error, SUCCESS);
});

t.test('a token works once; an expired one is refused; the wrong kind of path is refused', async (t) => {
  const clock = new FakeClock();
  const h = await startRuntime(t, { mode: 'simulated', clock });
  const sandbox = sandboxConfig('tokens');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, { ...containerConfig('app', []), logPath: '' }, sandbox);
  await h.rs.startContainer(containerId);

  const { url } = await h.rs.exec({ containerId, cmd: ['true'], stdout: true });
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]{8}$/, 'a one-time URL on 127.0.0.1');
  const first = await upgrade(url);
  t.equal(first.status, 101);
  t.match(first.head, /X-Stream-Protocol-Version: v4\.channel\.k8s\.io/, 'v4 is chosen first');
  t.equal((await session(first.spdy!, { stderr: false })).error, SUCCESS);
  const again = await upgrade(url);
  t.equal(again.status, 404, 'a used token is refused');
  t.equal(again.body, '404 page not found\n');

  const late = await h.rs.exec({ containerId, cmd: ['true'], stdout: true });
  clock.step(60_000);
  const stillValid = await h.rs.exec({ containerId, cmd: ['true'], stdout: true });
  clock.step(1);
  t.equal((await upgrade(late.url)).status, 404, 'a token expires after one minute (the clock is injected)');
  const valid = await upgrade(stillValid.url);
  t.equal(valid.status, 101, 'a token within its minute works');
  await session(valid.spdy!, { stderr: false });

  const attach = await h.rs.attach({ containerId, stdout: true });
  t.equal((await upgrade(attach.url.replace('/attach/', '/exec/'))).status, 404, 'an attach token is not an exec token');
});

t.test('the protocol handshake: required, negotiated in the client order, v2/v3 write only failures', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  const sandbox = sandboxConfig('handshake');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, { ...containerConfig('app', []), logPath: '' }, sandbox);
  await h.rs.startContainer(containerId);
  const url = async (cmd = ['exit', '4']) => (await h.rs.exec({ containerId, cmd, stdout: true, stderr: true })).url;

  const none = await upgrade(await url(), { protocols: [] });
  t.equal(none.status, 400);
  t.equal(none.body, 'unable to upgrade: X-Stream-Protocol-Version is required\n');
  const unknown = await upgrade(await url(), { protocols: ['v9.channel.k8s.io'] });
  t.equal(unknown.status, 403);
  t.match(unknown.head, /X-Accepted-Stream-Protocol-Versions: v4\.channel\.k8s\.io/);
  t.match(unknown.body, 'unable to negotiate protocol: client supports [v9.channel.k8s.io]');
  const plain = await upgrade(await url(), { noUpgradeHeaders: true });
  t.equal(plain.status, 400, 'no upgrade headers');
  t.match(plain.body, /^unable to upgrade: missing upgrade headers in request/);

  const v3 = await upgrade(await url(), { protocols: ['v3.channel.k8s.io', 'v4.channel.k8s.io'] });
  t.match(v3.head, /X-Stream-Protocol-Version: v3\.channel\.k8s\.io/, "the client's first supported protocol");
  t.equal((await session(v3.spdy!)).error, `command terminated with non-zero exit code: error executing command [exit 4], exit code 4`);
  const v2 = await upgrade(await url(['true']), { protocols: ['v2.channel.k8s.io'] });
  t.equal((await session(v2.spdy!)).error, '', 'v2: nothing on the error stream for a success');
});

t.test('simulated mode: the tiny interpreter', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  const sandbox = sandboxConfig('sim-exec', { hostname: 'sim-host' });
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(
    sandboxId,
    { ...containerConfig('app', []), logPath: '', envs: [{ key: 'A', value: 'one' }] },
    sandbox,
  );
  await h.rs.startContainer(containerId);

  t.same(await exec(h, containerId, ['echo', 'hello', 'world']), { stdout: 'hello world\n', stderr: '', error: SUCCESS });
  t.same(await exec(h, containerId, ['/bin/echo', '-n', 'x']), { stdout: 'x', stderr: '', error: SUCCESS }, 'by path; -n');
  t.same(await exec(h, containerId, ['cat'], { stdin: 'piped\nthrough\n' }), { stdout: 'piped\nthrough\n', stderr: '', error: SUCCESS });
  t.equal((await exec(h, containerId, ['hostname'])).stdout, 'sim-host\n');
  t.equal((await exec(h, containerId, ['env'])).stdout, `PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nHOSTNAME=sim-host\nA=one\n`);
  t.equal((await exec(h, containerId, ['true'])).error, SUCCESS);
  t.equal((await exec(h, containerId, ['false'])).error, exitStatus(['false'], 1));
  t.equal((await exec(h, containerId, ['exit', '7'])).error, exitStatus(['exit', '7'], 7));
  t.same(await exec(h, containerId, ['sh', '-c', 'echo "two  spaces" \'and quotes\'']), { stdout: 'two  spaces and quotes\n', stderr: '', error: SUCCESS });
  t.equal((await exec(h, containerId, ['/bin/sh', '-c', 'exit 9'])).error, exitStatus(['/bin/sh', '-c', 'exit 9'], 9));
  t.same(await exec(h, containerId, ['ls', '-l']), {
    stdout: '',
    stderr: 'simulated container: ls: command not found\n',
    error: exitStatus(['ls', '-l'], 127),
  });
  t.equal((await exec(h, containerId, ['sh', '-c', 'nope --x'])).stderr, 'simulated container: nope: command not found\n');
  t.same(h.runtime.processIds, [], 'no process was started');
});

t.test('Exec and Attach requests are validated as Go and containerd do', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  const sandbox = sandboxConfig('validate');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, { ...containerConfig('app', []), logPath: '' }, sandbox);
  const refused = async (fn: () => Promise<unknown>): Promise<CriError> => {
    try {
      await fn();
    } catch (error) {
      return error as CriError;
    }
    throw new Error('not refused');
  };
  const created = await refused(() => h.rs.exec({ containerId, cmd: ['true'], stdout: true }));
  t.equal(created.code, 'FailedPrecondition', 'a container that is not running');
  t.match(created.message, /is in CONTAINER_CREATED state: cannot exec in it/);
  await h.rs.startContainer(containerId);
  const both = await refused(() => h.rs.exec({ containerId, cmd: ['true'], tty: true, stderr: true }));
  t.equal(both.code, 'InvalidArgument');
  t.match(both.message, 'tty and stderr cannot both be true');
  const none = await refused(() => h.rs.attach({ containerId }));
  t.match(none.message, 'one of stdin, stdout, or stderr must be set');
  t.equal((await refused(() => h.rs.exec({ containerId, cmd: [], stdout: true }))).code, 'InvalidArgument');
  t.equal((await refused(() => h.rs.exec({ containerId: 'nope', cmd: ['true'], stdout: true }))).code, 'NotFound');
  t.equal((await refused(() => h.rs.portForward({ podSandboxId: '', port: [80] }))).code, 'NotFound');
});

t.test('process mode: attach streams the running container output until it stops', async (t) => {
  const h = await startRuntime(t, { mode: 'process' });
  const { containerId } = await runContainer(h, 'ticker', ['sh', '-c', "trap 'exit 0' TERM; while true; do echo tick; echo tock >&2; sleep 0.05; done"]);
  const { url } = await h.rs.attach({ containerId, stdout: true, stderr: true });
  const up = await upgrade(url);
  let seen = '';
  const attached = session(up.spdy!, { onStdout: (text) => (seen += text) });
  await waitFor(() => seen.includes('tick'), 10_000, 'attached output');
  await h.rs.stopContainer(containerId, 5);
  const result = await attached;
  t.match(result.stdout, /^(tick\n)+$/, "the container's stdout");
  t.match(result.stderr, /tock\n/, 'and its stderr');
  t.equal(result.error, SUCCESS, 'ends with success when the container exits');
});

t.test('simulated attach ends when the container exits', async (t) => {
  const clock = new FakeClock();
  const h = await startRuntime(t, { mode: 'simulated', clock, simulated: { exitAfterMs: 10_000 } });
  const sandbox = sandboxConfig('sim-attach');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, { ...containerConfig('app', []), logPath: '' }, sandbox);
  await h.rs.startContainer(containerId);
  const { url } = await h.rs.attach({ containerId, stdout: true });
  const up = await upgrade(url);
  let done = false;
  let ready!: () => void;
  const started = new Promise<void>((resolve) => (ready = resolve));
  const attached = session(up.spdy!, { stderr: false, onReady: ready }).then((r) => ((done = true), r));
  await started;
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.notOk(done, 'still attached while the container runs');
  await clock.advance(10_000);
  t.same(await attached, { stdout: '', stderr: '', error: SUCCESS });
});

t.test('a client that does not create its streams is dropped after the creation timeout', async (t) => {
  const clock = new FakeClock();
  const h = await startRuntime(t, { mode: 'simulated', clock });
  const sandbox = sandboxConfig('slow-client');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, { ...containerConfig('app', []), logPath: '' }, sandbox);
  await h.rs.startContainer(containerId);
  const { url } = await h.rs.exec({ containerId, cmd: ['true'], stdout: true });
  const up = await upgrade(url);
  await up.spdy!.createStream({ streamtype: ['error'] });
  let closed = false;
  void up.spdy!.closed.then(() => (closed = true));
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.notOk(closed, 'waits for the stdout stream');
  await clock.advance(30_000);
  await up.spdy!.closed;
  t.pass('closed at the 30s stream creation timeout');
});

t.test('stop() kills running exec sessions and closes the streaming server', async (t) => {
  const h = await startRuntime(t, { mode: 'process' });
  const { containerId } = await runContainer(h, 'app', ['sleep', '1000']);
  const { url } = await h.rs.exec({ containerId, cmd: ['sh', '-c', 'echo $$; exec sleep 1000'], stdout: true });
  const up = await upgrade(url);
  let pid = 0;
  const running = session(up.spdy!, { stderr: false, onStdout: (text) => (pid = Number(text.trim())) }).catch(() => undefined);
  await waitFor(() => pid > 0, 10_000, 'the exec pid');
  t.ok(isAlive(pid));
  await h.runtime.stop();
  await running;
  await waitFor(() => !isAlive(pid), 5_000, 'the exec to be killed');
  const port = Number(new URL(url).port);
  const refused = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
  t.ok(refused, 'the streaming server no longer listens');
});

t.test('after the status the server neither sends GOAWAY nor closes: the client closes (its late writes do not fail)', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  const sandbox = sandboxConfig('linger');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const containerId = await h.rs.createContainer(sandboxId, { ...containerConfig('app', []), logPath: '' }, sandbox);
  await h.rs.startContainer(containerId);
  const { url } = await h.rs.exec({ containerId, cmd: ['echo', 'hi'], stdin: true, stdout: true, tty: true });
  const { spdy } = await upgrade(url);
  let goaway = false;
  spdy!.on('goaway', () => (goaway = true));
  const error = await spdy!.createStream({ streamtype: ['error'] });
  const stdin = await spdy!.createStream({ streamtype: ['stdin'] });
  const stdout = await spdy!.createStream({ streamtype: ['stdout'] });
  const resize = await spdy!.createStream({ streamtype: ['resize'] });
  const [out, status] = await Promise.all([readAll(stdout), readAll(error)]);
  t.same([out, status], ['hi\n', '{"metadata":{},"status":"Success"}']);
  // As kubectl's stdin copy and terminal resizes do, still running after the command ended.
  await stdin.write('late input\n');
  await resize.write('{"Width":80,"Height":24}');
  await spdy!.ping();
  t.ok(spdy!.isOpen, 'the connection is still open: the server answered a ping after the status');
  t.notOk(goaway, 'no GOAWAY');
  await spdy!.close();
});

t.test('port-forward: pairs of error and data streams on one connection, to 127.0.0.1:<port> in process mode', async (t) => {
  const h = await startRuntime(t, { mode: 'process' });
  const echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  t.teardown(() => echo.close());
  const port = (echo.address() as AddressInfo).port;
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));

  const sandbox = sandboxConfig('forwarded');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const { url } = await h.rs.portForward({ podSandboxId: sandboxId, port: [port] });
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/portforward\/[A-Za-z0-9_-]{8}$/);
  const wrong = await upgrade(url);
  t.equal(wrong.status, 403, 'remotecommand protocols are not port-forward');
  t.match(wrong.body, 'server accepts [portforward.k8s.io]');
  const fresh = await h.rs.portForward({ podSandboxId: sandboxId, port: [port] });
  const up = await upgrade(fresh.url, { protocols: ['portforward.k8s.io'] });
  t.equal(up.status, 101);
  const spdy = up.spdy!;

  // As kubectl: the error stream (closed at once on the client's side), then the data stream.
  const forward = async (to: number, requestId: string, payload: string) => {
    const headers = { port: [String(to)], requestid: [requestId] };
    const error = await spdy.createStream({ streamtype: ['error'], ...headers });
    await error.end();
    const data = await spdy.createStream({ streamtype: ['data'], ...headers });
    await data.write(payload);
    await data.end();
    return Promise.all([readAll(data), readAll(error)]);
  };
  t.same(await forward(port, '0', 'ping\n'), ['ping\n', ''], 'echoed through the forwarded connection');
  t.same(await forward(port, '1', 'again\n'), ['again\n', ''], 'a second connection on the same SPDY connection');
  const [data, error] = await forward(closedPort, '2', 'x');
  t.equal(data, '');
  t.equal(error, `error forwarding port ${closedPort} to pod ${sandboxId}, uid : failed to connect to localhost:${closedPort} inside namespace "${sandboxId}": dial tcp4 127.0.0.1:${closedPort}: connect: connection refused`);
  await t.rejects(spdy.createStream({ streamtype: ['data'], port: ['0'], requestid: ['3'] }), /reset by peer/, 'port 0 is refused');
  await t.rejects(spdy.createStream({ streamtype: ['bogus'], port: ['80'], requestid: ['4'] }), /reset by peer/, 'an unknown stream type is refused');
  await spdy.close();

  await t.rejects(h.rs.portForward({ podSandboxId: 'nope', port: [80] }), { code: 'NotFound' });
  await h.rs.stopPodSandbox(sandboxId);
  await t.rejects(h.rs.portForward({ podSandboxId: sandboxId, port: [80] }), { code: 'FailedPrecondition' });
});

t.test('port-forward to a simulated pod: refused on the error stream', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  const sandbox = sandboxConfig('sim-forward');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const { url } = await h.rs.portForward({ podSandboxId: sandboxId, port: [80] });
  const { spdy } = await upgrade(url, { protocols: ['portforward.k8s.io'] });
  const error = await spdy!.createStream({ streamtype: ['error'], port: ['80'], requestid: ['0'] });
  const data = await spdy!.createStream({ streamtype: ['data'], port: ['80'], requestid: ['0'] });
  const [out, message] = await Promise.all([readAll(data), readAll(error)]);
  t.equal(out, '');
  t.match(message, /^error forwarding port 80 to pod [0-9a-f]{64}, uid : failed to connect to localhost:80 inside namespace .*connection refused/);
  await spdy!.close();
});
