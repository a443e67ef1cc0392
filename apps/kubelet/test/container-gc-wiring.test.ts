// The container GC as the kubelet wires it: containers in unknown state are stopped through the
// runtime manager (Go: cgc.manager.killContainer), which reads the pod's grace period back from
// the container's annotations.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KUBERNETES_CONTAINER_NAME_LABEL, KUBERNETES_POD_NAME_LABEL, KUBERNETES_POD_NAMESPACE_LABEL, KUBERNETES_POD_UID_LABEL } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import type { ContainerGC } from '@kubelet-ts/container-gc';
import { FakePodStateProvider } from '@kubelet-ts/container-gc/testing';
import { Tokens, registerKubeletDeps } from '../src/container.js';
import { parseFlags } from '../src/flags.js';
import { resolveConfig } from '../src/config.js';

t.test('an unknown-state container is stopped with its pod\'s grace period before removal', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-container-gc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new FakeClock();
  const config = resolveConfig(
    parseFlags([
      `--root-dir=${join(dir, 'root')}`,
      `--pod-logs-dir=${join(dir, 'logs')}`,
      '--hostname-override=node1',
      '--container-runtime-endpoint=unix:///nonexistent.sock',
      '--maximum-dead-containers-per-container=0',
    ]),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  const runtimeService = new FakeRuntimeService(clock);
  c.register(Tokens.Clock, { useValue: clock });
  c.register(Tokens.Logger, { useValue: new RecordingLogger() });
  c.register(Tokens.RuntimeService, { useValue: runtimeService });
  c.register(Tokens.ImageService, { useValue: new FakeImageService(clock) });

  const labels = { [KUBERNETES_POD_UID_LABEL]: 'p', [KUBERNETES_POD_NAME_LABEL]: 'web', [KUBERNETES_POD_NAMESPACE_LABEL]: 'default' };
  const sandboxConfig = { metadata: { name: 'web', namespace: 'default', uid: 'p', attempt: 0 }, labels };
  const sandbox = await runtimeService.runPodSandbox(sandboxConfig);
  const id = await runtimeService.createContainer(
    sandbox,
    {
      metadata: { name: 'app', attempt: 0 },
      image: { image: 'busybox' },
      labels: { ...labels, [KUBERNETES_CONTAINER_NAME_LABEL]: 'app' },
      annotations: { 'io.kubernetes.pod.terminationGracePeriod': '30' },
    },
    sandboxConfig,
  );
  runtimeService.containers.get(id)!.status.state = 'CONTAINER_UNKNOWN';

  const createContainerGC = c.resolve<(pods: FakePodStateProvider) => ContainerGC>(Tokens.ContainerGCFactory);
  const gc = createContainerGC(new FakePodStateProvider({ live: ['p'] }));
  await gc.garbageCollect(true, false);
  t.same(runtimeService.calls.find((call) => call.method === 'stopContainer')?.args.slice(0, 2), [id, 30]);
  t.notOk(runtimeService.containers.has(id), 'then removed');
});
