import t from 'tap';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { podSyncError } from '@kubelet-ts/core';
import {
  CONTAINER_HASH_LABEL,
  CONTAINER_RESTART_COUNT_LABEL,
  CONTAINER_TERMINATION_MESSAGE_PATH_LABEL,
  CONTAINER_PORTS_LABEL,
  CONTAINER_PRE_STOP_HANDLER_LABEL,
  POD_TERMINATION_GRACE_PERIOD_LABEL,
  hashContainer,
} from '../src/index.js';
import { makePod, setup } from './helpers.js';

type CreateArgs = [string, runtimeapi.ContainerConfigInit, runtimeapi.PodSandboxConfigInit];

function createCalls(runtime: { calls: { method: string; args: unknown[] }[] }): CreateArgs[] {
  return runtime.calls.filter((c) => c.method === 'createContainer').map((c) => c.args as CreateArgs);
}

t.test('a fresh pod: sandbox, then init containers one sync at a time, then app containers', async (t) => {
  const { manager, runtime, backoff, recorder, fs } = setup();
  const pod = makePod({ initContainers: [{ name: 'init1' }, { name: 'init2' }], containers: [{ name: 'a' }, { name: 'b' }] });

  let status = await manager.getPodStatus('uid-1', 'web', 'default');
  let result = await manager.syncPod(pod, status, [], backoff);
  t.equal(podSyncError(result), undefined, 'first sync succeeds');
  t.same(
    result.syncResults.map((r) => `${r.action}:${r.target}`),
    ['KillPodSandbox:uid-1', 'CreatePodSandbox:web_default(uid-1)', 'ConfigPodSandbox:web_default_uid-1_0', 'StartContainer:init1'],
  );
  t.equal(runtime.sandboxes.size, 1);
  const sandboxConfig = runtime.calls.find((c) => c.method === 'runPodSandbox')!.args[0] as runtimeapi.PodSandboxConfigInit;
  t.same(sandboxConfig.metadata, { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 });
  t.equal(sandboxConfig.logDirectory, '/logs/default_web_uid-1');
  t.ok(fs.dirs.has('/logs/default_web_uid-1'), 'pod log directory created');
  t.equal(sandboxConfig.hostname, 'web');
  t.same(sandboxConfig.labels, { app: 'web', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': 'uid-1' });
  t.same(sandboxConfig.annotations, { note: 'yes' });
  t.same(sandboxConfig.linux?.securityContext?.namespaceOptions, { network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
  t.same(createCalls(runtime).map(([, c]) => c.metadata?.name), ['init1'], 'only the first init container');

  // init1 is running: nothing new to start
  status = await manager.getPodStatus('uid-1', 'web', 'default');
  result = await manager.syncPod(pod, status, [], backoff);
  t.same(result.syncResults.map((r) => r.action), ['ConfigPodSandbox']);

  // init1 completes: init2 starts
  runtime.setContainerState('init1_web_default_uid-1_0_0', 'CONTAINER_EXITED', 0);
  status = await manager.getPodStatus('uid-1', 'web', 'default');
  result = await manager.syncPod(pod, status, [], backoff);
  t.same(createCalls(runtime).map(([, c]) => c.metadata?.name), ['init1', 'init2']);

  // init2 completes: both app containers start in order
  runtime.setContainerState('init2_web_default_uid-1_0_0', 'CONTAINER_EXITED', 0);
  status = await manager.getPodStatus('uid-1', 'web', 'default');
  result = await manager.syncPod(pod, status, [], backoff);
  t.equal(podSyncError(result), undefined);
  t.same(createCalls(runtime).map(([, c]) => c.metadata?.name), ['init1', 'init2', 'a', 'b']);
  t.same(
    runtime.called.filter((m) => m === 'createContainer' || m === 'startContainer').length,
    8,
    'every created container was started',
  );

  status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.same(
    status.containerStatuses.filter((c) => c.state === 'running').map((c) => c.name).sort(),
    ['a', 'b'],
  );
  t.ok(recorder.reasons().includes('Created') && recorder.reasons().includes('Started'));
  const started = recorder.events.find((e) => e.reason === 'Started' && e.message === 'Started container a');
  t.equal(started?.details?.fieldPath, 'spec.containers{a}');
  t.ok(recorder.events.some((e) => e.message === 'Created container: init1' && e.details?.fieldPath === 'spec.initContainers{init1}'));

  // a steady pod needs nothing
  runtime.resetCalls();
  result = await manager.syncPod(pod, status, [], backoff);
  t.same(runtime.called.filter((m) => m === 'createContainer' || m === 'stopContainer'), []);
});

t.test('the container config: labels, annotations, log path, env expansion, command, resources, security', async (t) => {
  const { manager, runtime, backoff } = setup();
  const pod = makePod({
    containers: [
      {
        name: 'app',
        command: ['/bin/sh', '-c'],
        args: ['echo $(GREETING) from $(POD_NAME) at $(POD_IP) $$(ESCAPED) $(MISSING)'],
        workingDir: '/work',
        tty: true,
        stdin: true,
        env: [
          { name: 'NAME', value: 'world' },
          { name: 'GREETING', value: 'hello $(NAME)' },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
          { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          { name: 'APP_LABEL', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
          { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
        ],
        ports: [{ containerPort: 8080, hostPort: 18080, protocol: 'TCP' }],
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        lifecycle: { preStop: { exec: { command: ['sleep', '1'] } } },
        resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
        securityContext: { privileged: true, runAsUser: 1000, runAsGroup: 2000, readOnlyRootFilesystem: true, capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } },
      },
    ],
  });
  pod.spec!.nodeName = 'node-1';
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(podSyncError(result), undefined);

  const [[sandboxId, config, sandboxConfig]] = createCalls(runtime);
  t.equal(sandboxId, 'web_default_uid-1_0');
  t.same(sandboxConfig.portMappings, [{ protocol: 'TCP', containerPort: 8080, hostPort: 18080, hostIp: '' }]);
  t.equal(sandboxConfig.linux?.securityContext?.privileged, true, 'a privileged container needs a privileged sandbox');
  t.same(config.metadata, { name: 'app', attempt: 0 });
  t.same(config.image, { image: 'sha256:busybox', userSpecifiedImage: 'busybox:1.36' });
  t.same(config.labels, {
    'io.kubernetes.pod.name': 'web',
    'io.kubernetes.pod.namespace': 'default',
    'io.kubernetes.pod.uid': 'uid-1',
    'io.kubernetes.container.name': 'app',
  });
  const annotations = config.annotations!;
  t.equal(annotations[CONTAINER_HASH_LABEL], hashContainer(pod.spec!.containers[0]));
  t.equal(annotations[CONTAINER_RESTART_COUNT_LABEL], '0');
  t.equal(annotations[CONTAINER_TERMINATION_MESSAGE_PATH_LABEL], '/dev/termination-log');
  t.equal(annotations['io.kubernetes.container.terminationMessagePolicy'], 'File');
  t.equal(annotations[POD_TERMINATION_GRACE_PERIOD_LABEL], '30');
  t.same(JSON.parse(annotations[CONTAINER_PRE_STOP_HANDLER_LABEL]), { exec: { command: ['sleep', '1'] } });
  t.same(JSON.parse(annotations[CONTAINER_PORTS_LABEL]), [{ containerPort: 8080, hostPort: 18080, protocol: 'TCP' }]);
  t.equal(config.logPath, 'app/0.log');
  t.same(config.command, ['/bin/sh', '-c']);
  t.same(config.args, ['echo hello world from web at 192.168.192.168 $(ESCAPED) $(MISSING)']);
  t.equal(config.workingDir, '/work');
  t.equal(config.tty, true);
  t.equal(config.stdin, true);
  const env = Object.fromEntries((config.envs ?? []).map((e) => [e.key, e.value]));
  t.same(env, {
    NAME: 'world',
    GREETING: 'hello world',
    POD_NAME: 'web',
    POD_NS: 'default',
    POD_UID: 'uid-1',
    POD_IP: '192.168.192.168',
    NODE: 'node-1',
    APP_LABEL: 'web',
    MEM: '128',
  });
  t.match(config.linux?.resources, { cpuShares: 256, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitInBytes: 128 * 1024 * 1024 });
  const sc = config.linux?.securityContext;
  t.equal(sc?.privileged, true);
  t.same(sc?.runAsUser, { value: 1000 });
  t.same(sc?.runAsGroup, { value: 2000 });
  t.equal(sc?.readonlyRootfs, true);
  t.same(sc?.capabilities, { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] });
  t.same(sc?.namespaceOptions, { network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
});

t.test('a hostNetwork pod gets an empty hostname and the node network namespace, and stays up', async (t) => {
  const { manager, runtime, backoff } = setup();
  const pod = makePod({ hostNetwork: true });
  pod.spec!.hostPID = true;
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const config = runtime.calls.find((c) => c.method === 'runPodSandbox')!.args[0] as runtimeapi.PodSandboxConfigInit;
  t.equal(config.hostname, '');
  t.same(config.linux?.securityContext?.namespaceOptions, { network: 'NODE', pid: 'NODE', ipc: 'POD' });
  const [[, containerConfig]] = createCalls(runtime);
  t.same(containerConfig.envs, []);

  runtime.resetCalls();
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.same(status.ips, [], 'a host-network sandbox has no pod IP of its own');
  const result = await manager.syncPod(pod, status, [], backoff);
  t.same(result.syncResults.map((r) => r.action), ['ConfigPodSandbox'], 'the sandbox is not recreated');
  t.notOk(runtime.called.includes('runPodSandbox'));
});

t.test('a dead sandbox is killed and recreated with the next attempt; init containers are purged', async (t) => {
  const { manager, runtime, backoff, recorder } = setup();
  const pod = makePod({ initContainers: [{ name: 'init' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  runtime.setContainerState('init_web_default_uid-1_0_0', 'CONTAINER_EXITED', 0);
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  await runtime.stopPodSandbox('web_default_uid-1_0');
  runtime.resetCalls();

  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(podSyncError(result), undefined);
  t.ok(recorder.events.some((e) => e.reason === 'SandboxChanged' && e.message === 'Pod sandbox changed, it will be killed and re-created.'));
  t.ok(runtime.called.includes('stopPodSandbox'), 'old sandbox stopped');
  t.ok(
    runtime.calls.some((c) => c.method === 'removeContainer' && c.args[0] === 'init_web_default_uid-1_0_0'),
    'init containers purged before the new sandbox',
  );
  const created = runtime.calls.find((c) => c.method === 'runPodSandbox')!.args[0] as runtimeapi.PodSandboxConfigInit;
  t.equal(created.metadata?.attempt, 1);
  t.ok(runtime.sandboxes.has('web_default_uid-1_1'));
  t.same(createCalls(runtime).map(([id, c]) => `${id}/${c.metadata?.name}`), ['web_default_uid-1_1/init']);
});

t.test('restartPolicy Never: a finished pod is torn down and nothing restarts', async (t) => {
  const { manager, runtime, backoff } = setup();
  const pod = makePod({ restartPolicy: 'Never' });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  runtime.setContainerState('app_web_default_uid-1_0_0', 'CONTAINER_EXITED', 1);
  runtime.resetCalls();
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(result.syncResults.map((r) => r.action), ['KillPodSandbox', 'ConfigPodSandbox']);
  t.same(runtime.called.filter((m) => m === 'stopPodSandbox' || m === 'createContainer'), ['stopPodSandbox']);
});

t.test('a changed image kills and restarts the container with the next restart count', async (t) => {
  const { manager, runtime, images, backoff, recorder } = setup();
  images.setImages({ id: 'sha256:busybox2', tags: ['busybox:1.37'] });
  const pod = makePod();
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const updated = makePod({ containers: [{ name: 'app', image: 'busybox:1.37' }] });
  runtime.resetCalls();
  const result = await manager.syncPod(updated, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(podSyncError(result), undefined);
  t.same(result.syncResults.map((r) => `${r.action}:${r.target}`), ['KillContainer:app', 'ConfigPodSandbox:web_default_uid-1_0', 'StartContainer:app']);
  t.same(runtime.calls.find((c) => c.method === 'stopContainer')?.args, ['app_web_default_uid-1_0_0', 30]);
  t.ok(recorder.events.some((e) => e.reason === 'Killing' && e.message === 'Container app definition changed, will be restarted'));
  const [[, config]] = createCalls(runtime);
  t.same(config.metadata, { name: 'app', attempt: 1 });
  t.equal(config.logPath, 'app/1.log');
  t.equal(config.annotations?.[CONTAINER_RESTART_COUNT_LABEL], '1');
});

t.test('liveness failure from the injected prober results restarts the container', async (t) => {
  let failing = '';
  const { manager, runtime, backoff } = setup({ livenessResults: (id) => (id === failing ? 'failure' : 'success') });
  const pod = makePod();
  await manager.init();
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  failing = 'fakeRuntime://app_web_default_uid-1_0_0';
  runtime.resetCalls();
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(runtime.called.filter((m) => ['stopContainer', 'createContainer', 'startContainer'].includes(m)), ['stopContainer', 'createContainer', 'startContainer']);
});

t.test('sidecars start and keep running before the app containers', async (t) => {
  const { manager, runtime, backoff } = setup();
  const pod = makePod({ initContainers: [{ name: 'proxy', restartPolicy: 'Always' }, { name: 'setup' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(createCalls(runtime).map(([, c]) => c.metadata?.name), ['proxy', 'setup'], 'setup starts while the sidecar runs');
  runtime.setContainerState('setup_web_default_uid-1_0_0', 'CONTAINER_EXITED', 0);
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(createCalls(runtime).map(([, c]) => c.metadata?.name), ['proxy', 'setup', 'app']);
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.same(status.containerStatuses.filter((c) => c.state === 'running').map((c) => c.name).sort(), ['app', 'proxy']);
});

t.test('create and start failures are reported with the runtime message', async (t) => {
  const { manager, runtime, backoff, recorder } = setup();
  const pod = makePod();
  runtime.injectError('createContainer', new Error('no space left on device'));
  let result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'CreateContainerError');
  t.equal(start.message, 'no space left on device');
  t.ok(recorder.events.some((e) => e.type === 'Warning' && e.reason === 'Failed' && e.message === 'Error: no space left on device'));

  runtime.injectError('startContainer', 'Unknown');
  result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const start2 = result.syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start2.error, 'RunContainerError');
  t.equal(start2.message, 'injected Unknown');
  t.match(podSyncError(result)?.message, /failed to "StartContainer" for "app" with RunContainerError: "injected Unknown"/);
});

t.test('a sandbox failure is CreatePodSandboxError and stops the sync', async (t) => {
  const { manager, runtime, backoff, recorder } = setup();
  runtime.injectError('runPodSandbox', 'Unavailable');
  const result = await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const create = result.syncResults.find((r) => r.action === 'CreatePodSandbox')!;
  t.equal(create.error, 'CreatePodSandboxError');
  t.match(create.message, /^Failed to create sandbox for pod "web_default\(uid-1\)": /);
  t.notOk(result.syncResults.some((r) => r.action === 'StartContainer'));
  t.ok(recorder.events.some((e) => e.reason === 'FailedCreatePodSandBox'));
});

t.test('a sandbox refused for a reason the kubelet can explain gets the fix in its event and result', async (t) => {
  const runcSays = 'failed to create containerd task: OCI runtime create failed: expected cgroupsPath to be of format "slice:prefix:name" for systemd cgroups, got "/kubepods/besteffort/poduid-1/abc" instead';
  const { manager, runtime, backoff, recorder } = setup({
    sandboxErrorHint: (message) => (message.includes('slice:prefix:name') ? 'set cgroupDriver: systemd' : undefined),
  });
  runtime.injectError('runPodSandbox', new Error(runcSays));
  const result = await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const create = result.syncResults.find((r) => r.action === 'CreatePodSandbox')!;
  t.equal(create.message, `Failed to create sandbox for pod "web_default(uid-1)": ${runcSays}: set cgroupDriver: systemd`);
  t.ok(recorder.events.some((e) => e.reason === 'FailedCreatePodSandBox' && e.message === `Failed to create pod sandbox: ${runcSays}: set cgroupDriver: systemd`));

  runtime.injectError('runPodSandbox', 'Unavailable');
  const other = await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.notMatch(other.syncResults.find((r) => r.action === 'CreatePodSandbox')!.message, /cgroupDriver/, 'no hint for other failures');
});

t.test('configMap references without a source are CreateContainerConfigError; with one they resolve', async (t) => {
  const pod = makePod({ containers: [{ name: 'app', env: [{ name: 'K', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] }] });
  {
    const { manager, backoff } = setup();
    const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
    t.equal(start.error, 'CreateContainerConfigError');
  }
  {
    const { manager, runtime, backoff } = setup({
      configMapsAndSecrets: { getConfigMap: async (ns, name) => (ns === 'default' && name === 'cfg' ? { k: 'v' } : undefined), getSecret: async () => undefined },
    });
    await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    t.same(createCalls(runtime)[0][1].envs, [{ key: 'K', value: 'v' }]);
  }
});

t.test('mountsFor adds volume mounts; a kubelet root adds /etc/hosts and the termination-log mount after them', async (t) => {
  const { manager, runtime, backoff, fs } = setup({
    mountsFor: (_pod, container) => [{ containerPath: '/data', hostPath: `/vols/${container.name}`, readonly: true }],
    kubeletRootDirectory: '/var/lib/kubelet',
  });
  const pod = makePod({ containers: [{ name: 'app', terminationMessagePath: '/dev/termination-log' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const mounts = createCalls(runtime)[0][1].mounts!;
  t.equal(mounts.length, 3);
  t.same(mounts[0], { containerPath: '/data', hostPath: '/vols/app', readonly: true });
  t.same(mounts[1], { containerPath: '/etc/hosts', hostPath: '/var/lib/kubelet/pods/uid-1/etc-hosts', readonly: false, selinuxRelabel: true });
  t.match(mounts[2].hostPath, /^\/var\/lib\/kubelet\/pods\/uid-1\/containers\/app\/[0-9a-f]{8}$/);
  t.equal(mounts[2].containerPath, '/dev/termination-log');
  t.ok(fs.files.has(mounts[2].hostPath!), 'termination-log file created');
});

t.test('a postStart hook failure kills the container and reports PostStartHookError', async (t) => {
  const { manager, runtime, backoff, recorder } = setup();
  runtime.execResults.set('app_web_default_uid-1_0_0', { stdout: Buffer.from(''), stderr: Buffer.from('boom'), exitCode: 3 });
  const pod = makePod({ containers: [{ name: 'app', lifecycle: { postStart: { exec: { command: ['false'] } } } }] });
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'PostStartHookError');
  t.match(start.message, /Exec lifecycle hook \(\[false\]\) for Container "app" in Pod "web_default\(uid-1\)" failed/);
  t.ok(runtime.called.includes('stopContainer'));
  t.ok(recorder.events.some((e) => e.reason === 'FailedPostStartHook' && e.message === 'PostStartHook failed'));
});

t.test('restart count falls back to the log directory when no status is left', async (t) => {
  const { manager, runtime, backoff, fs } = setup();
  fs.write('/logs/default_web_uid-1/app/0.log', '');
  fs.write('/logs/default_web_uid-1/app/4.log', '');
  fs.write('/logs/default_web_uid-1/app/notes.txt', '');
  await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(createCalls(runtime)[0][1].metadata, { name: 'app', attempt: 5 });
});
