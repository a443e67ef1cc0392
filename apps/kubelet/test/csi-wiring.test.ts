// CSI end to end in API server mode, against @kubelet-ts/test-apiserver on the embedded local runtime: the composed
// kubelet (registerKubeletDeps/startKubelet) with a FakeCsiDriverServer, a real gRPC CSI driver (Identity + Node)
// whose registration socket appears in <root-dir>/plugins_registry. The plugin watcher registers it (GetInfo,
// NodeGetInfo, NotifyRegistrationStatus), the node info manager installs it on the CSINode and the Node (topology
// label, `csi.volume.kubernetes.io/nodeid`); a pod with a claim bound to a CSI PV gets it staged and published at
// Go's paths, handed to the container as a CRI mount, reported in volumesInUse, /stats/summary (pvcRef and the
// driver's NodeGetVolumeStats) and kubelet_volume_stats_*; deleting the pod unpublishes then unstages it. A pod of an
// unregistered driver gets Go's FailedMount event while another pod runs, and removing the registration socket
// deregisters the driver. As root the kubelet uses the SystemMounter (the fake driver mounts nothing); otherwise a
// FakeMounter stands in.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { existsSync, mkdtempSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { FakeCsiDriverServer } from '@kubelet-ts/csi/testing';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { startTestApiServer, type ResourceDef, type SmpSchema } from '@kubelet-ts/test-apiserver';
import type { Mounter } from '@kubelet-ts/volume-manager';
import { FakeMounter } from '@kubelet-ts/volume-manager/testing';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type RunningKubelet } from '../src/index.js';
import { removeScratchDir, sleepForever, waitFor } from './e2e/harness.js';

type Json = Record<string, any>;

const NODE = 'csi-node';
const NS = 'e2e-csi';
const IMAGE = 'localhost/kubelet-ts/busybox:1';
const DRIVER = 'fake.csi.k8s.io';
const MISSING_DRIVER = 'missing.csi.k8s.io';
const NODE_ID = 'fake-node-id-1';
const TOPOLOGY_KEY = 'topology.fake.csi.k8s.io/zone';
const PV = 'pv-csi-1';
const HANDLE = 'vol-handle-1';
const CLAIM = 'data';

const isRoot = process.getuid?.() === 0 && process.env.KUBELET_E2E_FAKE_MOUNTER !== '1';

// The resources the CSI wiring reads and writes that the test API server does not serve by default.
const metaOnly: SmpSchema = { metadata: { fields: { ownerReferences: { mergeKey: 'uid' }, finalizers: { primitiveMerge: true } } } };
const def = (group: string, resource: string, kind: string, namespaced: boolean, extra: Partial<ResourceDef> = {}): ResourceDef => ({
  group,
  version: 'v1',
  resource,
  kind,
  singular: kind.toLowerCase(),
  namespaced,
  smp: metaOnly,
  ...extra,
});
const extraResources: ResourceDef[] = [
  def('', 'persistentvolumes', 'PersistentVolume', false, { shortNames: ['pv'] }),
  def('', 'persistentvolumeclaims', 'PersistentVolumeClaim', true, { shortNames: ['pvc'] }),
  def('storage.k8s.io', 'csinodes', 'CSINode', false),
  def('storage.k8s.io', 'csidrivers', 'CSIDriver', false),
  def('storage.k8s.io', 'volumeattachments', 'VolumeAttachment', false),
];

const dir = mkdtempSync(join(tmpdir(), 'kubelet-csi-'));
const root = join(dir, 'root');
const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
await local.start();
const server = await startTestApiServer({ extraResources });
const runtime = new RemoteRuntimeService({ endpoint: local.endpoint });
const fakeMounter = isRoot ? undefined : new FakeMounter();
const controller = new AbortController();
const started: { kubelet?: RunningKubelet } = {};
const driver = new FakeCsiDriverServer({
  csiSocket: join(dir, 'csi', 'csi.sock'),
  registrationSocket: join(root, 'plugins_registry', `${DRIVER}-reg.sock`),
  driverName: DRIVER,
  nodeInfo: { nodeId: NODE_ID, maxVolumesPerNode: 0, accessibleTopology: { segments: { [TOPOLOGY_KEY]: 'zone-a' } } },
  capabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'],
});
driver.volumeStats = {
  usage: [
    { unit: 'BYTES', total: 1_073_741_824, available: 1_000_000_000, used: 73_741_824 },
    { unit: 'INODES', total: 65_536, available: 65_000, used: 536 },
  ],
};

t.teardown(async () => {
  controller.abort();
  await started.kubelet?.done.catch(() => undefined);
  await driver.stop().catch(() => undefined);
  await server.close();
  for (const sandbox of await runtime.listPodSandbox().catch(() => [])) {
    await runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
    await runtime.removePodSandbox(sandbox.id).catch(() => undefined);
  }
  runtime.close();
  await local.stop();
  await removeScratchDir(dir);
});

const kubeconfig = join(dir, 'kubeconfig');
await server.writeKubeconfig(kubeconfig);
const config = resolveConfig(
  parseFlags([
    `--kubeconfig=${kubeconfig}`,
    `--root-dir=${root}`,
    `--pod-logs-dir=${join(dir, 'logs')}`,
    `--container-runtime-endpoint=${local.endpoint}`,
    `--hostname-override=${NODE}`,
    '--healthz-port=0',
    '--address=127.0.0.1',
    '--port=0',
    '--read-only-port=0',
    // Anonymous requests with AlwaysAllow: the test reads /stats/summary and /metrics without credentials.
    '--anonymous-auth=true',
    '--authorization-mode=AlwaysAllow',
    '--node-status-update-frequency=1s',
    '--sync-frequency=10s',
    '--cgroups-per-qos=false',
  ]),
);
const c = container.createChildContainer();
registerKubeletDeps(c, config);
if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
if (fakeMounter) c.register<Mounter>(Tokens.Mounter, { useValue: fakeMounter });
const kubelet = await startKubelet(c, controller.signal);
started.kubelet = kubelet;
let exited = false;
void kubelet.done.then(
  () => (exited = true),
  () => (exited = true),
);

const get = (resource: string, namespace: string | undefined, name: string) => server.store.get(resource, namespace, name) as Json | undefined;
const podDir = (pod: Json) => join(root, 'pods', pod.metadata.uid);
const statusOf = (pod: Json | undefined, name = 'app'): Json | undefined => (pod?.status?.containerStatuses ?? []).find((s: Json) => s.name === name);
const isRunning = (pod: Json | undefined): pod is Json => pod?.status?.phase === 'Running' && statusOf(pod)?.state?.running !== undefined;
const containersOf = (pod: string) => runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': NS } });
const eventsFor = (name: string) => (server.store.list('events', NS) as Json[]).filter((e) => e.involvedObject?.name === name);
const csiNodeDrivers = (): Json[] => (get('csinodes', undefined, NODE)?.spec?.drivers ?? []) as Json[];
const methods = () => driver.calls.map((call) => call.method);

function kubeletGet(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpsRequest({ host: '127.0.0.1', port: kubelet.port, path, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** A claim bound to a CSI PV (made first, so the PV's claimRef has its uid), and the driver's CSIDriver object. */
function createBoundClaim(claimName: string, pvName: string, driverName: string, volumeHandle: string): void {
  if (!get('csidrivers', undefined, driverName)) {
    server.store.create('csidrivers', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: driverName },
      spec: { attachRequired: false, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'] },
    });
  }
  const claim = server.store.create('persistentvolumeclaims', {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claimName, namespace: NS },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: pvName, volumeMode: 'Filesystem' },
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } },
  }) as Json;
  server.store.create('persistentvolumes', {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      volumeMode: 'Filesystem',
      claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: NS, name: claimName, uid: claim.metadata.uid },
      csi: { driver: driverName, volumeHandle, fsType: 'ext4', volumeAttributes: { flavour: 'fake' } },
    },
    status: { phase: 'Bound' },
  });
}

function claimPod(name: string, claimName: string): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      automountServiceAccountToken: false,
      containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }],
    },
  };
}

if (!isRoot) t.comment('not root: a FakeMounter stands in for the SystemMounter');

await waitFor('node registration and Ready', () => get('nodes', undefined, NODE)?.status?.conditions?.some((cond: Json) => cond.type === 'Ready' && cond.status === 'True'));
server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });

await t.test('a driver whose registration socket appears in plugins_registry registers: CSINode and Node get its node info', async (t) => {
  await driver.start();
  const registered = await waitFor('NotifyRegistrationStatus', () => driver.registrationStatuses[0]).catch(() => undefined);
  t.same(registered, { pluginRegistered: true, error: '' }, 'the kubelet notified the registrar: registered, no error');
  const calls = methods();
  t.ok(calls.includes('GetInfo'), `the kubelet asked the registration socket's GetInfo (${calls.join(', ')})`);
  t.ok(calls.includes('NodeGetInfo'), 'and the driver\'s NodeGetInfo');
  t.ok(calls.indexOf('GetInfo') < calls.indexOf('NodeGetInfo') && calls.indexOf('NodeGetInfo') < calls.lastIndexOf('NotifyRegistrationStatus'), 'GetInfo, then NodeGetInfo, then NotifyRegistrationStatus');

  const entry = await waitFor(`the driver on CSINode ${NODE}`, () => csiNodeDrivers().find((d) => d.name === DRIVER)).catch(() => undefined);
  t.equal(entry?.nodeID, NODE_ID, 'the CSINode driver entry has the node ID');
  t.same(entry?.topologyKeys, [TOPOLOGY_KEY], 'and the topology keys');
  const csiNode = get('csinodes', undefined, NODE);
  const nodeObject = get('nodes', undefined, NODE);
  t.same(
    (csiNode?.metadata?.ownerReferences ?? []).map((r: Json) => [r.kind, r.name, r.uid]),
    [['Node', NODE, nodeObject?.metadata?.uid]],
    'the CSINode is owned by the Node',
  );

  const node = await waitFor('the Node labelled and annotated', () => {
    const n = get('nodes', undefined, NODE);
    return n?.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'] && n;
  }).catch(() => get('nodes', undefined, NODE));
  t.equal(node?.metadata?.labels?.[TOPOLOGY_KEY], 'zone-a', 'the Node has the topology label');
  t.same(JSON.parse(node?.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'] ?? '{}'), { [DRIVER]: NODE_ID }, 'the Node has the node ID annotation');
});

await t.test('a pod with a claim bound to a CSI PV: staged, published, mounted, in use, in the stats; deleting it unpublishes then unstages', async (t) => {
  createBoundClaim(CLAIM, PV, DRIVER, HANDLE);
  server.store.create('pods', claimPod('csi-app', CLAIM));
  const pod = await waitFor('pod csi-app Running in the API server', () => {
    const p = get('pods', NS, 'csi-app');
    return isRunning(p) && p;
  }).catch((error: Error) => {
    t.fail(`${error.message}: events ${JSON.stringify(eventsFor('csi-app').map((e) => e.message))}`);
    return undefined;
  });
  if (!pod) return;
  const stagingPath = join(root, 'plugins', 'kubernetes.io', 'csi', 'pv', PV, 'globalmount');
  const targetPath = join(podDir(pod), 'volumes', 'kubernetes.io~csi', PV, 'mount');

  const [stage] = driver.callsOf('NodeStageVolume') as Json[];
  t.equal(stage?.volumeId, HANDLE, 'NodeStageVolume of the volume handle');
  t.equal(stage?.stagingTargetPath, stagingPath, 'staged at <root>/plugins/kubernetes.io/csi/pv/<pv>/globalmount');
  t.same(stage?.volumeContext, { flavour: 'fake' }, 'with the PV\'s volumeAttributes');
  t.equal(stage?.volumeCapability?.mount?.fsType, 'ext4', 'a mount capability with the PV\'s fsType');
  t.equal(stage?.volumeCapability?.accessMode?.mode, 'SINGLE_NODE_WRITER', 'ReadWriteOnce is SINGLE_NODE_WRITER');
  const [publish] = driver.callsOf('NodePublishVolume') as Json[];
  t.equal(publish?.volumeId, HANDLE, 'NodePublishVolume of the volume handle');
  t.equal(publish?.targetPath, targetPath, 'published at <root>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount');
  t.equal(publish?.stagingTargetPath, stagingPath, 'from the staging path');
  t.equal(publish?.readonly, false, 'read-write');
  t.ok(methods().indexOf('NodeStageVolume') < methods().indexOf('NodePublishVolume'), 'staged before published');

  const [app] = (await containersOf('csi-app')).filter((ctr) => ctr.metadata?.name === 'app' && ctr.state === 'CONTAINER_RUNNING');
  t.ok(app, 'the app container runs in the runtime');
  const { status } = app ? await runtime.containerStatus(app.id) : { status: undefined };
  const mount = (status?.mounts ?? []).find((m) => m.containerPath === '/data');
  t.equal(mount?.hostPath, targetPath, 'the container\'s /data is the published target');
  t.equal(mount?.readonly ?? false, false, 'read-write');

  const inUse = `kubernetes.io/csi/${DRIVER}^${HANDLE}`;
  const node = await waitFor('volumesInUse in the node status', () => {
    const n = get('nodes', undefined, NODE);
    return (n?.status?.volumesInUse ?? []).includes(inUse) && n;
  }).catch(() => get('nodes', undefined, NODE));
  t.same(node?.status?.volumesInUse, [inUse], `node status volumesInUse is [${inUse}]`);

  const summaryResponse = await kubeletGet('/stats/summary');
  t.equal(summaryResponse.status, 200, '/stats/summary answers');
  const summary = JSON.parse(summaryResponse.body || '{}') as Json;
  const podStats = (summary.pods ?? []).find((p: Json) => p.podRef?.name === 'csi-app');
  const volume = (podStats?.volume ?? []).find((v: Json) => v.name === 'data');
  t.ok(volume, `the summary lists the pod's volume data (${JSON.stringify(podStats?.volume)})`);
  t.equal((podStats?.volume ?? []).filter((v: Json) => v.name === 'data').length, 1, 'once: the CSI volume directory is not also measured by du');
  t.same(volume?.pvcRef, { name: CLAIM, namespace: NS }, 'with its pvcRef');
  t.equal(volume?.usedBytes, 73_741_824, 'the driver\'s usedBytes');
  t.equal(volume?.capacityBytes, 1_073_741_824, 'capacityBytes');
  t.equal(volume?.availableBytes, 1_000_000_000, 'availableBytes');
  t.equal(volume?.inodesUsed, 536, 'inodesUsed');
  const stats = driver.callsOf('NodeGetVolumeStats') as Json[];
  t.ok(stats.length >= 1, 'the kubelet asked the driver\'s NodeGetVolumeStats');
  t.same(stats[0] && { volumeId: stats[0].volumeId, volumePath: stats[0].volumePath }, { volumeId: HANDLE, volumePath: targetPath }, 'of the volume at its target path');

  const metrics = await kubeletGet('/metrics');
  t.match(
    metrics.body,
    new RegExp(`kubelet_volume_stats_used_bytes\\{namespace="${NS}",persistentvolumeclaim="${CLAIM}"\\} 7\\.3741824e\\+07|kubelet_volume_stats_used_bytes\\{namespace="${NS}",persistentvolumeclaim="${CLAIM}"\\} 73741824`),
    '/metrics has kubelet_volume_stats_used_bytes of the claim',
  );
  t.match(metrics.body, new RegExp(`kubelet_volume_stats_capacity_bytes\\{namespace="${NS}",persistentvolumeclaim="${CLAIM}"\\}`), 'and kubelet_volume_stats_capacity_bytes');

  // Deleting the pod: NodeUnpublishVolume, then NodeUnstageVolume (no other pod uses the volume), the pod dir goes.
  server.store.delete('pods', NS, 'csi-app', { gracePeriodSeconds: 5 });
  await waitFor('pod csi-app gone from the API server', () => get('pods', NS, 'csi-app') === undefined);
  const gone = await waitFor('the directory of csi-app removed', () => !existsSync(podDir(pod)), 30_000).catch(() => false);
  t.ok(gone, `${podDir(pod)} is removed`);
  const unstaged = await waitFor('NodeUnstageVolume', () => driver.callsOf('NodeUnstageVolume').length > 0, 30_000).catch(() => false);
  t.ok(unstaged, 'the driver saw NodeUnstageVolume');
  const [unpublish] = driver.callsOf('NodeUnpublishVolume') as Json[];
  t.same(unpublish && { volumeId: unpublish.volumeId, targetPath: unpublish.targetPath }, { volumeId: HANDLE, targetPath }, 'NodeUnpublishVolume of the target');
  const [unstage] = driver.callsOf('NodeUnstageVolume') as Json[];
  t.same(unstage && { volumeId: unstage.volumeId, stagingTargetPath: unstage.stagingTargetPath }, { volumeId: HANDLE, stagingTargetPath: stagingPath }, 'NodeUnstageVolume of the staging path');
  t.ok(methods().lastIndexOf('NodeUnpublishVolume') < methods().lastIndexOf('NodeUnstageVolume'), 'unpublished before unstaged');
  const released = await waitFor('volumesInUse cleared', () => (get('nodes', undefined, NODE)?.status?.volumesInUse ?? []).length === 0, 30_000).catch(() => false);
  t.ok(released, 'node status volumesInUse no longer lists the volume');
});

await t.test('a pod of an unregistered driver gets a FailedMount event while another pod runs', async (t) => {
  createBoundClaim('data-missing', 'pv-missing', MISSING_DRIVER, 'vol-missing');
  server.store.create('pods', claimPod('csi-missing', 'data-missing'));
  server.store.create('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'plain', namespace: NS },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      automountServiceAccountToken: false,
      containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
      volumes: [{ name: 'scratch', emptyDir: {} }],
    },
  });
  const event = await waitFor('a FailedMount event for csi-missing', () => eventsFor('csi-missing').find((e) => e.reason === 'FailedMount')).catch(() => undefined);
  t.equal(event?.type, 'Warning', 'a Warning');
  t.match(event?.message ?? '', `driver name ${MISSING_DRIVER} not found in the list of registered CSI drivers`, `Go's message: ${event?.message}`);
  t.match(event?.message ?? '', /^MountVolume\.MountDevice failed for volume "pv-missing" : kubernetes\.io\/csi: attacher\.MountDevice failed to create newCsiDriverClient: /, 'from MountDevice, as Go reports it');
  const plain = await waitFor('pod plain Running', () => {
    const p = get('pods', NS, 'plain');
    return isRunning(p) && p;
  }).catch(() => undefined);
  t.ok(plain, 'the other pod runs');
  const missing = get('pods', NS, 'csi-missing');
  t.equal(missing?.status?.phase, 'Pending', 'the pod of the missing driver stays Pending');
  t.equal((await containersOf('csi-missing')).length, 0, 'no container was created for it');
});

await t.test('removing the registration socket deregisters the driver', async (t) => {
  await driver.stopRegistration();
  const removed = await waitFor('the driver off the CSINode', () => get('csinodes', undefined, NODE) && !csiNodeDrivers().some((d) => d.name === DRIVER)).catch(() => false);
  t.ok(removed, `CSINode ${NODE} no longer lists ${DRIVER} (${JSON.stringify(csiNodeDrivers())})`);
  const annotation = await waitFor('the node ID annotation gone', () => {
    const a = get('nodes', undefined, NODE)?.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'];
    return (a === undefined || !(DRIVER in JSON.parse(a))) && true;
  }).catch(() => false);
  t.ok(annotation, 'the Node\'s csi.volume.kubernetes.io/nodeid no longer names the driver');
  t.notOk(exited, 'the kubelet ran throughout');
});
