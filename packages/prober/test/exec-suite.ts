// Exec probes against a real CRI runtime: one sandbox and one sleeping container.
import type { Test } from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pollUntil } from '@kubelet-ts/core';
import { isNotFound, type RuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import type { V1Container } from '@kubernetes/client-node';
import { execProbe, Prober } from '../src/index.js';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { makePod } from './helpers.js';

export interface ExecTarget {
  name: string;
  runtime: RuntimeService;
  image: string;
  logRoot: string;
  /** The container id type in `type://id` (the runtime name). */
  idType: string;
}

/** Starts a sandbox (host network) and a `sleep` container; returns the container id and a cleanup. */
export async function startSleeper(target: ExecTarget, name: string): Promise<{ containerId: string; cleanup: () => Promise<void> }> {
  const uid = `prober-${process.pid}-${Date.now()}-${name}`;
  const logDirectory = join(target.logRoot, `default_${name}_${uid}`);
  mkdirSync(logDirectory, { recursive: true });
  const namespaceOptions = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } as const;
  const sandboxConfig: runtimeapi.PodSandboxConfigInit = {
    metadata: { name, namespace: 'default', uid, attempt: 0 },
    hostname: '', // a host-network pod cannot set a hostname
    logDirectory,
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid, suite: 'prober' },
    linux: { securityContext: { namespaceOptions } },
  };
  const { runtime } = target;
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const cleanup = async (): Promise<void> => {
    try {
      await runtime.stopPodSandbox(sandboxId);
      await runtime.removePodSandbox(sandboxId);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  };
  try {
    const containerId = await runtime.createContainer(
      sandboxId,
      {
        metadata: { name: 'sleeper', attempt: 0 },
        image: { image: target.image },
        command: ['sleep', '3600'],
        envs: [{ key: 'GREETING', value: 'hi' }],
        logPath: 'sleeper/0.log',
        linux: { securityContext: { namespaceOptions } },
      },
      sandboxConfig,
    );
    await runtime.startContainer(containerId);
    await pollUntil(async () => (await runtime.containerStatus(containerId)).status?.state === 'CONTAINER_RUNNING', 50, 30_000);
    return { containerId, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

export function execSuite(t: Test, target: ExecTarget): void {
  t.test(`${target.name}: exec probes`, async (t) => {
    const { containerId, cleanup } = await startSleeper(target, 'exec-probes');
    t.teardown(cleanup);
    const { runtime } = target;

    t.same(await execProbe(runtime, containerId, ['sh', '-c', 'echo ready'], 1), { result: 'success', output: 'ready\n' });
    t.same(await execProbe(runtime, containerId, ['sh', '-c', 'echo out; echo err >&2; exit 1'], 1), { result: 'failure', output: 'out\nerr\n' });

    const notFound = await execProbe(runtime, containerId, ['/no/such/binary'], 1);
    t.not(notFound.result, 'success', `command not found: ${notFound.result} (${notFound.output.trim()})`);
    t.match(notFound.output, /no\/such\/binary|not found|no such file/i);

    const start = Date.now();
    t.same(await execProbe(runtime, containerId, ['sleep', '10'], 1), { result: 'failure', output: 'command "sleep 10" timed out' });
    t.ok(Date.now() - start < 8000, `the timeout ended the exec (${Date.now() - start} ms)`);

    // Through the Prober: the container id as `type://id`, env expansion, events.
    const recorder = new RecordingEventRecorder();
    const prober = new Prober({ runner: runtime, recorder });
    const container = (command: string[]): V1Container => ({
      name: 'sleeper',
      env: [{ name: 'CODE', value: '3' }],
      livenessProbe: { exec: { command }, timeoutSeconds: 1 },
    });
    const pod = makePod([container(['true'])]);
    const fullId = `${target.idType}://${containerId}`;
    t.equal(await prober.probe('liveness', pod, {}, container(['true']), fullId), 'success');
    t.equal(await prober.probe('liveness', pod, {}, container(['sh', '-c', 'echo code $(CODE); exit $(CODE)']), fullId), 'failure');
    t.equal(await prober.probe('liveness', pod, {}, container(['/no/such/binary']), fullId), 'failure');
    t.equal(await prober.probe('liveness', pod, {}, container(['sleep', '10']), fullId), 'failure');
    t.equal(recorder.events[0].message, 'Liveness probe failed: code 3\n');
    t.match(recorder.events[1].message, /^Liveness probe (failed|errored): /);
    t.equal(recorder.events[2].message, 'Liveness probe failed: command "sleep 10" timed out');
    t.ok(recorder.events.every((e) => e.reason === 'Unhealthy' && e.details?.containerName === 'sleeper'));
    await prober.close();
  });
}
