// Graceful node shutdown end to end in the kubelet: API server mode on the embedded local runtime (process mode)
// and the test API server, with the signal trigger (SIGPWR to this process, the kubelet's default without systemd).
// Static pods are always critical, so the regular pod comes from the API server.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { noopLogger } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { ensureHostCgroup, removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { NODE_SHUTDOWN_MESSAGE, NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE, type NodeShutdownManager } from '@kubelet-ts/node-shutdown';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type RunningKubelet } from '../src/index.js';
import { removeScratchDir, waitFor } from './e2e/harness.js';

const NAMESPACE = 'shutdown';
const IMAGE = 'localhost/kubelet-ts/busybox:1';
type Json = Record<string, any>;

/** Stops 1 s after SIGTERM, so the critical pod's kill visibly begins after the regular pod's ended. */
const slowStop = "trap 'sleep 1; exit 0' TERM; while true; do sleep 1; done";

function pod(name: string, node: string, extra: Json = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE },
    spec: { nodeName: node, terminationGracePeriodSeconds: 30, containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', slowStop] }], ...extra },
  };
}


t.test('config: shutdownGracePeriod fields from the config file, with Go\'s validation', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-shutdown-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const resolveWith = (fields: Json, flags: string[] = []) => {
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...fields }));
    return resolveConfig(parseFlags([`--config=${file}`, ...flags]));
  };
  const defaults = resolveWith({});
  t.same([defaults.shutdownGracePeriodMs, defaults.shutdownGracePeriodCriticalPodsMs], [0, 0], 'off by default');
  t.equal(defaults.featureGates.GracefulNodeShutdown, true, 'the gate is on by default (Go 1.21+)');
  const set = resolveWith({ shutdownGracePeriod: '1m30s', shutdownGracePeriodCriticalPods: '30s' });
  t.same([set.shutdownGracePeriodMs, set.shutdownGracePeriodCriticalPodsMs], [90_000, 30_000], 'durations parsed like the other duration fields');
  t.throws(() => resolveWith({ shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '20s' }), {
    message:
      'invalid configuration: shutdownGracePeriod 10s must be >= 0, shutdownGracePeriodCriticalPods 20s must be >= 0, and shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s',
  });
  t.throws(() => resolveWith({ shutdownGracePeriod: '10s' }, ['--feature-gates=GracefulNodeShutdown=false']), {
    message: 'invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown',
  });
  t.throws(() => resolveWith({ shutdownGracePeriod: 'soon' }), /soon/);
  // No manager (so no admit handler and no Ready error) unless shutdownGracePeriod > 0 with the gate on.
  const off = container.createChildContainer();
  registerKubeletDeps(off, defaults);
  t.equal(off.resolve(Tokens.NodeShutdownManager), undefined, 'shutdownGracePeriod 0: no manager');
  const on = container.createChildContainer();
  registerKubeletDeps(on, set);
  t.ok(on.resolve<NodeShutdownManager>(Tokens.NodeShutdownManager).enabled, 'shutdownGracePeriod 1m30s: a manager');
});

t.test('SIGPWR: regular pods stop, then critical ones; both end Failed/Terminated; the node goes NotReady and refuses pods', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-shutdown-'));
  const node = 'shutdown-node';
  const cgroupRoot = `/kts-${basename(dir)}`;
  await ensureHostCgroup(cgroupRoot);
  const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
  await local.start();
  const server = await startTestApiServer({});
  const runtime = new RemoteRuntimeService({ endpoint: local.endpoint });
  const controller = new AbortController();
  const started: { kubelet?: RunningKubelet } = {};
  t.teardown(async () => {
    controller.abort();
    await started.kubelet?.done;
    await server.close();
    for (const sandbox of await runtime.listPodSandbox()) {
      await runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
      await runtime.removePodSandbox(sandbox.id).catch(() => undefined);
    }
    runtime.close();
    await local.stop();
    await removeScratchDir(dir);
    await removeHostCgroup(cgroupRoot);
    rmSync(dir, { recursive: true, force: true });
  });
  const kubeconfig = join(dir, 'kubeconfig');
  server.writeKubeconfig(kubeconfig);
  const configFile = join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', shutdownGracePeriod: '20s', shutdownGracePeriodCriticalPods: '10s' }),
  );
  mkdirSync(join(dir, 'root'));
  const config = resolveConfig(
    parseFlags([
      `--config=${configFile}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${join(dir, 'root')}`,
      `--pod-logs-dir=${join(dir, 'logs')}`,
      `--container-runtime-endpoint=${local.endpoint}`,
      `--hostname-override=${node}`,
      '--healthz-port=0',
      '--node-status-update-frequency=10s',
      `--cgroup-root=${cgroupRoot}`,
    ]),
  );
  t.equal(config.shutdownGracePeriodMs, 20_000);
  t.equal(config.shutdownGracePeriodCriticalPodsMs, 10_000);
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
  started.kubelet = await startKubelet(c, controller.signal);
  const get = (resource: string, namespace: string | undefined, name: string) => server.store.get(resource, namespace, name) as Json | undefined;
  const ready = (n: Json | undefined) => n?.status?.conditions?.find((cond: Json) => cond.type === 'Ready');

  await waitFor('node Ready', () => ready(get('nodes', undefined, node))?.status === 'True');
  server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  server.store.create('pods', pod('regular', node));
  server.store.create('pods', pod('critical', node, { priorityClassName: 'system-node-critical', priority: 2_000_001_000 }));
  for (const name of ['regular', 'critical']) await waitFor(`${name} Running`, () => get('pods', NAMESPACE, name)?.status?.phase === 'Running');
  const manager = c.resolve<NodeShutdownManager | undefined>(Tokens.NodeShutdownManager);
  t.ok(manager?.enabled, 'the shutdown manager runs with shutdownGracePeriod 20s');
  await waitFor('the trigger watching SIGPWR', () => process.listenerCount('SIGPWR') > 0);

  process.kill(process.pid, 'SIGPWR');

  const notReady = await waitFor('the node Ready=False', () => {
    const condition = ready(get('nodes', undefined, node));
    return condition?.status === 'False' && condition;
  });
  t.match(notReady, { reason: 'KubeletNotReady', message: 'node is shutting down' });

  const finals = [];
  for (const name of ['regular', 'critical']) {
    finals.push(await waitFor(`${name} Failed`, () => {
      const p = get('pods', NAMESPACE, name);
      return p?.status?.phase === 'Failed' && p;
    }));
  }
  for (const p of finals) {
    t.equal(p.status.reason, 'Terminated', `${p.metadata.name} reason`);
    t.equal(p.status.message, NODE_SHUTDOWN_MESSAGE, `${p.metadata.name} message`);
  }
  // The order, from the runtime's own clock: the critical container was stopped only after the regular one ended.
  const containers = await runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': NAMESPACE } });
  const finishedAt = async (podName: string) => {
    const id = containers.find((x) => x.labels?.['io.kubernetes.pod.name'] === podName)!.id;
    return BigInt((await runtime.containerStatus(id)).status!.finishedAt);
  };
  const regularEnd = await finishedAt('regular');
  const criticalEnd = await finishedAt('critical');
  t.ok(criticalEnd - regularEnd >= 1_000_000_000n, `the critical pod stopped ${(criticalEnd - regularEnd) / 1_000_000n} ms after the regular one (it takes 1 s to stop once told)`);

  // A pod bound now is refused.
  server.store.create('pods', pod('late', node));
  const late = await waitFor('the late pod rejected', () => {
    const p = get('pods', NAMESPACE, 'late');
    return p?.status?.phase === 'Failed' && p;
  });
  t.equal(late.status.reason, 'NodeShutdown');
  t.equal(late.status.message, `Pod ${NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE}`, "Go's rejectPod prefixes the message with 'Pod '");
  await manager!.idle();
});
