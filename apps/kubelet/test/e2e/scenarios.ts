import type { Test } from 'tap';
import { pollUntil } from '@kubelet-ts/core';
import { E2EEnv, running, sleepForever, type E2ETarget } from './harness.js';

/** The vertical slice, end to end: static manifests in a directory, a real CRI runtime, the kubelet. */
export function kubeletScenarios(t: Test, target: E2ETarget): void {
  const env = new E2EEnv(target);
  t.teardown(() => env.cleanup());

  t.test(`${target.name}: a pod with an init container and two containers starts`, async (t) => {
    env.writeManifest('init-two', {
      initContainers: [{ name: 'setup', command: ['sh', '-c', 'echo preparing; sleep 1'] }],
      containers: [
        { name: 'first', command: ['sh', '-c', sleepForever] },
        { name: 'second', command: ['sh', '-c', sleepForever] },
      ],
    });
    const k = await env.startKubelet();
    t.teardown(k.stop);
    const status = await env.waitForStatus(k.kubelet, 'init-two', 'all containers running', running('init-two'));
    t.equal(status.initContainerStatuses?.[0].state?.terminated?.reason, 'Completed', 'the init container ran to completion first');
    t.same(status.containerStatuses?.map((c) => c.name), ['first', 'second']);
    t.ok(status.conditions?.find((c) => c.type === 'Ready' && c.status === 'True'), 'the pod is Ready');
    const containers = await env.containersOf('init-two');
    t.same(containers.map((c) => c.metadata?.name).sort(), ['first', 'second', 'setup'], 'the runtime has exactly these containers');
    env.removeManifest('init-two');
    await env.collectGarbage(k.kubelet, 'init-two');
  });

  t.test(`${target.name}: restartPolicy Always restarts a failing container with growing backoff; Never leaves it exited`, async (t) => {
    env.writeManifest('crash', { restartPolicy: 'Always', containers: [{ name: 'app', command: ['sh', '-c', 'echo failing; exit 1'] }] });
    env.writeManifest('never', { restartPolicy: 'Never', containers: [{ name: 'app', command: ['sh', '-c', 'exit 1'] }] });
    const k = await env.startKubelet();
    t.teardown(k.stop);
    const backoff = await env.waitForStatus(k.kubelet, 'crash', 'CrashLoopBackOff', (s) => {
      const app = s.containerStatuses?.[0];
      return (app?.restartCount ?? 0) >= 1 && app?.state?.waiting?.reason === 'CrashLoopBackOff';
    });
    const app = backoff.containerStatuses![0];
    t.match(app.state?.waiting?.message ?? '', /back-off 10s restarting failed container=app/, 'the first backoff is 10 s');
    t.equal(app.lastState?.terminated?.exitCode, 1, 'the last termination is kept');
    const restartsAtBackoff = app.restartCount;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    t.equal(E2EEnv.statusOf(k.kubelet, 'crash')?.status?.containerStatuses?.[0].restartCount, restartsAtBackoff, 'no restart while backing off');

    const never = await env.waitForStatus(k.kubelet, 'never', 'Failed', (s) => s.phase === 'Failed');
    t.equal(never.containerStatuses?.[0].state?.terminated?.exitCode, 1);
    t.equal(never.containerStatuses?.[0].restartCount, 0, 'restartPolicy Never: no restart');
    t.equal((await env.containersOf('never')).length, 1, 'exactly one container was ever created');
    env.removeManifest('crash');
    env.removeManifest('never');
    await env.collectGarbage(k.kubelet, 'crash');
    await env.collectGarbage(k.kubelet, 'never');
  });

  t.test(`${target.name}: changing the manifest recreates the container; deleting it kills the pod within its grace period`, async (t) => {
    env.writeManifest('change', { containers: [{ name: 'app', command: ['sh', '-c', `echo v1; ${sleepForever}`] }] });
    const k = await env.startKubelet();
    t.teardown(k.stop);
    await env.waitForStatus(k.kubelet, 'change', 'running v1', running('change'));
    const [v1] = await env.containersOf('change');

    env.writeManifest('change', { containers: [{ name: 'app', command: ['sh', '-c', `echo v2; ${sleepForever}`] }] });
    // The changed manifest is a new pod (its UID hashes the content): the old one is killed, the new one starts.
    await pollUntil(async () => {
      const containers = await env.containersOf('change');
      const running = containers.filter((c) => c.state === 'CONTAINER_RUNNING');
      return running.length === 1 && running[0].id !== v1.id && containers.find((c) => c.id === v1.id)?.state !== 'CONTAINER_RUNNING';
    }, 100, 30_000);
    const status = await env.waitForStatus(k.kubelet, 'change', 'running v2', running('change'));
    t.not(status.containerStatuses?.[0].containerID, undefined);
    t.notMatch(status.containerStatuses?.[0].containerID ?? '', v1.id, 'a new container runs the new command');

    const deletedAt = Date.now();
    env.removeManifest('change');
    await pollUntil(async () => (await env.containersOf('change')).every((c) => c.state !== 'CONTAINER_RUNNING'), 100, 30_000);
    const killedIn = Date.now() - deletedAt;
    t.ok(killedIn < 5000 + 3000, `killed in ${killedIn} ms, within the 5 s grace period (plus detection)`);
    await env.collectGarbage(k.kubelet, 'change');
    t.pass('container GC removes the deleted pod from the runtime');
  });

  t.test(`${target.name}: a restarted kubelet adopts running containers instead of recreating them`, async (t) => {
    env.writeManifest('adopt', { containers: [{ name: 'app', command: ['sh', '-c', sleepForever] }] });
    const first = await env.startKubelet();
    await env.waitForStatus(first.kubelet, 'adopt', 'running', running('adopt'));
    const before = (await env.containersOf('adopt')).map((c) => c.id).sort();
    const sandboxesBefore = (await env.sandboxesOf('adopt')).map((s) => s.id);
    await first.stop();

    const second = await env.startKubelet();
    t.teardown(second.stop);
    const status = await env.waitForStatus(second.kubelet, 'adopt', 'running after restart', running('adopt'));
    await new Promise((resolve) => setTimeout(resolve, 2500)); // a few sync and housekeeping rounds
    t.same((await env.containersOf('adopt')).map((c) => c.id).sort(), before, 'same container IDs');
    t.same((await env.sandboxesOf('adopt')).map((s) => s.id), sandboxesBefore, 'same sandbox');
    t.equal(status.containerStatuses?.[0].restartCount, 0);
    t.ok((await env.containersOf('adopt')).every((c) => c.state === 'CONTAINER_RUNNING'), 'still running');
    env.removeManifest('adopt');
    await env.collectGarbage(second.kubelet, 'adopt');
  });

  t.test(`${target.name}: a failing liveness probe restarts the container; a failing readiness probe makes the pod not Ready`, async (t) => {
    env.writeManifest('liveness', {
      containers: [
        {
          name: 'app',
          // Healthy for a few seconds, then the probe's file goes away.
          command: ['sh', '-c', `touch healthy; sleep 3; rm -f healthy; ${sleepForever}`],
          livenessProbe: { exec: { command: ['cat', 'healthy'] }, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 2 },
        },
      ],
    });
    env.writeManifest('readiness', {
      containers: [
        { name: 'ready', command: ['sh', '-c', sleepForever], readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 } },
        { name: 'unready', command: ['sh', '-c', sleepForever], readinessProbe: { exec: { command: ['sh', '-c', 'exit 1'] }, periodSeconds: 1 } },
      ],
    });
    const k = await env.startKubelet();
    t.teardown(k.stop);
    const restarted = await env.waitForStatus(k.kubelet, 'liveness', 'a liveness restart', (s) => (s.containerStatuses?.[0].restartCount ?? 0) >= 1, 45_000);
    t.ok(restarted.containerStatuses![0].restartCount >= 1, 'the container was restarted after its liveness probe failed');
    const readiness = await env.waitForStatus(k.kubelet, 'readiness', 'readiness known', (s) => s.containerStatuses?.find((c) => c.name === 'ready')?.ready === true);
    t.equal(readiness.phase, 'Running');
    t.equal(readiness.containerStatuses?.find((c) => c.name === 'unready')?.ready, false, 'the failing readiness probe keeps its container unready');
    t.equal(readiness.conditions?.find((c) => c.type === 'Ready')?.status, 'False', 'the pod is not Ready');
    t.equal(readiness.conditions?.find((c) => c.type === 'ContainersReady')?.status, 'False');
    env.removeManifest('liveness');
    env.removeManifest('readiness');
    await env.collectGarbage(k.kubelet, 'liveness');
    await env.collectGarbage(k.kubelet, 'readiness');
  });

  t.test(`${target.name}: 20 pods at once all run`, async (t) => {
    const names = Array.from({ length: 20 }, (_, i) => `many-${i}`);
    for (const name of names) env.writeManifest(name, { containers: [{ name: 'app', command: ['sh', '-c', sleepForever] }] });
    const k = await env.startKubelet();
    t.teardown(k.stop);
    for (const name of names) await env.waitForStatus(k.kubelet, name, 'running', running(name), 60_000);
    t.equal(k.kubelet.podStatuses().filter((p) => p.status?.phase === 'Running').length, 20);
    for (const name of names) env.removeManifest(name);
    for (const name of names) await env.collectGarbage(k.kubelet, name, 60_000);
  });
}
