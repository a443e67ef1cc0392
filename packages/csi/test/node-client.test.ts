import t from 'tap';
import type { Test } from 'tap';
import { join } from 'node:path';
import { CsiCallError, GrpcCode, GrpcCsiNodeClient, createCsiNodeClient } from '../src/index.js';
import { FakeCsiDriverServer } from '../src/testing.js';
import { rejection, tempDir } from './csi-helpers.js';

async function setup(t: Test, timeoutMs?: number) {
  const dir = tempDir(t);
  const server = new FakeCsiDriverServer({
    csiSocket: join(dir, 'csi.sock'),
    nodeInfo: { nodeId: 'node-a', maxVolumesPerNode: 16, accessibleTopology: { segments: { 'topology.fake/zone': 'z1' } } },
    capabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME'],
  });
  await server.start();
  const client = new GrpcCsiNodeClient(`unix://${server.csiSocket}`, timeoutMs === undefined ? {} : { timeoutMs });
  t.teardown(async () => {
    client.close();
    await server.stop();
  });
  return { dir, server, client };
}

const capability = { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' as const } };

t.test('every Node call reaches the driver with its fields, and answers come back as the types say', async (t) => {
  const { server, client } = await setup(t);
  t.same(await client.nodeGetInfo(), { nodeId: 'node-a', maxVolumesPerNode: 16, accessibleTopology: { segments: { 'topology.fake/zone': 'z1' } } });
  t.same(await client.nodeGetCapabilities(), ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME']);
  await client.nodeStageVolume({
    volumeId: 'vol-1',
    publishContext: { devicePath: '/dev/x' },
    stagingTargetPath: '/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pv-1/globalmount',
    volumeCapability: capability,
    secrets: { password: 's3cret' },
    volumeContext: { a: 'b' },
  });
  await client.nodePublishVolume({
    volumeId: 'vol-1',
    publishContext: {},
    stagingTargetPath: '/stage',
    targetPath: '/target',
    volumeCapability: { block: {}, accessMode: { mode: 'SINGLE_NODE_SINGLE_WRITER' } },
    readonly: true,
    secrets: {},
    volumeContext: { 'csi.storage.k8s.io/pod.name': 'p' },
  });
  await client.nodeUnpublishVolume({ volumeId: 'vol-1', targetPath: '/target' });
  await client.nodeUnstageVolume({ volumeId: 'vol-1', stagingTargetPath: '/stage' });
  server.volumeStats = { usage: [{ available: 5, total: 10, used: 5, unit: 'BYTES' }, { available: 1, total: 3, used: 2, unit: 'INODES' }], volumeCondition: { abnormal: true, message: 'bad' } };
  t.same(await client.nodeGetVolumeStats({ volumeId: 'vol-1', volumePath: '/target', stagingTargetPath: '/stage' }), server.volumeStats);
  t.same(await client.nodeExpandVolume({ volumeId: 'vol-1', volumePath: '/target', capacityRange: { requiredBytes: 2 ** 40, limitBytes: 0 } }), { capacityBytes: 2 ** 40 });

  t.same(
    server.calls.map((c) => c.method),
    ['NodeGetInfo', 'NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume', 'NodeGetVolumeStats', 'NodeExpandVolume'],
  );
  t.match(server.callsOf('NodeStageVolume')[0], {
    volumeId: 'vol-1',
    publishContext: { devicePath: '/dev/x' },
    stagingTargetPath: '/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pv-1/globalmount',
    volumeCapability: { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' }, accessType: 'mount' },
    secrets: { password: 's3cret' },
    volumeContext: { a: 'b' },
  });
  t.match(server.callsOf('NodePublishVolume')[0], { readonly: true, targetPath: '/target', stagingTargetPath: '/stage', volumeCapability: { accessType: 'block', accessMode: { mode: 'SINGLE_NODE_SINGLE_WRITER' } } });
  t.match(server.callsOf('NodeGetVolumeStats')[0], { volumeId: 'vol-1', volumePath: '/target', stagingTargetPath: '/stage' });
  t.match(server.callsOf('NodeExpandVolume')[0], { capacityRange: { requiredBytes: 2 ** 40 } });
});

t.test('a response without topology or volume condition leaves them out; the Identity service answers', async (t) => {
  const { server, client } = await setup(t);
  server.nodeInfo = { nodeId: 'n', maxVolumesPerNode: 0 };
  t.same(await client.nodeGetInfo(), { nodeId: 'n', maxVolumesPerNode: 0 });
  t.same(await client.nodeGetVolumeStats({ volumeId: 'v', volumePath: '/p' }), { usage: [] });
  t.match(await client.getPluginInfo(), { name: 'fake.csi.k8s.io', vendorVersion: '0.0.0-fake' });
  t.equal(await client.probe(), true);
  t.same(await client.getPluginCapabilities(), []);
});

t.test("a driver error is a CsiCallError worded as Go's status error", async (t) => {
  const { server, client } = await setup(t);
  server.failOn('NodePublishVolume', GrpcCode.FailedPrecondition, 'volume not staged');
  const err = await rejection(t, client.nodePublishVolume({ volumeId: 'v', publishContext: {}, targetPath: '/t', volumeCapability: capability, readonly: false, secrets: {}, volumeContext: {} }));
  t.ok(err instanceof CsiCallError);
  t.equal(err.message, 'rpc error: code = FailedPrecondition desc = volume not staged');
  t.equal((err as CsiCallError).code, 9);
  t.equal((err as CsiCallError).codeName, 'FailedPrecondition');
  t.equal((err as CsiCallError).details, 'volume not staged');
  // The next call goes through.
  await client.nodePublishVolume({ volumeId: 'v', publishContext: {}, targetPath: '/t', volumeCapability: capability, readonly: false, secrets: {}, volumeContext: {} });
});

t.test('an AbortSignal cancels the call: Canceled, context canceled', async (t) => {
  const { server, client } = await setup(t);
  server.hang('NodeStageVolume');
  const ac = new AbortController();
  const p = client.nodeStageVolume({ volumeId: 'v', publishContext: {}, stagingTargetPath: '/s', volumeCapability: capability, secrets: {}, volumeContext: {} }, ac.signal);
  while (server.callsOf('NodeStageVolume').length === 0) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  const err = await rejection(t, p);
  t.equal(err.message, 'rpc error: code = Canceled desc = context canceled');
  t.equal((err as CsiCallError).code, GrpcCode.Canceled);
  // An already aborted signal fails at once.
  const again = await rejection(t, client.nodeGetInfo(ac.signal));
  t.equal(again.message, 'rpc error: code = Canceled desc = context canceled');
});

t.test('the per-call deadline: DeadlineExceeded, context deadline exceeded', async (t) => {
  const { server, client } = await setup(t, 50);
  server.hang('NodeUnstageVolume');
  const err = await rejection(t, client.nodeUnstageVolume({ volumeId: 'v', stagingTargetPath: '/s' }));
  t.equal(err.message, 'rpc error: code = DeadlineExceeded desc = context deadline exceeded');
});

t.test("a driver that is not listening fails at once with Go's Unavailable dial error", async (t) => {
  const dir = tempDir(t);
  const socket = join(dir, 'missing.sock');
  const client = createCsiNodeClient(socket);
  t.teardown(() => client.close());
  const err = await rejection(t, client.nodeGetInfo());
  t.equal(err.message, `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing dial unix ${socket}: connect: no such file or directory"`);
  t.equal(client.socketPath, socket);
});

t.test('the client reconnects to a driver that restarted on the same socket; close() ends it', async (t) => {
  const { server, client } = await setup(t);
  t.equal((await client.nodeGetInfo()).nodeId, 'node-a');
  await server.stop();
  await server.start();
  let nodeId: string | undefined;
  for (let i = 0; i < 100 && nodeId === undefined; i++) {
    try {
      nodeId = (await client.nodeGetInfo()).nodeId;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  t.equal(nodeId, 'node-a');
  client.close();
  const err = await rejection(t, client.nodeGetInfo());
  t.equal((err as CsiCallError).code, GrpcCode.Canceled);
});
