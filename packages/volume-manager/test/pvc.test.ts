import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeApiObjects } from '../src/fake-api.js';
import { nodeOwnershipFs, type OwnershipFs } from '../src/ownership.js';
import { PersistentClaimPlugin } from '../src/plugins/pvc.js';
import { FakeMounter } from '../src/testing-mounter.js';
import type { VolumeContext, VolumeHost } from '../src/types.js';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vm-pvc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function makeHost(podsDir: string, api: FakeApiObjects): VolumeHost {
  return {
    podsDir,
    nodeName: 'node-1',
    mounter: new FakeMounter(),
    configMaps: api,
    secrets: api,
    tokens: api,
    persistentVolumes: api,
    node: { allocatableMilliCpu: 4000, allocatableMemoryBytes: 2 ** 33, hostIPs: () => ['10.0.0.1'] },
    clock: new FakeClock(),
    logger: new RecordingLogger(),
  };
}

function makePod(opts: { readOnly?: boolean; devices?: boolean; fsGroupChangePolicy?: string } = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: {
      ...(opts.fsGroupChangePolicy ? { securityContext: { fsGroupChangePolicy: opts.fsGroupChangePolicy } } : {}),
      containers: [{ name: 'app', ...(opts.devices ? { volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: 'data', mountPath: '/data' }] }) }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'claim', ...(opts.readOnly !== undefined ? { readOnly: opts.readOnly } : {}) } }],
    },
  };
}

function context(host: VolumeHost, pod = makePod(), fsGroup?: number): VolumeContext {
  return {
    pod,
    volume: pod.spec!.volumes![0],
    dir: join(host.podsDir, 'uid-1', 'volumes', 'kubernetes.io~persistent-claim', 'data'),
    host,
    ...(fsGroup !== undefined ? { fsGroup } : {}),
  };
}

function claim(overrides: Partial<V1PersistentVolumeClaim> = {}): V1PersistentVolumeClaim {
  return {
    metadata: { name: 'claim', namespace: 'default', uid: 'claim-uid' },
    spec: { volumeName: 'pv1' },
    status: { phase: 'Bound' },
    ...overrides,
  };
}

function pv(spec: V1PersistentVolume['spec']): V1PersistentVolume {
  return { metadata: { name: 'pv1' }, spec: { claimRef: { namespace: 'default', name: 'claim', uid: 'claim-uid' }, ...spec } };
}

const prefix = 'error processing PVC default/claim: ';

t.test('the claim must exist, be bound and name its volume', async (t) => {
  const api = new FakeApiObjects();
  const host = makeHost(await tempDir(t), api);
  const plugin = new PersistentClaimPlugin();
  t.ok(plugin.canSupport({ name: 'x', persistentVolumeClaim: { claimName: 'c' } }));
  t.notOk(plugin.canSupport({ name: 'x', emptyDir: {} }));
  t.equal(plugin.requiresRemount, false);

  await t.rejects(plugin.setUp(context(host)), { message: `${prefix}failed to fetch PVC from API server: persistentvolumeclaim "claim" not found` });
  api.setClaim(claim({ status: { phase: 'Pending' } }));
  await t.rejects(plugin.setUp(context(host)), { message: `${prefix}PVC is not bound` });
  api.setClaim(claim({ spec: {} }));
  await t.rejects(plugin.setUp(context(host)), { message: `${prefix}PVC has empty pvc.Spec.VolumeName` });
  api.setClaim(claim({ metadata: { name: 'claim', namespace: 'default', uid: 'claim-uid', deletionTimestamp: new Date() } }));
  await t.rejects(plugin.setUp(context(host)), { message: `${prefix}PVC is being deleted` });
});

t.test('the volume must exist and be bound to this claim', async (t) => {
  const api = new FakeApiObjects();
  api.setClaim(claim());
  const host = makeHost(await tempDir(t), api);
  const plugin = new PersistentClaimPlugin();
  await t.rejects(plugin.setUp(context(host)), { message: `${prefix}failed to fetch PV pv1 from API server: persistentvolume "pv1" not found` });
  api.setVolume({ metadata: { name: 'pv1' }, spec: { hostPath: { path: '/tmp' } } });
  await t.rejects(plugin.setUp(context(host)), {
    message: `${prefix}found PV object pv1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`,
  });
  api.setVolume(pv({ claimRef: { name: 'claim', uid: 'other' }, hostPath: { path: '/tmp' } }));
  await t.rejects(plugin.setUp(context(host)), { message: `${prefix}found PV object pv1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID claim-uid` });
});

t.test('a hostPath PV: its path, the hostPath checks, read-only from the pod', async (t) => {
  const dir = await tempDir(t);
  const api = new FakeApiObjects();
  api.setClaim(claim());
  const host = makeHost(join(dir, 'pods'), api);
  const plugin = new PersistentClaimPlugin();
  const data = join(dir, 'pv-data');

  api.setVolume(pv({ hostPath: { path: data, type: 'Directory' } }));
  await t.rejects(plugin.setUp(context(host)), { message: `hostPath type check failed: ${data} is not a directory` });
  api.setVolume(pv({ hostPath: { path: data, type: 'DirectoryOrCreate' } }));
  t.same(await plugin.setUp(context(host)), { path: data, readOnly: false, selinuxRelabel: false });
  t.ok((await stat(data)).isDirectory(), 'created as the hostPath plugin does');
  t.same(await plugin.setUp(context(host, makePod({ readOnly: true }))), { path: data, readOnly: true, selinuxRelabel: false });
  api.setVolume(pv({ hostPath: { path: '/a/../b' } }));
  await t.rejects(plugin.setUp(context(host)), { message: "invalid HostPath `/a/../b`: must not contain '..'" });
});

t.test('a local PV: its path must exist; fsGroup applies unless read-only', async (t) => {
  const dir = await tempDir(t);
  const api = new FakeApiObjects();
  api.setClaim(claim());
  const host = makeHost(join(dir, 'pods'), api);
  const chowns: string[] = [];
  const fs: OwnershipFs = { ...nodeOwnershipFs, chown: async (p) => void chowns.push(p) };
  const plugin = new PersistentClaimPlugin({ ownershipFs: fs });
  const data = join(dir, 'disk1');

  api.setVolume(pv({ local: { path: data } }));
  await t.rejects(plugin.setUp(context(host)), { message: `path "${data}" does not exist` });
  await mkdir(data);
  await writeFile(join(data, 'f'), 'x');
  t.same(await plugin.setUp(context(host, makePod(), 2000)), { path: data, readOnly: false, selinuxRelabel: true, inUseName: 'kubernetes.io/local-volume/pv1' });
  t.same(chowns, [join(data, 'f'), data], 'recursive ownership change');
  t.equal((await stat(data)).mode & 0o2070, 0o2070);

  chowns.length = 0;
  await plugin.setUp(context(host, makePod({ readOnly: true }), 2000));
  t.same(chowns, [], 'a read-only claim is left alone');

  chowns.length = 0;
  const rootMatches: OwnershipFs = { ...fs, stat: async (p) => ({ ...(await nodeOwnershipFs.stat(p)), gid: 2000 }) };
  await new PersistentClaimPlugin({ ownershipFs: rootMatches }).setUp(context(host, makePod({ fsGroupChangePolicy: 'OnRootMismatch' }), 2000));
  t.same(chowns, [], "OnRootMismatch from the pod's security context");

  api.setVolume(pv({ local: { path: '' } }));
  await t.rejects(plugin.setUp(context(host)), { message: 'LocalVolume volume "pv1" path is empty' });
  api.setVolume(pv({ local: { path: '/mnt/../etc' } }));
  await t.rejects(plugin.setUp(context(host)), { message: "invalid path: /mnt/../etc must not contain '..'" });
});

t.test('other PV types and block volumes are refused clearly', async (t) => {
  const api = new FakeApiObjects();
  api.setClaim(claim());
  const host = makeHost(await tempDir(t), api);
  const plugin = new PersistentClaimPlugin();
  api.setVolume(pv({ accessModes: ['ReadWriteMany'], capacity: { storage: '1Gi' }, nfs: { server: 'nfs.local', path: '/exports' } }));
  await t.rejects(plugin.setUp(context(host)), {
    message: 'persistentvolume "pv1" bound to claim default/claim is a nfs volume; only hostPath and local persistent volumes are supported by this kubelet',
  });
  api.setVolume(pv({ volumeMode: 'Block', local: { path: '/dev/sdb' } }));
  await t.rejects(plugin.setUp(context(host)), { message: 'volume data has volumeMode Block, but is specified in volumeMounts' });
  await t.rejects(plugin.setUp(context(host, makePod({ devices: true }))), { message: /raw block volumes \(volumeDevices\) are not supported/ });
  api.setVolume(pv({ local: { path: '/mnt' } }));
  await t.rejects(plugin.setUp(context(host, makePod({ devices: true }))), { message: 'volume data has volumeMode Filesystem, but is specified in volumeDevices' });
});

t.test('tearDown removes only the bookkeeping directory', async (t) => {
  const dir = await tempDir(t);
  const api = new FakeApiObjects();
  api.setClaim(claim());
  const data = join(dir, 'pv-data');
  await mkdir(data);
  await writeFile(join(data, 'keep'), 'k');
  api.setVolume(pv({ hostPath: { path: data } }));
  const host = makeHost(join(dir, 'pods'), api);
  const plugin = new PersistentClaimPlugin();
  const ctx = context(host);
  await plugin.setUp(ctx);
  await mkdir(ctx.dir, { recursive: true });
  await plugin.tearDown(ctx.dir, host);
  await t.rejects(stat(ctx.dir), { code: 'ENOENT' });
  t.equal(await readFile(join(data, 'keep'), 'utf8'), 'k');
});

t.test('generic ephemeral volumes; a claim and PV handed in by the volume manager are used as they are', async (t) => {
  const dir = await tempDir(t);
  const api = new FakeApiObjects();
  const host = makeHost(join(dir, 'pods'), api);
  const plugin = new PersistentClaimPlugin();
  t.ok(plugin.canSupport({ name: 'x', ephemeral: { volumeClaimTemplate: { spec: {} } } }));

  const data = join(dir, 'pv-data');
  await mkdir(data);
  const ctx: VolumeContext = { ...context(host), persistentVolume: { claim: claim(), volume: pv({ hostPath: { path: data } }), readOnly: true } };
  t.same(await plugin.setUp(ctx), { path: data, readOnly: true, selinuxRelabel: false });
  t.same([api.calls.claims, api.calls.volumes], [0, 0], 'nothing read from the API server');

  // Called on its own for an ephemeral volume, it reads `<pod>-<volume>` and checks the pod controls it.
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: { containers: [{ name: 'app', volumeMounts: [{ name: 'scratch', mountPath: '/s' }] }], volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } }] },
  };
  const eph = (): VolumeContext => ({ pod, volume: pod.spec!.volumes![0], dir: join(host.podsDir, 'x'), host });
  await t.rejects(plugin.setUp(eph()), {
    message: 'error processing PVC default/web-scratch: failed to fetch PVC from API server: persistentvolumeclaim "web-scratch" not found',
  });
  api.setClaim({ ...claim(), metadata: { name: 'web-scratch', namespace: 'default', uid: 'claim-uid' } });
  api.setVolume(pv({ hostPath: { path: data } }));
  await t.rejects(plugin.setUp(eph()), { message: 'PVC default/web-scratch was not created for pod default/web (pod is not owner)' });
  api.setClaim({
    ...claim(),
    metadata: { name: 'web-scratch', namespace: 'default', uid: 'claim-uid', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1', controller: true }] },
  });
  t.same(await plugin.setUp(eph()), { path: data, readOnly: false, selinuxRelabel: false });
});
