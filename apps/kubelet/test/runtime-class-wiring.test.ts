// RuntimeClass as the kubelet wires it: the runtime manager asks the RuntimeClass manager (API server mode) for a
// pod's handler; standalone, a pod naming a runtimeClassName fails its sandbox with a clear message and never
// reaches the runtime (Go would run it on the default handler).
import 'reflect-metadata';
import t, { type Test } from 'tap';
import { container } from 'tsyringe';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { containerRestartBackoff } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { RuntimeClassManager, type GenericRuntimeManager } from '@kubelet-ts/runtime-manager';
import { Tokens, registerKubeletDeps } from '../src/container.js';
import { parseFlags } from '../src/flags.js';
import { resolveConfig } from '../src/config.js';

function harness(t: Test, runtimeClasses?: RuntimeClassManager) {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-runtime-class-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new FakeClock();
  const config = resolveConfig(
    parseFlags([`--root-dir=${join(dir, 'root')}`, `--pod-logs-dir=${join(dir, 'logs')}`, '--hostname-override=node1', '--container-runtime-endpoint=unix:///nonexistent.sock']),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  const runtimeService = new FakeRuntimeService(clock);
  c.register(Tokens.Clock, { useValue: clock });
  c.register(Tokens.Logger, { useValue: new RecordingLogger() });
  c.register(Tokens.RuntimeService, { useValue: runtimeService });
  c.register(Tokens.ImageService, { useValue: new FakeImageService(clock) });
  if (runtimeClasses) c.register(Tokens.RuntimeClassManager, { useValue: runtimeClasses });
  const manager = c.resolve<GenericRuntimeManager>(Tokens.ContainerRuntime);
  return { manager, runtimeService, backoff: containerRestartBackoff(clock) };
}

const pod = (runtimeClassName: string): V1Pod => ({
  metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
  spec: { runtimeClassName, containers: [{ name: 'app', image: 'busybox', imagePullPolicy: 'Never' }] },
});

t.test('standalone: a pod naming a RuntimeClass fails its sandbox with a clear message', async (t) => {
  const { manager, runtimeService, backoff } = harness(t);
  const result = await manager.syncPod(pod('gvisor'), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const create = result.syncResults.find((r) => r.action === 'CreatePodSandbox');
  t.equal(create?.error, 'CreatePodSandboxError');
  t.match(create?.message, /^Failed to create sandbox for pod "web_default\(uid-1\)": RuntimeClass "gvisor" cannot be looked up: the kubelet runs without an API server \(no --kubeconfig\)/);
  t.notOk(runtimeService.calls.some((call) => call.method === 'runPodSandbox'), 'the runtime was never asked');
});

t.test('API server mode: the RuntimeClass manager gives RunPodSandbox its handler', async (t) => {
  const classes = new RuntimeClassManager({
    clock: new FakeClock(),
    listerWatcher: {
      list: async () => ({ items: [{ metadata: { name: 'fast' }, handler: 'crun' }], resourceVersion: '1' }),
      watch: (_opts, _onEvent, signal) => new Promise<void>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })),
    },
  });
  classes.start();
  t.teardown(() => classes.stop());
  const { manager, runtimeService, backoff } = harness(t, classes);
  await manager.syncPod(pod('fast'), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(runtimeService.calls.filter((call) => call.method === 'runPodSandbox').map((call) => call.args[1]), ['crun']);
});
