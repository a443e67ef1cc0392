import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseCriLogLine } from '@kubelet-ts/cri-client';
import { LOCAL_RUNTIME_VERSION } from '../src/index.js';
import { liveGroupMembers } from '../src/procfs.js';
import { isAlive, runContainer, startRuntime, waitExited, waitFor } from './helpers.js';

const readLog = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => parseCriLogLine(line));

t.test('version and status', async (t) => {
  const h = await startRuntime(t);
  const version = await h.rs.version('v1');
  t.same(version, { version: '0.1.0', runtimeName: 'local-runtime', runtimeVersion: LOCAL_RUNTIME_VERSION, runtimeApiVersion: 'v1' });
  const status = await h.rs.status();
  t.same(
    status.status?.conditions.map((c) => [c.type, c.status]),
    [
      ['RuntimeReady', true],
      ['NetworkReady', true],
    ],
  );
  await h.rs.updateRuntimeConfig({ networkConfig: { podCidr: '10.1.0.0/24' } });
  t.equal(h.runtime.podCIDR, '10.1.0.0/24');
  t.equal(h.runtime.endpoint, `unix://${join(h.dir, 'cri.sock')}`);
});

t.test('a container runs, exits with its code and logs both streams in CRI format', async (t) => {
  const h = await startRuntime(t);
  const { sandboxId, containerId } = await runContainer(h, 'app', ['sh', '-c', 'echo hello; echo oops >&2; exit 3'], {
    envs: [{ key: 'GREETING', value: 'hi' }],
  });
  const status = await waitExited(h, containerId);
  t.equal(status.exitCode, 3);
  t.equal(status.reason, 'Error');
  t.ok(status.createdAt > 0 && status.startedAt >= status.createdAt && status.finishedAt >= status.startedAt, 'timestamps ordered');
  t.same(status.metadata, { name: 'app', attempt: 0 });
  t.same(status.labels, { 'io.kubernetes.container.name': 'app' });
  t.same(status.annotations, { 'io.kubernetes.container.hash': 'abc' });
  t.equal(status.image?.image, 'busybox');
  t.match(status.imageRef, /^sha256:[0-9a-f]{64}$/);
  t.equal(status.logPath, join(h.logDir, 'app', 'app/0.log'));
  const records = readLog(status.logPath);
  t.same(
    records.map((r) => [r.stream, r.tag, r.text]).sort(),
    [
      ['stderr', 'F', 'oops'],
      ['stdout', 'F', 'hello'],
    ],
  );
  const sandbox = await h.rs.podSandboxStatus(sandboxId);
  t.equal(sandbox.status?.state, 'SANDBOX_READY');
  t.equal(sandbox.containersStatuses.length, 1);
  t.equal(sandbox.containersStatuses[0].state, 'CONTAINER_EXITED');
});

t.test('exit 0 is Completed; env and working dir are applied; a partial line is written as F', async (t) => {
  const h = await startRuntime(t);
  const { containerId } = await runContainer(h, 'env', ['sh', '-c', 'echo "$GREETING"; pwd; printf no-newline'], {
    envs: [{ key: 'GREETING', value: 'hi there' }],
    workingDir: '/tmp',
  });
  const status = await waitExited(h, containerId);
  t.equal(status.exitCode, 0);
  t.equal(status.reason, 'Completed');
  const records = readLog(status.logPath);
  t.same(
    records.map((r) => [r.tag, r.text]),
    [
      ['F', 'hi there'],
      ['F', '/tmp'],
      ['F', 'no-newline'],
    ],
  );
});

t.test('death by signal reports 128 + signal', async (t) => {
  const h = await startRuntime(t);
  const { containerId } = await runContainer(h, 'selfkill', ['sh', '-c', 'kill -9 $$']);
  const status = await waitExited(h, containerId);
  t.equal(status.exitCode, 137);
  t.equal(status.reason, 'Error');
});

t.test('a command that cannot run fails StartContainer and leaves the container exited', async (t) => {
  const h = await startRuntime(t);
  await t.rejects(runContainer(h, 'missing', ['/nonexistent/binary']), /executable file not found/);
  const [container] = await h.rs.listContainers();
  const { status } = await h.rs.containerStatus(container.id);
  t.equal(status?.state, 'CONTAINER_EXITED');
  t.equal(status?.reason, 'StartError');
  t.equal(status?.exitCode, 128);
});

t.test('stop sends SIGTERM then SIGKILL after the timeout', async (t) => {
  const h = await startRuntime(t);
  const { containerId } = await runContainer(h, 'stubborn', ['sh', '-c', 'trap "" TERM; echo ready; while true; do sleep 0.1; done']);
  const { status: running } = await h.rs.containerStatus(containerId);
  t.equal(running?.state, 'CONTAINER_RUNNING');
  await waitFor(() => readLog(running!.logPath).length > 0, 5000, 'ready line');
  const started = Date.now();
  await h.rs.stopContainer(containerId, 1);
  const elapsed = Date.now() - started;
  t.ok(elapsed >= 900, `waited for the timeout (${elapsed} ms)`);
  const { status } = await h.rs.containerStatus(containerId);
  t.equal(status?.state, 'CONTAINER_EXITED');
  t.equal(status?.exitCode, 137, 'killed by SIGKILL');
  // Idempotent on an exited container.
  await h.rs.stopContainer(containerId, 1);
  t.notOk(isAlive(h.runtime.processIds[0]));
});

t.test('stop with a TERM-respecting process returns promptly; timeout 0 kills at once', async (t) => {
  const h = await startRuntime(t);
  const polite = await runContainer(h, 'polite', ['sleep', '30']);
  const started = Date.now();
  await h.rs.stopContainer(polite.containerId, 10);
  t.ok(Date.now() - started < 5000, 'did not wait for the timeout');
  t.equal((await h.rs.containerStatus(polite.containerId)).status?.exitCode, 143);
  const stubborn = await runContainer(h, 'stubborn', ['sh', '-c', 'trap "" TERM; sleep 30']);
  await h.rs.stopContainer(stubborn.containerId, 0);
  t.equal((await h.rs.containerStatus(stubborn.containerId)).status?.exitCode, 137);
});

t.test('exec sync returns output and exit code, honours the timeout', async (t) => {
  const h = await startRuntime(t);
  const { containerId } = await runContainer(h, 'srv', ['sleep', '30'], { envs: [{ key: 'FOO', value: 'bar' }] });
  const ok = await h.rs.execSync(containerId, ['sh', '-c', 'echo "$FOO"; echo err >&2; exit 7'], 0);
  t.equal(ok.stdout.toString(), 'bar\n');
  t.equal(ok.stderr.toString(), 'err\n');
  t.equal(ok.exitCode, 7);
  const missing = await h.rs.execSync(containerId, ['no-such-binary-xyz'], 5);
  t.equal(missing.exitCode, 127);
  t.match(missing.stderr.toString(), /executable file not found/);
  const started = Date.now();
  await t.rejects(h.rs.execSync(containerId, ['sleep', '10'], 1), { code: 'DeadlineExceeded' });
  t.ok(Date.now() - started < 5000, 'timed out after about a second');
  await h.rs.stopContainer(containerId, 0);
  await t.rejects(h.rs.execSync(containerId, ['true'], 1), { code: 'FailedPrecondition' });
});

t.test('long lines are split into 16 KiB partial records', async (t) => {
  const h = await startRuntime(t);
  const { containerId } = await runContainer(h, 'long', ['sh', '-c', 'head -c 40000 /dev/zero | tr "\\0" x; echo; echo short']);
  const status = await waitExited(h, containerId);
  const records = readLog(status.logPath);
  t.same(
    records.map((r) => [r.tag, r.text.length]),
    [
      ['P', 16384],
      ['P', 16384],
      ['F', 40000 - 2 * 16384],
      ['F', 5],
    ],
  );
});

t.test('stats report cpu and memory of running processes', async (t) => {
  const h = await startRuntime(t);
  const { sandboxId, containerId } = await runContainer(h, 'busy', ['sleep', '30']);
  const stats = await h.rs.containerStats(containerId);
  t.equal(stats.attributes?.id, containerId);
  t.ok(Number(stats.cpu?.timestamp) > 0);
  if (process.platform === 'linux') t.ok(Number(stats.memory?.workingSetBytes?.value) > 0, 'rss read from /proc');
  t.equal((await h.rs.listContainerStats()).length, 1);
  const podStats = await h.rs.podSandboxStats(sandboxId);
  t.equal(podStats.linux?.containers.length, 1);
  t.equal((await h.rs.listPodSandboxStats()).length, 1);
  await t.rejects(h.rs.containerStats('nope'), { code: 'NotFound' });
});

t.test('reopen container log and update resources', async (t) => {
  const h = await startRuntime(t);
  const { containerId } = await runContainer(h, 'rot', ['sh', '-c', 'echo one; sleep 0.3; echo two; sleep 30']);
  await h.rs.updateContainerResources(containerId, { linux: { cpuShares: 512, memoryLimitInBytes: 1 << 26 } });
  const { status } = await h.rs.containerStatus(containerId);
  t.equal(Number(status?.resources?.linux?.cpuShares), 512);
  await waitFor(() => readLog(status!.logPath).length === 1, 5000, 'first line');
  const { renameSync } = await import('node:fs');
  renameSync(status!.logPath, `${status!.logPath}.1`);
  await h.rs.reopenContainerLog(containerId);
  await waitFor(() => {
    try {
      return readLog(status!.logPath).length === 1;
    } catch {
      return false;
    }
  }, 5000, 'second line in the new file');
  t.same(readLog(status!.logPath).map((r) => r.text), ['two']);
  t.same(readLog(`${status!.logPath}.1`).map((r) => r.text), ['one']);
});

t.test('stop() kills every process it started, even ones ignoring SIGTERM', async (t) => {
  const h = await startRuntime(t, { stopGracePeriodMs: 300 });
  await runContainer(h, 'a', ['sleep', '30']);
  await runContainer(h, 'b', ['sh', '-c', 'trap "" TERM; sleep 30 & wait; sleep 30']);
  await runContainer(h, 'c', ['sh', '-c', 'sleep 30 & sleep 30']);
  const pids = h.runtime.processIds;
  t.equal(pids.length, 3);
  for (const pid of pids) t.ok(isAlive(pid), `pid ${pid} running`);
  h.rs.close();
  h.is.close();
  await h.runtime.stop();
  for (const pid of pids) t.notOk(isAlive(pid), `pid ${pid} gone`);
  // The process groups are gone too (the children of sh); killed members may linger as zombies until
  // their new parent reaps them, which is fine.
  if (process.platform === 'linux') {
    for (const pid of pids) t.same(liveGroupMembers(pid), [], `group ${pid} gone`);
  }
});
