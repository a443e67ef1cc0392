// Exec probes through the embedded local runtime (process mode) over real CRI gRPC, and a probe
// manager driving readiness and liveness of a real container.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PodStatus } from '@kubernetes/client-node';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { ProbeManager } from '../src/index.js';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { execSuite, startSleeper, type ExecTarget } from './exec-suite.js';
import { makePod, running } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'prober-'));
const local = new LocalRuntime({ socketPath: join(dir, 'cri.sock'), rootDir: join(dir, 'root'), mode: 'process', stopGracePeriodMs: 500 });
await local.start();
const runtime = new RemoteRuntimeService({ endpoint: local.endpoint, timeoutMs: 20_000 });
t.teardown(async () => {
  runtime.close();
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
});
const target: ExecTarget = { name: 'local-runtime', runtime, image: 'busybox:1.36', logRoot: join(dir, 'logs'), idType: 'local-runtime' };

execSuite(t, target);

t.test('local-runtime: a probe manager drives readiness and liveness of a running container', async (t) => {
  const { containerId, cleanup } = await startSleeper(target, 'managed');
  t.teardown(cleanup);
  const id = `local-runtime://${containerId}`;
  const marker = join(dir, 'ready-marker');
  const pod = makePod([
    {
      name: 'sleeper',
      readinessProbe: { exec: { command: ['test', '-e', marker] }, periodSeconds: 1, timeoutSeconds: 1 },
      livenessProbe: { exec: { command: ['sh', '-c', 'exit 1'] }, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 2 },
    },
  ]);
  let status: V1PodStatus = { phase: 'Running', podIP: '127.0.0.1', containerStatuses: [running('sleeper', id, Date.now())] };
  const recorder = new RecordingEventRecorder();
  const manager = new ProbeManager({ getPodStatus: () => status, runner: runtime, recorder });
  t.teardown(() => manager.stop());
  manager.addPod(pod);
  const sync = (): void => {
    const next = structuredClone(status);
    manager.updatePodStatus(pod, next);
    status = next;
  };
  sync();
  t.equal(status.containerStatuses?.[0].started, true);
  t.equal(status.containerStatuses?.[0].ready, false);

  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && manager.livenessManager.lookup(id) !== 'failure') await new Promise((r) => setTimeout(r, 50));
  t.equal(manager.livenessManager.lookup(id), 'failure', 'liveness failed after two failed probes');
  t.equal(manager.readinessManager.get(id), 'failure', 'not ready while the marker is missing');

  const { writeFileSync } = await import('node:fs');
  writeFileSync(marker, '');
  while (Date.now() < deadline && manager.readinessManager.get(id) !== 'success') await new Promise((r) => setTimeout(r, 50));
  sync();
  t.equal(status.containerStatuses?.[0].ready, true, 'ready once the probe passes');
  t.ok(recorder.messages('Unhealthy').includes('Liveness probe failed: '), 'liveness failure event');
  await manager.stop();
  t.equal(manager.workerCount(), 0);
});
