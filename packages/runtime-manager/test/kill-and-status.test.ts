import t from 'tap';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { formatCriLogLine } from '@kubelet-ts/cri-client';
import { GenericRuntimeManager, convertPodStatusToRunningPod, hashContainer, type CriSandboxStatus } from '../src/index.js';
import { makePod, setup } from './helpers.js';

async function runningPodFor(setupResult: ReturnType<typeof setup>, pod = makePod()) {
  const { manager, backoff } = setupResult;
  await manager.syncPod(pod, await manager.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!), [], backoff);
  const pods = await manager.getPods(false);
  return pods.find((p) => p.id === pod.metadata!.uid)!;
}

const stopCalls = (runtime: { calls: { method: string; args: unknown[] }[] }) =>
  runtime.calls.filter((c) => c.method === 'stopContainer').map((c) => c.args as [string, number]);

t.test('KillPod stops every container with the pod grace period, then every sandbox', async (t) => {
  const s = setup();
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }], terminationGracePeriodSeconds: 45 });
  const running = await runningPodFor(s, pod);
  s.runtime.resetCalls();
  await s.manager.killPod(pod, running);
  t.same(stopCalls(s.runtime).sort(), [['a_web_default_uid-1_0_0', 45], ['b_web_default_uid-1_0_0', 45]]);
  const last = s.runtime.called.filter((m) => m === 'stopContainer' || m === 'stopPodSandbox');
  t.same(last, ['stopContainer', 'stopContainer', 'stopPodSandbox'], 'sandboxes after containers');
  t.ok(s.recorder.events.some((e) => e.reason === 'Killing' && e.message === 'Stopping container a'));
  const status = await s.manager.getPodStatus('uid-1', 'web', 'default');
  t.same(status.sandboxStatuses.map((x) => x.state), ['SANDBOX_NOTREADY']);
});

t.test('grace periods: override wins, deletionGracePeriodSeconds beats the spec, at least 2 s', async (t) => {
  {
    const s = setup();
    const pod = makePod();
    const running = await runningPodFor(s, pod);
    s.runtime.resetCalls();
    await s.manager.killPod(pod, running, 5);
    t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 5]], 'override');
  }
  {
    const s = setup();
    const pod = makePod();
    const running = await runningPodFor(s, pod);
    pod.metadata!.deletionGracePeriodSeconds = 12;
    s.runtime.resetCalls();
    await s.manager.killPod(pod, running);
    t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 12]], 'deletion grace period');
  }
  {
    const s = setup();
    const pod = makePod({ terminationGracePeriodSeconds: 0 });
    const running = await runningPodFor(s, pod);
    s.runtime.resetCalls();
    await s.manager.killPod(pod, running, 0);
    t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 2]], 'minimum 2 s');
  }
  t.equal(GenericRuntimeManager.terminationGracePeriod(makePod(), undefined, 'Unknown'), 30);
  const probed = makePod({ containers: [{ name: 'app', livenessProbe: { exec: { command: ['x'] }, terminationGracePeriodSeconds: 7 } }] });
  t.equal(GenericRuntimeManager.terminationGracePeriod(probed, probed.spec!.containers[0], 'LivenessProbe'), 7, 'probe-level grace for probe kills');
  t.equal(GenericRuntimeManager.terminationGracePeriod({ metadata: {}, spec: { containers: [] } }, undefined, ''), 2);
});

t.test('an orphan pod (no spec) takes its grace period and preStop hook from the annotations', async (t) => {
  const s = setup();
  const pod = makePod({ terminationGracePeriodSeconds: 20, containers: [{ name: 'app', lifecycle: { preStop: { exec: { command: ['/bin/drain'] } } } }] });
  const running = await runningPodFor(s, pod);
  s.runtime.resetCalls();
  await s.manager.killPod(undefined, running);
  t.same(
    s.runtime.calls.find((c) => c.method === 'execSync')?.args.slice(0, 2),
    ['app_web_default_uid-1_0_0', ['/bin/drain']],
    'preStop restored from the annotation',
  );
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 20]]);
});

t.test('a preStop hook runs within the grace period and uses up part of it', async (t) => {
  const s = setup();
  const pod = makePod({ terminationGracePeriodSeconds: 30, containers: [{ name: 'app', lifecycle: { preStop: { sleep: { seconds: 12 } } } }] });
  const running = await runningPodFor(s, pod);
  s.runtime.resetCalls();
  const killing = s.manager.killPod(pod, running);
  await s.clock.advance(12_000);
  await killing;
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 18]]);
  t.equal(s.clock.pendingTimers(), 0, 'no timer left behind');
});

t.test('a preStop hook longer than the grace period is cut off', async (t) => {
  const s = setup();
  const pod = makePod({ terminationGracePeriodSeconds: 5, containers: [{ name: 'app', lifecycle: { preStop: { sleep: { seconds: 100 } } } }] });
  const running = await runningPodFor(s, pod);
  s.runtime.resetCalls();
  const killing = s.manager.killPod(pod, running);
  await s.clock.advance(5_000);
  await killing;
  t.same(stopCalls(s.runtime), [['app_web_default_uid-1_0_0', 2]], 'the minimum is left after the hook ate the grace period');
  t.equal(s.clock.pendingTimers(), 0);
});

t.test('KillPod reports failures; NotFound containers and sandboxes are fine', async (t) => {
  const s = setup();
  const pod = makePod();
  const running = await runningPodFor(s, pod);
  s.runtime.injectError('stopContainer', 'NotFound');
  s.runtime.injectError('stopPodSandbox', 'NotFound');
  await s.manager.killPod(pod, running);
  s.runtime.injectError('stopContainer', 'DeadlineExceeded');
  await t.rejects(s.manager.killPod(pod, running), /failed to "KillContainer" for "app" with KillContainerError/);
  s.runtime.injectError('stopPodSandbox', 'Unavailable');
  const result = await s.manager.killPodWithSyncResult(pod, running);
  t.equal(result.syncResults.find((r) => r.action === 'KillPodSandbox')?.error, 'KillPodSandboxError');
});

t.test('GetPodStatus maps sandboxes, IPs and container statuses', async (t) => {
  const s = setup();
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }] });
  await runningPodFor(s, pod);
  s.clock.step(1500);
  s.runtime.setContainerState('b_web_default_uid-1_0_0', 'CONTAINER_EXITED', 3, 'Error');
  const status = await s.manager.getPodStatus('uid-1', 'web', 'default');
  t.equal(status.id, 'uid-1');
  t.equal(status.name, 'web');
  t.equal(status.namespace, 'default');
  t.same(status.ips, ['192.168.192.168']);
  t.equal(status.timestamp, s.clock.now());
  t.equal(status.sandboxStatuses.length, 1);
  const sandbox = status.sandboxStatuses[0] as CriSandboxStatus;
  t.match(sandbox, { id: 'web_default_uid-1_0', uid: 'uid-1', attempt: 0, state: 'SANDBOX_READY', ip: '192.168.192.168', networkNamespace: 'POD' });
  const a = status.containerStatuses.find((c) => c.name === 'a')!;
  const b = status.containerStatuses.find((c) => c.name === 'b')!;
  t.same(a.id, { type: 'fakeRuntime', id: 'a_web_default_uid-1_0_0' });
  t.equal(a.state, 'running');
  t.equal(a.image, 'sha256:busybox');
  t.equal(a.hash, hashContainer(pod.spec!.containers[0]), 'hash from the annotation');
  t.equal(a.restartCount, 0);
  t.equal(a.logPath, '/logs/default_web_uid-1/a/0.log');
  t.equal(b.state, 'exited');
  t.equal(b.exitCode, 3);
  t.equal(b.reason, 'Error');
  t.equal(b.finishedAt, s.clock.now());
  t.ok(b.startedAt !== undefined);
});

t.test('GetPodStatus: IPs only from a ready newest sandbox; sandboxes newest first', async (t) => {
  const s = setup();
  const pod = makePod();
  await runningPodFor(s, pod);
  await s.runtime.stopPodSandbox('web_default_uid-1_0');
  let status = await s.manager.getPodStatus('uid-1', 'web', 'default');
  t.same(status.ips, []);
  s.clock.step(1000);
  await s.manager.syncPod(pod, status, [], s.backoff);
  status = await s.manager.getPodStatus('uid-1', 'web', 'default');
  t.same(status.sandboxStatuses.map((x) => `${x.id}:${x.state}`), ['web_default_uid-1_1:SANDBOX_READY', 'web_default_uid-1_0:SANDBOX_NOTREADY']);
  t.same(status.ips, ['192.168.192.168']);
});

t.test('termination messages: from the mounted file, or the log tail with FallbackToLogsOnError', async (t) => {
  const s = setup({ kubeletRootDirectory: '/var/lib/kubelet' });
  const pod = makePod({
    containers: [
      { name: 'file', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' },
      { name: 'logs', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'FallbackToLogsOnError' },
    ],
  });
  await runningPodFor(s, pod);
  // The fake runtime does not echo mounts into statuses; a real one does.
  for (const [id, entry] of s.runtime.containers) {
    entry.status.mounts = (entry.config.mounts ?? []).map((m) => ({ containerPath: m.containerPath ?? '', hostPath: m.hostPath ?? '' })) as runtimeapi.Mount[];
    const mount = entry.status.mounts.find((m) => m.containerPath === '/dev/termination-log')!;
    if (id.startsWith('file_')) s.fs.write(mount.hostPath, 'disk full');
  }
  s.fs.write(
    '/logs/default_web_uid-1/logs/0.log',
    [formatCriLogLine(0, 'stdout', 'F', 'starting'), 'not a CRI log line\n', formatCriLogLine(0, 'stderr', 'P', 'panic: '), formatCriLogLine(0, 'stderr', 'F', 'oops')].join(''),
  );
  s.runtime.setContainerState('file_web_default_uid-1_0_0', 'CONTAINER_EXITED', 1, 'Error');
  s.runtime.setContainerState('logs_web_default_uid-1_0_0', 'CONTAINER_EXITED', 2, 'Error');
  const status = await s.manager.getPodStatus('uid-1', 'web', 'default');
  t.equal(status.containerStatuses.find((c) => c.name === 'file')?.message, 'disk full');
  t.equal(status.containerStatuses.find((c) => c.name === 'logs')?.message, 'starting\npanic: oops\n');
  const malformed = s.logger.find('Failed when parsing line in log file');
  t.equal(malformed?.level, 'error', 'a malformed log line is skipped and logged through the manager\'s logger, naming the file');
  t.equal(malformed?.kv.path, '/logs/default_web_uid-1/logs/0.log');
  t.match((malformed?.err as Error).message, /at line 2/);
});

t.test('GetPods groups containers and sandboxes by pod uid; all includes exited ones', async (t) => {
  const s = setup();
  await runningPodFor(s, makePod({ name: 'one', uid: 'u1', containers: [{ name: 'a' }, { name: 'b' }] }));
  s.clock.step(1000);
  await runningPodFor(s, makePod({ name: 'two', uid: 'u2', namespace: 'kube-system' }));
  s.runtime.setContainerState('b_one_default_u1_0_0', 'CONTAINER_EXITED', 0);

  const running = await s.manager.getPods(false);
  t.same(running.map((p) => p.id), ['u2', 'u1'], 'newest pod first');
  const one = running.find((p) => p.id === 'u1')!;
  t.equal(one.name, 'one');
  t.equal(one.namespace, 'default');
  t.same(one.containers.map((c) => c.name), ['a'], 'only running containers');
  t.same(one.sandboxes.map((x) => x.id), [{ type: 'fakeRuntime', id: 'one_default_u1_0' }]);
  t.equal(one.containers[0].hash.length > 0, true);

  const all = await s.manager.getPods(true);
  t.same(all.find((p) => p.id === 'u1')!.containers.map((c) => `${c.name}:${c.state}`).sort(), ['a:running', 'b:exited']);
  t.equal(s.manager.type(), 'fakeRuntime');
});

t.test('the runtime name comes from Version once', async (t) => {
  const s = setup();
  t.equal(s.manager.type(), '');
  await s.manager.init();
  await s.manager.getPods(true);
  await s.manager.getPodStatus('x', 'y', 'z');
  t.equal(s.manager.type(), 'fakeRuntime');
  t.equal(s.runtime.called.filter((m) => m === 'version').length, 1);
  t.same(await s.manager.version(), { runtimeName: 'fakeRuntime', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' });
  t.same((await s.manager.status()).conditions.map((c) => c.type), ['RuntimeReady', 'NetworkReady']);
});

t.test('a failed Version is retried by the next call', async (t) => {
  const s = setup();
  s.runtime.injectError('version', 'Unavailable');
  await t.rejects(s.manager.getPods(true));
  t.same(await s.manager.getPods(true), []);
  t.equal(s.manager.type(), 'fakeRuntime');
});

t.test('convertPodStatusToRunningPod keeps running containers and every sandbox', async (t) => {
  const s = setup();
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }] });
  await runningPodFor(s, pod);
  s.runtime.setContainerState('a_web_default_uid-1_0_0', 'CONTAINER_EXITED', 0);
  const running = convertPodStatusToRunningPod('fakeRuntime', await s.manager.getPodStatus('uid-1', 'web', 'default'));
  t.same(running.containers.map((c) => c.name), ['b']);
  t.same(running.sandboxes.map((x) => `${x.id.type}://${x.id.id}:${x.state}`), ['fakeRuntime://web_default_uid-1_0:running']);
});

t.test('generatePodStatus builds a status from a container event', async (t) => {
  const s = setup();
  await runningPodFor(s, makePod());
  const sandbox = (await s.runtime.podSandboxStatus('web_default_uid-1_0')).status!;
  const container = (await s.runtime.containerStatus('app_web_default_uid-1_0_0')).status!;
  const status = await s.manager.generatePodStatus({
    containerId: container.id,
    containerEventType: 'CONTAINER_STARTED_EVENT',
    createdAt: s.clock.now() * 1e6,
    podSandboxStatus: sandbox,
    containersStatuses: [container],
  });
  t.match(status, { id: 'uid-1', name: 'web', namespace: 'default', ips: ['192.168.192.168'] });
  t.same(status.containerStatuses.map((c) => `${c.name}:${c.state}`), ['app:running']);
});

t.test('updatePodCIDR hands the CIDR to the runtime with UpdateRuntimeConfig (Go: UpdatePodCIDR)', async (t) => {
  const s = setup();
  await s.manager.updatePodCIDR('10.244.1.0/24,fd00:1::/64');
  const calls = s.runtime.calls.filter((c) => c.method === 'updateRuntimeConfig');
  t.same(calls.map((c) => c.args[0]), [{ networkConfig: { podCidr: '10.244.1.0/24,fd00:1::/64' } }]);
  t.ok(s.logger.find('Updating runtime config through cri with podcidr'));
});
