// Device plugins end to end on the embedded local runtime: the kubelet (standalone, static pods) with an in-process
// device plugin over the real v1beta1 gRPC API. The container config carries what the plugin's Allocate returned,
// the pod resources API lists the pod's device, a pod asking for more devices than are free is refused as Go does,
// and a restarted kubelet keeps the allocation from its checkpoint. The sample device plugin registers through the
// plugin watcher (<root-dir>/plugins_registry) too.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DependencyContainer } from 'tsyringe';
import type { V1Node } from '@kubernetes/client-node';
import { noopLogger, pollUntil } from '@kubelet-ts/core';
import { RemoteRuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { PodResourcesClient, podResourcesSocketPath, type DeviceManager } from '@kubelet-ts/device-manager';
import { DevicePluginServer } from '@kubelet-ts/device-manager/testing';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type Kubelet } from '../src/index.js';
import { manifest, removeScratchDir, running, sleepForever } from './e2e/harness.js';

const RESOURCE = 'example.com/widget';
const dir = mkdtempSync(join(tmpdir(), 'kubelet-devices-'));
const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
await local.start();
t.teardown(async () => {
  await local.stop();
  await removeScratchDir(dir);
});
const manifests = join(dir, 'manifests');
const rootDir = join(dir, 'root');
mkdirSync(manifests, { recursive: true });
const writeManifest = (name: string, spec: Record<string, unknown>, dir = manifests) =>
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(manifest(name, spec, 'localhost/kubelet-ts/busybox:1')));

/** Every ContainerConfig the kubelet sent to CreateContainer. */
const created: runtimeapi.ContainerConfigInit[] = [];

async function startOurKubelet(dirs: { manifests: string; rootDir: string } = { manifests, rootDir }, flags: string[] = []): Promise<{ kubelet: Kubelet; c: DependencyContainer; stop: () => Promise<void> }> {
  const config = resolveConfig(
    parseFlags([
      `--pod-manifest-path=${dirs.manifests}`,
      `--root-dir=${dirs.rootDir}`,
      `--pod-logs-dir=${join(dir, 'logs')}`,
      `--container-runtime-endpoint=${local.endpoint}`,
      '--hostname-override=devices-node',
      '--file-check-frequency=1s',
      '--healthz-port=0',
      '--cgroups-per-qos=false',
      '--enforce-node-allocatable=',
      ...flags,
    ]),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
  const runtime = new RemoteRuntimeService({ endpoint: local.endpoint });
  const createContainer = runtime.createContainer.bind(runtime);
  runtime.createContainer = (podSandboxId, config, sandboxConfig) => {
    created.push(config);
    return createContainer(podSandboxId, config, sandboxConfig);
  };
  c.register(Tokens.CriRuntimeService, { useValue: runtime });
  const controller = new AbortController();
  const started = await startKubelet(c, controller.signal);
  return {
    kubelet: started.kubelet,
    c,
    stop: async () => {
      controller.abort();
      await started.done;
    },
  };
}

const statusOf = (kubelet: Kubelet, name: string) => kubelet.podStatuses().find((p) => p.pod.metadata?.name === `${name}-devices-node`);

t.test('a pod gets a device: container config, pod resources, exhaustion, and the allocation across a kubelet restart', async (t) => {
  const socketDir = join(rootDir, 'device-plugins');
  const plugin = new DevicePluginServer({
    resourceName: RESOURCE,
    socketDir,
    deviceIds: ['widget-0', 'widget-1'],
    options: { preStartRequired: true, getPreferredAllocationAvailable: true },
    allocate: (ids) => ({
      envs: { WIDGETS: ids.join(',') },
      mounts: [{ containerPath: '/widgets', hostPath: dir, readOnly: true }],
      devices: [{ containerPath: '/dev/widget0', hostPath: '/dev/null', permissions: 'rw' }],
      annotations: { 'example.com/widgets': ids.join(',') },
      cdiDevices: [],
    }),
    watchKubeletRestartMs: 50,
  });
  t.teardown(() => plugin.stop());
  const limits = (n: string) => ({ limits: { [RESOURCE]: n }, requests: { [RESOURCE]: n } });

  let k = await startOurKubelet();
  // The plugin registers once the kubelet's Registration socket is up; the pod comes once the node has the devices.
  await pollUntil(() => existsSync(join(socketDir, 'kubelet.sock')), 20, 30_000);
  await plugin.start();
  const client = new PodResourcesClient(podResourcesSocketPath(rootDir));
  t.teardown(() => client.close());
  await pollUntil(async () => (await client.getAllocatableResources()).devices.length === 2, 20, 30_000);
  writeManifest('one', { containers: [{ name: 'app', command: ['sh', '-c', `echo "got $WIDGETS"; ${sleepForever}`], resources: limits('1') }] });
  await pollUntil(() => running('one')(statusOf(k.kubelet, 'one')?.status ?? {}), 100, 30_000);

  const config = created.find((c) => c.metadata?.name === 'app')!;
  const device = plugin.calls.allocate[0][0];
  t.ok(['widget-0', 'widget-1'].includes(device), `allocated ${device}`);
  t.same(config.envs?.[0], { key: 'WIDGETS', value: device }, "the plugin's env, first");
  t.same(config.mounts?.[0], { containerPath: '/widgets', hostPath: dir, readonly: true, selinuxRelabel: false }, "the plugin's mount");
  t.same(config.devices, [{ containerPath: '/dev/widget0', hostPath: '/dev/null', permissions: 'rw' }], "the plugin's device node");
  t.equal(config.annotations?.['example.com/widgets'], device);
  t.same(plugin.calls.preStart, [[device]], 'PreStartContainer before the container');
  t.equal(plugin.calls.preferred.length, 1, 'GetPreferredAllocation asked');

  const list = await client.list();
  const one = list.podResources.find((p) => p.name === 'one-devices-node');
  t.same(one?.containers[0].devices.map((d) => [d.resourceName, d.deviceIds]), [[RESOURCE, [device]]], 'pod resources List shows the device');
  t.same((await client.getAllocatableResources()).devices.length, 2);

  writeManifest('two', { containers: [{ name: 'app', command: ['sh', '-c', sleepForever], resources: limits('2') }] });
  await pollUntil(() => statusOf(k.kubelet, 'two')?.status?.phase === 'Failed', 100, 30_000);
  const refused = statusOf(k.kubelet, 'two')!.status!;
  t.equal(refused.reason, 'UnexpectedAdmissionError');
  t.equal(refused.message, `Pod Allocate failed due to requested number of devices unavailable for ${RESOURCE}. Requested: 2, Available: 1, which is unexpected`);

  // Restart: the checkpoint keeps the first pod's device (re-admitted before the plugin is back: its allocation counts
  // as allocatable, as Go's sanitizeNodeAllocatable); the plugin re-registers with the new kubelet.
  const allocations = plugin.calls.allocate.length;
  const containerID = statusOf(k.kubelet, 'one')?.status?.containerStatuses?.[0].containerID;
  await k.stop();
  k = await startOurKubelet();
  t.teardown(() => k.stop());
  await pollUntil(() => running('one')(statusOf(k.kubelet, 'one')?.status ?? {}), 100, 30_000);
  t.equal(statusOf(k.kubelet, 'one')?.status?.containerStatuses?.[0].containerID, containerID, 'the pod kept running: same container');
  const after = await pollUntil(async () => {
    const l = await client.list().catch(() => undefined);
    return (l?.podResources.find((p) => p.name === 'one-devices-node')?.containers[0].devices[0]?.deviceIds ?? []).length > 0;
  }, 100, 30_000).then(() => client.list());
  t.same(after.podResources.find((p) => p.name === 'one-devices-node')?.containers[0].devices[0].deviceIds, [device], 'the same device after the restart');
  t.equal(plugin.calls.allocate.length, allocations, 'no new Allocate for the running pod');
  await pollUntil(async () => (await client.getAllocatableResources().catch(() => ({ devices: [] }))).devices.length === 2, 50, 30_000);
  t.pass('the plugin registered again with the restarted kubelet');
});

t.test('a device plugin registers through the plugin watcher: node capacity, a pod gets the device, deregistration', async (t) => {
  const GADGET = 'example.com/gadget';
  const root = join(dir, 'root-watcher');
  const podManifests = join(dir, 'manifests-watcher');
  mkdirSync(podManifests, { recursive: true });
  // A short node status period: the locally computed Node is cached for one.
  const k = await startOurKubelet({ manifests: podManifests, rootDir: root }, ['--node-status-update-frequency=1s']);
  t.teardown(() => k.stop());
  const devices = k.c.resolve<DeviceManager>(Tokens.DeviceManager);
  const nodeAnyWay = k.c.resolve<() => Promise<V1Node | undefined>>(Tokens.NodeAnyWay);
  const socketDir = join(root, 'device-plugins');
  const registry = join(root, 'plugins_registry');
  // The kubelet is up (it cleans its device plugin directory as it starts): then the sample plugin.
  await pollUntil(() => existsSync(join(socketDir, 'kubelet.sock')), 20, 30_000);
  t.ok(existsSync(join(socketDir, 'DEPRECATION')), 'the device manager tells plugins it takes plugin watcher registrations');
  const sample = fileURLToPath(new URL('../../../tools/sample-device-plugin/sample-device-plugin.mjs', import.meta.url));
  const logs = process.env.KUBELET_E2E_LOGS ? 'inherit' : 'ignore';
  const child = spawn(process.execPath, [sample, '--resource', GADGET, '--devices', '2', '--socket-dir', socketDir, '--plugins-registry', registry], {
    stdio: ['ignore', logs, logs],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  const regSocket = join(registry, 'example.com_gadget-reg.sock');

  await pollUntil(() => devices.getCapacity().allocatable[GADGET] === 2, 50, 30_000);
  t.same(devices.getCapacity(), { capacity: { [GADGET]: 2 }, allocatable: { [GADGET]: 2 }, removed: [] }, 'registered without kubelet.sock');
  // The Node as the kubelet reports it (computed at most once per node status period).
  await pollUntil(async () => (await nodeAnyWay())?.status?.allocatable?.[GADGET] === '2', 100, 30_000);
  const node = await nodeAnyWay();
  t.equal(node?.status?.capacity?.[GADGET], '2', "the node's capacity");
  t.equal(node?.status?.allocatable?.[GADGET], '2', "the node's allocatable");

  const limits = { limits: { [GADGET]: '1' }, requests: { [GADGET]: '1' } };
  writeManifest('gadget', { containers: [{ name: 'gadget-app', command: ['sh', '-c', `echo "got $SAMPLE_DEVICES"; ${sleepForever}`], resources: limits }] }, podManifests);
  await pollUntil(() => running('gadget')(statusOf(k.kubelet, 'gadget')?.status ?? {}), 100, 30_000);
  const config = created.find((c) => c.metadata?.name === 'gadget-app')!;
  // The sample plugin prefers the highest-numbered free device.
  t.same(
    config.envs?.filter((e) => e.key?.startsWith('SAMPLE_')),
    [
      { key: 'SAMPLE_DEVICES', value: 'gadget-1' },
      { key: 'SAMPLE_RESOURCE', value: GADGET },
    ],
    "the plugin's envs",
  );
  t.equal(config.annotations?.['sample.example.com/devices'], 'gadget-1');

  // The registration socket goes: the watcher deregisters the plugin, its endpoint stops, its devices are unhealthy.
  rmSync(regSocket);
  await pollUntil(() => devices.getCapacity().allocatable[GADGET] === 0, 50, 30_000);
  t.same(devices.getCapacity(), { capacity: { [GADGET]: 2 }, allocatable: { [GADGET]: 0 }, removed: [] }, 'deregistered: capacity kept, nothing allocatable');
  await pollUntil(async () => (await nodeAnyWay())?.status?.allocatable?.[GADGET] === '0', 100, 30_000);
  t.equal((await nodeAnyWay())?.status?.capacity?.[GADGET], '2', "the node's capacity until the grace period ends");
  t.ok(running('gadget')(statusOf(k.kubelet, 'gadget')?.status ?? {}), 'the pod keeps running');
});
