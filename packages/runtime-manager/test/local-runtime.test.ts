// The runtime manager against a real CRI server (the embedded local runtime, process mode) over gRPC.
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerRestartBackoff, podSyncError, type PodStatus } from '@kubelet-ts/core';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { RemoteImageService, RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { GenericRuntimeManager } from '../src/index.js';
import { makePod } from './helpers.js';

async function harness(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'rtm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const local = new LocalRuntime({ socketPath: join(dir, 'cri.sock'), rootDir: join(dir, 'root'), mode: 'process', stopGracePeriodMs: 500 });
  await local.start();
  const runtimeService = new RemoteRuntimeService({ endpoint: local.endpoint, timeoutMs: 20_000 });
  const imageService = new RemoteImageService({ endpoint: local.endpoint, timeoutMs: 20_000 });
  t.teardown(async () => {
    runtimeService.close();
    imageService.close();
    await local.stop();
  });
  const manager = new GenericRuntimeManager({ runtimeService, imageService, podLogsRootDirectory: join(dir, 'pods'), logger: new RecordingLogger() });
  return { dir, manager };
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('sync, status, restart and kill a pod on the local runtime', async (t) => {
  const { dir, manager } = await harness(t);
  const pod = makePod({
    containers: [{ name: 'app', image: 'busybox:1.36', command: ['/bin/sh', '-c', 'echo hello $(WHO); sleep 30'], env: [{ name: 'WHO', value: 'kubelet' }] }],
    terminationGracePeriodSeconds: 1,
  });
  const backoff = containerRestartBackoff();
  const status = (): Promise<PodStatus> => manager.getPodStatus('uid-1', 'web', 'default');

  const result = await manager.syncPod(pod, await status(), [], backoff);
  t.equal(podSyncError(result), undefined, 'first sync succeeds');
  t.equal(manager.type(), 'local-runtime');
  await waitFor(async () => (await status()).containerStatuses.some((c) => c.state === 'running'), 'the container to run');
  const running = await status();
  t.same(running.sandboxStatuses.map((s) => s.state), ['SANDBOX_READY']);
  t.same(running.ips, ['127.0.0.1']);
  const app = running.containerStatuses[0];
  t.equal(app.id.type, 'local-runtime');
  t.equal(app.logPath, join(dir, 'pods', 'default_web_uid-1', 'app', '0.log'));
  await waitFor(async () => readdirSync(join(dir, 'pods', 'default_web_uid-1', 'app')).includes('0.log') && readFileSync(app.logPath!, 'utf8').includes('hello kubelet'), 'the log line');

  // a steady pod: nothing to do
  const again = await manager.syncPod(pod, running, [], backoff);
  t.same(again.syncResults.map((r) => r.action), ['ConfigPodSandbox']);

  const [runningPod] = (await manager.getPods(false)).filter((p) => p.id === 'uid-1');
  t.same(runningPod.containers.map((c) => c.name), ['app']);
  await manager.killPod(pod, runningPod);
  const killed = await status();
  t.same(killed.containerStatuses.map((c) => c.state), ['exited']);
  t.same(killed.sandboxStatuses.map((s) => s.state), ['SANDBOX_NOTREADY']);
  t.same(await manager.getPods(false), []);
});

t.test('a hostNetwork pod keeps its sandbox on the local runtime', async (t) => {
  const { manager } = await harness(t);
  const pod = makePod({ hostNetwork: true, containers: [{ name: 'app', command: ['/bin/sh', '-c', 'sleep 30'] }], terminationGracePeriodSeconds: 1 });
  const backoff = containerRestartBackoff();
  t.equal(podSyncError(await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff)), undefined);
  const second = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(second.syncResults.map((r) => r.action), ['ConfigPodSandbox'], 'no sandbox churn');
  const [runningPod] = await manager.getPods(false);
  await manager.killPod(pod, runningPod);
});
