// Shared set-up of the CSI volume plugin tests: a temp root (pods/, plugins/), a FakeMounter, a
// FakeCsiNodeClient that acts as a driver on the fake mount table, CSIDriver and VolumeAttachment maps.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import type { V1CSIDriver, V1CSIPersistentVolumeSource, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import type { OwnershipFs, OwnershipStat, VolumeContext, VolumeHost } from '@kubelet-ts/volume-manager';
import { FakeApiObjects, FakeMounter } from '@kubelet-ts/volume-manager/testing';
import { FakeCsiDriverLookup, FakeCsiNodeClient, type CsiNodeMethod } from '../src/testing.js';
import type { NodePublishVolumeRequest, NodeStageVolumeRequest, NodeUnpublishVolumeRequest, NodeUnstageVolumeRequest } from '../src/types.js';
import type { CsiDriverObjectGetter, VolumeAttachmentGetter } from '../src/types.js';
import { CsiVolumePlugin, type CsiVolumePluginOptions } from '../src/volume-plugin.js';

export const DRIVER = 'hostpath.csi.example.com';
export const NODE = 'node-1';

/** Lets real I/O and promise chains run until cond holds (no fake time moves); fails after many turns. */
export async function until(cond: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (cond()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export class MapCsiDrivers implements CsiDriverObjectGetter {
  readonly objects = new Map<string, V1CSIDriver>();
  calls = 0;
  error: Error | undefined;

  set(name: string, spec: V1CSIDriver['spec']): this {
    this.objects.set(name, { metadata: { name }, spec });
    return this;
  }

  async getCSIDriver(name: string): Promise<V1CSIDriver | undefined> {
    this.calls++;
    if (this.error) throw this.error;
    return this.objects.get(name);
  }
}

export class MapAttachments implements VolumeAttachmentGetter {
  readonly objects = new Map<string, V1VolumeAttachment>();
  readonly gets: string[] = [];
  error: Error | undefined;

  set(name: string, status: V1VolumeAttachment['status'], deleting = false): this {
    this.objects.set(name, {
      metadata: { name, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
      spec: { attacher: DRIVER, nodeName: NODE, source: {} },
      ...(status ? { status } : {}),
    });
    return this;
  }

  async getVolumeAttachment(name: string): Promise<V1VolumeAttachment | undefined> {
    this.gets.push(name);
    if (this.error) throw this.error;
    return this.objects.get(name);
  }
}

/** Records chown/chmod instead of doing them; stats come from a map (root dir only by default). */
export class RecordingOwnershipFs implements OwnershipFs {
  readonly chowns: Array<{ path: string; uid: number; gid: number }> = [];
  readonly chmods: Array<{ path: string; mode: number }> = [];
  async lstat(): Promise<OwnershipStat> {
    return { mode: 0o040755, uid: 0, gid: 0 };
  }
  async stat(): Promise<OwnershipStat> {
    return { mode: 0o040755, uid: 0, gid: 0 };
  }
  async readdir(): Promise<string[]> {
    return [];
  }
  async chown(p: string, uid: number, gid: number): Promise<void> {
    this.chowns.push({ path: p, uid, gid });
  }
  async chmod(p: string, mode: number): Promise<void> {
    this.chmods.push({ path: p, mode });
  }
}

export interface Fixture {
  root: string;
  podsDir: string;
  pluginsDir: string;
  mounter: FakeMounter;
  clock: FakeClock;
  logger: RecordingLogger;
  api: FakeApiObjects;
  client: FakeCsiNodeClient;
  drivers: FakeCsiDriverLookup;
  csiDrivers: MapCsiDrivers;
  attachments: MapAttachments;
  ownership: RecordingOwnershipFs;
  host: VolumeHost;
  plugin: CsiVolumePlugin;
  /** A new plugin over the same fakes (a kubelet restart). */
  restart(): CsiVolumePlugin;
}

export async function makeFixture(t: Test, opts: Partial<CsiVolumePluginOptions> & { actAsDriver?: boolean } = {}): Promise<Fixture> {
  const root = await mkdtemp(path.join(tmpdir(), 'csi-plugin-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = path.join(root, 'pods');
  const pluginsDir = path.join(root, 'plugins');
  await mkdir(podsDir, { recursive: true });
  const mounter = new FakeMounter();
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const api = new FakeApiObjects();
  const client = new FakeCsiNodeClient();
  client.capabilities = ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'];
  client.volumeStats = {
    usage: [
      { unit: 'BYTES', total: 1 << 30, available: 768 << 20, used: 256 << 20 },
      { unit: 'INODES', total: 65536, available: 65000, used: 536 },
    ],
  };
  const drivers = new FakeCsiDriverLookup();
  drivers.add(DRIVER, client);
  const csiDrivers = new MapCsiDrivers();
  const attachments = new MapAttachments();
  const ownership = new RecordingOwnershipFs();
  if (opts.actAsDriver !== false) actAsDriver(client, mounter);
  const host: VolumeHost = {
    podsDir,
    nodeName: NODE,
    mounter,
    configMaps: api,
    secrets: api,
    tokens: api,
    persistentVolumes: api,
    node: { allocatableMilliCpu: 4000, allocatableMemoryBytes: 2 ** 33, hostIPs: () => ['10.0.0.1'] },
    clock,
    logger,
  };
  const make = (): CsiVolumePlugin =>
    new CsiVolumePlugin({
      drivers,
      csiDrivers,
      attachments,
      nodeName: NODE,
      pluginsDir,
      mounter,
      clock,
      logger,
      ownershipFs: ownership,
      ...opts,
    });
  return { root, podsDir, pluginsDir, mounter, clock, logger, api, client, drivers, csiDrivers, attachments, ownership, host, plugin: make(), restart: make };
}

/**
 * The fake driver mounts what it stages and publishes in the fake mount table (once, as an idempotent
 * driver), and unmounts on the way back.
 */
export function actAsDriver(client: FakeCsiNodeClient, mounter: FakeMounter): void {
  client.respond('nodeStageVolume', async (request) => {
    const r = request as NodeStageVolumeRequest;
    if (!mounter.isMounted(r.stagingTargetPath)) await mounter.bindMount('/dev/fake', r.stagingTargetPath);
  });
  client.respond('nodeUnstageVolume', async (request) => {
    await mounter.unmount((request as NodeUnstageVolumeRequest).stagingTargetPath);
  });
  client.respond('nodePublishVolume', async (request) => {
    const r = request as NodePublishVolumeRequest;
    if (r.volumeCapability.mount) await mkdir(r.targetPath, { recursive: true });
    if (!mounter.isMounted(r.targetPath)) await mounter.bindMount(r.stagingTargetPath ?? '/srv/fake', r.targetPath);
  });
  client.respond('nodeUnpublishVolume', async (request) => {
    await mounter.unmount((request as NodeUnpublishVolumeRequest).targetPath);
  });
}

/**
 * Holds the calls of method (after they are recorded) until release(); entered() counts those waiting.
 * Replaces the method's responder: the held calls do nothing else.
 */
export function gate(client: FakeCsiNodeClient, method: CsiNodeMethod): { entered(): number; release(): void } {
  const waiting: Array<() => void> = [];
  let open = false;
  client.respond(method, () => (open ? undefined : new Promise<void>((resolve) => waiting.push(resolve))));
  return {
    entered: () => waiting.length,
    release: () => {
      open = true;
      for (const go of waiting.splice(0)) go();
    },
  };
}

export function makePv(name = 'pv1', overrides: { handle?: string; volumeMode?: string; accessModes?: string[]; mountOptions?: string[]; csi?: Partial<V1CSIPersistentVolumeSource> } = {}): V1PersistentVolume {
  return {
    metadata: { name },
    spec: {
      accessModes: overrides.accessModes ?? ['ReadWriteOnce'],
      capacity: { storage: '1Gi' },
      ...(overrides.volumeMode ? { volumeMode: overrides.volumeMode } : {}),
      ...(overrides.mountOptions ? { mountOptions: overrides.mountOptions } : {}),
      claimRef: { namespace: 'default', name: 'claim', uid: 'claim-uid' },
      csi: { driver: DRIVER, volumeHandle: overrides.handle ?? 'vol-1', fsType: 'ext4', volumeAttributes: { tier: 'fast' }, ...overrides.csi },
    },
  };
}

export function makeClaim(pvName = 'pv1'): V1PersistentVolumeClaim {
  return { metadata: { name: 'claim', namespace: 'default', uid: 'claim-uid' }, spec: { volumeName: pvName }, status: { phase: 'Bound' } };
}

export function makePod(uid = 'uid-1', opts: { devices?: boolean; inline?: Record<string, unknown>; volumeName?: string } = {}): V1Pod {
  const volumeName = opts.volumeName ?? 'data';
  return {
    metadata: { name: `web-${uid}`, namespace: 'default', uid },
    spec: {
      serviceAccountName: 'builder',
      containers: [
        {
          name: 'app',
          ...(opts.devices ? { volumeDevices: [{ name: volumeName, devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: volumeName, mountPath: '/data' }] }),
        },
      ],
      volumes: [opts.inline ? { name: volumeName, csi: { driver: DRIVER, ...opts.inline } } : { name: volumeName, persistentVolumeClaim: { claimName: 'claim' } }],
    },
  };
}

/** The context the volume manager hands a PV-backed volume: dir named by the PV. */
export function pvContext(f: Fixture, pod: V1Pod, pv: V1PersistentVolume, extra: Partial<VolumeContext> & { readOnly?: boolean } = {}): VolumeContext {
  const { readOnly, ...rest } = extra;
  return {
    pod,
    volume: pod.spec!.volumes![0],
    dir: path.join(f.podsDir, pod.metadata!.uid!, 'volumes', 'kubernetes.io~csi', pv.metadata!.name!),
    host: f.host,
    persistentVolume: { claim: makeClaim(pv.metadata!.name), volume: pv, readOnly: readOnly ?? false },
    ...rest,
  };
}

/** The context of an inline volume: dir named by the pod's volume. */
export function inlineContext(f: Fixture, pod: V1Pod, extra: Partial<VolumeContext> = {}): VolumeContext {
  const volume = pod.spec!.volumes![0];
  return { pod, volume, dir: path.join(f.podsDir, pod.metadata!.uid!, 'volumes', 'kubernetes.io~csi', volume.name), host: f.host, ...extra };
}
