// The CSI volume plugin against a real gRPC driver (FakeCsiDriverServer over a unix socket) through the
// driver registry and GrpcCsiNodeClient: what the driver receives on the wire, and its errors as Go words them.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CsiVolumeError } from '../src/csi-util.js';
import { GrpcCode } from '../src/errors.js';
import { CsiDriverRegistry } from '../src/registry.js';
import { FakeCsiDriverServer } from '../src/testing.js';
import { DRIVER, inlineContext, makeFixture, makePod, makePv, pvContext } from './volume-plugin-fixtures.js';

async function withDriver(t: Test) {
  const sockDir = mkdtempSync(path.join(tmpdir(), 'csi-vp-'));
  t.teardown(() => rmSync(sockDir, { recursive: true, force: true }));
  const server = new FakeCsiDriverServer({ csiSocket: path.join(sockDir, 'csi.sock'), driverName: DRIVER, capabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'] });
  await server.start();
  const registry = new CsiDriverRegistry();
  registry.set({ name: DRIVER, endpoint: server.csiSocket, highestSupportedVersion: '1.0.0' });
  const f = await makeFixture(t, { drivers: registry, actAsDriver: false });
  t.teardown(async () => {
    registry.delete(DRIVER);
    await server.stop();
  });
  f.csiDrivers.set(DRIVER, { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Persistent', 'Ephemeral'] });
  return { f, server, registry };
}

t.test('a PV staged, published, measured and torn down over gRPC', async (t) => {
  const { f, server } = await withDriver(t);
  const ctx = pvContext(f, makePod(), makePv('pv1', { mountOptions: ['ro', 'noatime'] }));
  const mounted = await f.plugin.setUp(ctx);
  t.equal(mounted.inUseName, `kubernetes.io/csi/${DRIVER}^vol-1`);
  t.same(
    server.calls.map((c) => c.method),
    ['NodeGetCapabilities', 'NodeStageVolume', 'NodeGetCapabilities', 'NodePublishVolume'],
  );
  const globalPath = path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1/globalmount');
  t.match(server.callsOf('NodeStageVolume')[0], {
    volumeId: 'vol-1',
    stagingTargetPath: globalPath,
    volumeCapability: { mount: { fsType: 'ext4', mountFlags: ['ro', 'noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    volumeContext: { tier: 'fast' },
  });
  t.match(server.callsOf('NodePublishVolume')[0], {
    volumeId: 'vol-1',
    stagingTargetPath: globalPath,
    targetPath: path.join(ctx.dir, 'mount'),
    readonly: false,
    volumeContext: { 'csi.storage.k8s.io/pod.uid': 'uid-1', 'csi.storage.k8s.io/ephemeral': 'false' },
  });

  server.volumeStats = {
    usage: [
      { unit: 'BYTES', total: 5_000_000_000, available: 4_000_000_000, used: 1_000_000_000 },
      { unit: 'INODES', total: 1000, available: 900, used: 100 },
    ],
  };
  t.match(await f.plugin.getVolumeStats(ctx.dir, mounted, f.host), { capacityBytes: 5_000_000_000, availableBytes: 4_000_000_000, usedBytes: 1_000_000_000, inodes: 1000 });

  await f.plugin.tearDown(ctx.dir, f.host);
  t.same(
    server.calls.map((c) => c.method).slice(-5),
    ['NodeGetCapabilities', 'NodeGetVolumeStats', 'NodeUnpublishVolume', 'NodeGetCapabilities', 'NodeUnstageVolume'],
  );
  t.match(server.callsOf('NodeUnstageVolume')[0], { volumeId: 'vol-1', stagingTargetPath: globalPath });
});

t.test('an inline volume and a block volume on the wire', async (t) => {
  const { f, server } = await withDriver(t);
  await f.plugin.setUp(inlineContext(f, makePod('uid-i', { volumeName: 'scratch', inline: { volumeAttributes: { a: 'b' } } })));
  const inline = server.callsOf('NodePublishVolume')[0] as { stagingTargetPath: string; volumeCapability: { mount?: unknown }; volumeContext: Record<string, string> };
  t.equal(inline.stagingTargetPath, '', 'no staging path for an inline volume');
  t.ok(inline.volumeCapability.mount);
  t.equal(inline.volumeContext['csi.storage.k8s.io/ephemeral'], 'true');

  const mounted = await f.plugin.setUp(pvContext(f, makePod('uid-b', { devices: true }), makePv('pv2', { handle: 'vol-2', volumeMode: 'Block' })));
  const block = server.callsOf('NodePublishVolume')[1] as { targetPath: string; volumeCapability: { block?: unknown; mount?: unknown } };
  t.equal(block.targetPath, mounted.devicePath);
  t.ok(block.volumeCapability.block, 'a block capability');
  t.notOk(block.volumeCapability.mount);
});

t.test("the driver's errors as Go words them", async (t) => {
  const { f, server } = await withDriver(t);
  const ctx = pvContext(f, makePod(), makePv());
  server.failOn('NodeStageVolume', GrpcCode.Internal, 'format failed');
  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.eventMessage('pv1'), 'MountVolume.MountDevice failed for volume "pv1" : rpc error: code = Internal desc = format failed');
  t.equal(err.uncertain, false);

  await server.stop();
  const down = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(down.operation, 'MountVolume.MountDevice');
  t.match(down.message, /^rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing dial unix .*csi\.sock: connect: no such file or directory"$/);
});
