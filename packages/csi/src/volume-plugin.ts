// The CSI volume plugin, `kubernetes.io/csi` (Go v1.20: pkg/volume/csi csi_plugin.go, csi_attacher.go,
// csi_mounter.go, csi_block.go, csi_metrics.go, with the order of steps of the operation generator's
// MountVolume/MapVolume/UnmountVolume/UnmountDevice).
//
// A PersistentVolume with a `csi` source (filesystem):
//   NewMounter   <dir>/vol_data.json (specVolID, volumeHandle, driverName, nodeName, attachmentID,
//                volumeLifecycleMode), the CSIDriver's volumeLifecycleModes checked
//   WaitForAttach when the CSIDriver says attachRequired (or there is none): the VolumeAttachment
//                `csi-<sha256(handle+driver+node)>` polled until attached; its attachmentMetadata is the
//                publish context
//   MountDevice  <pluginsDir>/kubernetes.io/csi/pv/<pv>/globalmount (+ ../vol_data.json); NodeStageVolume
//                when the driver has STAGE_UNSTAGE_VOLUME, skipped when globalmount is a mount point
//   SetUp        NodePublishVolume at <dir>/mount, skipped when it is a mount point; fsGroup
// A raw block PV (volumeMode Block): staging at .../volumeDevices/staging/<pv>, the device published to
// .../volumeDevices/publish/<pv>/<pod uid> (MountedVolume.devicePath), Go's data at
// .../volumeDevices/<pv>/data/vol_data.json and the pod's copy in <dir>/vol_data.json.
// An inline ephemeral volume (`volumes[].csi`): NodePublishVolume only, with the handle
// `csi-<sha256(pod uid + volume name)>`.
//
// Tear down: NodeUnpublishVolume, then, when no other pod directory on disk
// (`<podsDir>/*/volumes/kubernetes.io~csi/*/vol_data.json`) names the same driver and handle and no set
// up of it is under way, NodeUnstageVolume and the global directory. The pod's vol_data.json stays
// until all of that succeeded, so a failed unstage is retried with the next tearDown of the directory.
// Counting users from disk rather than from memory survives a kubelet restart without any state.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { V1CSIDriver, V1PersistentVolume, V1Pod, V1Volume, V1VolumeAttachment } from '@kubernetes/client-node';
import { abortReason, defaultLogger, errorText, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import {
  setVolumeOwnership,
  type MountedVolume,
  type Mounter,
  type OwnershipFs,
  type ResolvedPersistentVolume,
  type SecretGetter,
  type VolumeContext,
  type VolumeHost,
  type VolumePlugin,
  type VolumeUsageStats,
} from '@kubelet-ts/volume-manager';
import {
  ATTACH_POLL_INTERVAL_MS,
  CSI_PLUGIN_DIR_NAME,
  CSI_PLUGIN_NAME,
  CsiVolumeError,
  KeyedLock,
  VOL_DATA_FILE_NAME,
  WAIT_FOR_ATTACH_TIMEOUT_MS,
  attachmentName,
  blockDataDir,
  blockPublishDir,
  blockPublishPath,
  blockStagingPath,
  blockVolumeDir,
  csiUniqueVolumeName,
  deviceMountPath,
  ephemeralVolumeHandle,
  goQuoteList,
  isFinalCsiError,
  loadVolumeData,
  loadVolumeDataIfExists,
  saveVolumeData,
  volumeCapability,
  type CsiVolumeOperation,
  type VolumeData,
  type VolumeLifecycleMode,
} from './csi-util.js';
import { csiLog } from './registry.js';
import type { CsiDriverLookup, CsiDriverObjectGetter, CsiNodeCapability, CsiNodeClient, VolumeAttachmentGetter } from './types.js';

export interface CsiVolumePluginOptions {
  /** The registered drivers (the plugin watcher's registry). */
  drivers: CsiDriverLookup;
  /** CSIDriver objects; without it every driver is treated as having none (attach required, no pod info). */
  csiDrivers?: CsiDriverObjectGetter;
  /** VolumeAttachment objects; needed for drivers that require attach. */
  attachments?: VolumeAttachmentGetter;
  nodeName: string;
  /** `<root-dir>/plugins`. */
  pluginsDir: string;
  /** Tells mount points (staged and published paths). */
  mounter: Mounter;
  clock?: Clock;
  logger?: Logger;
  /** How long setUp waits for the VolumeAttachment to be attached (Go: waitForAttachTimeout, 10 min). */
  attachTimeoutMs?: number;
  /** How often the VolumeAttachment is read while waiting. */
  pollIntervalMs?: number;
  /** Reads nodeStageSecretRef/nodePublishSecretRef; defaults to the VolumeHost's secrets. */
  secrets?: SecretGetter;
  /** For tests: the file operations of the fsGroup ownership change (chown needs root). */
  ownershipFs?: OwnershipFs;
  /**
   * The CSIInlineVolume feature gate (beta and on in Go v1.20): off, inline `csi` volumes are not this plugin's
   * (Go: CanSupport), so a pod using one waits with `no volume plugin matched`. Default true.
   */
  inlineVolumes?: boolean;
}

/** The volume context keys Go adds when the CSIDriver asks for pod info (podInfoOnMount). */
export const POD_INFO_KEYS = {
  podName: 'csi.storage.k8s.io/pod.name',
  podNamespace: 'csi.storage.k8s.io/pod.namespace',
  podUid: 'csi.storage.k8s.io/pod.uid',
  serviceAccountName: 'csi.storage.k8s.io/serviceAccount.name',
  ephemeral: 'csi.storage.k8s.io/ephemeral',
} as const;

/** Marks an error as leaving the volume possibly staged or published (Go: NewUncertainProgressError). */
const UNCERTAIN = Symbol('uncertain');

function uncertain(err: unknown): Error {
  const e = err instanceof Error ? err : new Error(errorText(err));
  (e as Error & { [UNCERTAIN]?: boolean })[UNCERTAIN] = true;
  return e;
}

function isUncertain(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { [UNCERTAIN]?: boolean })[UNCERTAIN] === true;
}

/** What a set-up or tear-down step failed in: the Go operation, and the message after its prefix. */
function opError(operation: CsiVolumeOperation, err: unknown): CsiVolumeError {
  if (err instanceof CsiVolumeError) return err;
  return new CsiVolumeError(operation, errorText(err), { cause: err, uncertain: isUncertain(err) });
}

/** Go's errno texts, for the fs errors that end up in event messages (`mkdir /x: permission denied`). */
const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'file exists',
  ENOTDIR: 'not a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
  EBUSY: 'device or resource busy',
  ENOTEMPTY: 'directory not empty',
};

function goFsError(err: unknown): string {
  const e = err as { code?: unknown; syscall?: unknown; path?: unknown } | null;
  if (e && typeof e.code === 'string' && typeof e.syscall === 'string' && typeof e.path === 'string') {
    return `${e.syscall === 'rmdir' ? 'remove' : e.syscall} ${e.path}: ${ERRNO_TEXT[e.code] ?? e.code}`;
  }
  return errorText(err);
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ENOENT';
}

/** Whether some container mounts (volumeMounts) or attaches (volumeDevices) the volume. */
function volumeUse(pod: V1Pod, volumeName: string): { mounts: boolean; devices: boolean } {
  const spec = pod.spec;
  const containers = [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...(spec?.ephemeralContainers ?? [])];
  return {
    mounts: containers.some((c) => (c.volumeMounts ?? []).some((m) => m.name === volumeName)),
    devices: containers.some((c) => (c.volumeDevices ?? []).some((d) => d.name === volumeName)),
  };
}

/** Go's hasReadWriteOnce. */
function hasReadWriteOnce(modes: string[] | undefined): boolean {
  return (modes ?? []).includes('ReadWriteOnce');
}

/** Everything setUp learnt about a persistent volume. */
interface PersistentSpec {
  pv: V1PersistentVolume;
  pvName: string;
  driverName: string;
  volumeHandle: string;
  inUseName: string;
  readOnly: boolean;
  accessMode: string | undefined;
}

export class CsiVolumePlugin implements VolumePlugin {
  readonly name = CSI_PLUGIN_NAME;
  readonly requiresRemount = false;

  private readonly drivers: CsiDriverLookup;
  private readonly csiDrivers?: CsiDriverObjectGetter;
  private readonly attachments?: VolumeAttachmentGetter;
  private readonly nodeName: string;
  private readonly pluginsDir: string;
  private readonly mounter: Mounter;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly attachTimeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly secrets?: SecretGetter;
  private readonly ownershipFs?: OwnershipFs;

  /** Volumes (unique names) with a setUp under way, counted: being attached, staged or published. */
  private readonly pending = new Map<string, number>();
  /** Pod volume directory -> unique name of the persistent volume published there. */
  private readonly published = new Map<string, string>();
  /** Unique name -> staging path of devices known to be staged. */
  private readonly staged = new Map<string, string>();
  /** One operation at a time per volume (unique name; the directory for inline volumes). */
  private readonly lock = new KeyedLock();

  private readonly inlineVolumes: boolean;
  constructor(opts: CsiVolumePluginOptions) {
    this.inlineVolumes = opts.inlineVolumes ?? true;
    this.drivers = opts.drivers;
    this.csiDrivers = opts.csiDrivers;
    this.attachments = opts.attachments;
    this.nodeName = opts.nodeName;
    this.pluginsDir = opts.pluginsDir;
    this.mounter = opts.mounter;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.attachTimeoutMs = opts.attachTimeoutMs ?? WAIT_FOR_ATTACH_TIMEOUT_MS;
    this.pollIntervalMs = opts.pollIntervalMs ?? ATTACH_POLL_INTERVAL_MS;
    this.secrets = opts.secrets;
    this.ownershipFs = opts.ownershipFs;
  }

  canSupport(volume: V1Volume): boolean {
    return this.inlineVolumes && volume.csi !== undefined && volume.csi !== null;
  }

  canSupportPersistentVolume(pv: V1PersistentVolume): boolean {
    return pv.spec?.csi !== undefined && pv.spec?.csi !== null;
  }

  volumesInUse(): string[] {
    const names = new Set<string>();
    for (const [name, count] of this.pending) if (count > 0) names.add(name);
    for (const name of this.published.values()) names.add(name);
    for (const name of this.staged.keys()) names.add(name);
    return [...names].sort();
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    if (ctx.persistentVolume) return this.setUpPersistent(ctx, ctx.persistentVolume);
    if (ctx.volume.csi) return this.setUpEphemeral(ctx);
    throw new CsiVolumeError('MountVolume.NewMounter initialization', csiLog('volume source not found in volume.Spec'));
  }

  // ---------------------------------------------------------------------------------------------
  // Persistent volumes

  private async setUpPersistent(ctx: VolumeContext, resolved: ResolvedPersistentVolume): Promise<MountedVolume> {
    const pv = resolved.volume;
    const source = pv.spec?.csi;
    if (!source) throw new CsiVolumeError('MountVolume.NewMounter initialization', 'CSIPersistentVolumeSource not defined in spec');
    const pvName = pv.metadata?.name ?? '';
    const spec: PersistentSpec = {
      pv,
      pvName,
      driverName: source.driver,
      volumeHandle: source.volumeHandle,
      inUseName: csiUniqueVolumeName(source.driver, source.volumeHandle),
      readOnly: resolved.readOnly || source.readOnly === true,
      accessMode: pv.spec?.accessModes?.[0],
    };

    const volumeMode = pv.spec?.volumeMode ?? 'Filesystem';
    const use = volumeUse(ctx.pod, ctx.volume.name);
    if (use.mounts && volumeMode !== 'Filesystem') throw new Error(`volume ${ctx.volume.name} has volumeMode ${volumeMode}, but is specified in volumeMounts`);
    if (use.devices && volumeMode !== 'Block') throw new Error(`volume ${ctx.volume.name} has volumeMode ${volumeMode}, but is specified in volumeDevices`);

    this.addPending(spec.inUseName);
    try {
      return volumeMode === 'Block' ? await this.setUpBlock(ctx, spec) : await this.setUpFilesystem(ctx, spec);
    } finally {
      this.removePending(spec.inUseName);
    }
  }

  private async setUpFilesystem(ctx: VolumeContext, spec: PersistentSpec): Promise<MountedVolume> {
    const source = spec.pv.spec!.csi!;
    const log = this.logger.v(4);

    // NewMounter: the CSIDriver, then the pod's vol_data.json.
    const driverObject = await this.newMounter(ctx, spec.driverName, 'Persistent', {
      specVolID: spec.pvName,
      volumeHandle: spec.volumeHandle,
      op: 'MountVolume.NewMounter initialization',
    });

    // WaitForAttach.
    let publishContext: Record<string, string> = {};
    if (attachRequired(driverObject)) {
      const attachment = await this.waitForAttach(spec.volumeHandle, spec.driverName, ctx.signal).catch((err: unknown) => {
        throw opError('MountVolume.WaitForAttach', err);
      });
      publishContext = { ...(attachment.status?.attachmentMetadata ?? {}) };
    }

    const targetPath = path.join(ctx.dir, 'mount');
    const globalPath = deviceMountPath(this.pluginsDir, spec.pvName);
    return this.lock.run(spec.inUseName, async () => {
      // MountDevice.
      await this.mountDevice(ctx, spec, globalPath, publishContext).catch((err: unknown) => {
        throw opError('MountVolume.MountDevice', err);
      });

      // SetUp.
      if (await this.mounter.isMountPoint(targetPath)) {
        log.info(csiLog(`mounter.SetUpAt skipping NodePublish, dir already mounted [${targetPath}]`));
      } else {
        try {
          await this.publishFilesystem(ctx, spec, globalPath, targetPath, publishContext, driverObject);
          await this.applyFsGroup(ctx, targetPath, source.fsType ?? '', spec.readOnly, driverObject, { accessModes: spec.pv.spec?.accessModes }, spec.volumeHandle);
        } catch (err) {
          // Possibly published: in use until torn down.
          if (isUncertain(err)) this.published.set(ctx.dir, spec.inUseName);
          throw opError('MountVolume.SetUp', err);
        }
      }
      this.published.set(ctx.dir, spec.inUseName);
      return { path: targetPath, readOnly: spec.readOnly, selinuxRelabel: true, inUseName: spec.inUseName };
    });
  }

  /** Go's csiAttacher.MountDevice. */
  private async mountDevice(ctx: VolumeContext, spec: PersistentSpec, globalPath: string, publishContext: Record<string, string>): Promise<void> {
    const source = spec.pv.spec!.csi!;
    const log = this.logger.v(4);
    if (await this.mounter.isMountPoint(globalPath)) {
      log.info(csiLog(`attacher.MountDevice skipping mount, dir already mounted [${globalPath}]`));
      this.staged.set(spec.inUseName, globalPath);
      return;
    }
    const client = this.client(spec.driverName, 'attacher.MountDevice failed to create newCsiDriverClient');
    const capabilities = await this.capabilities(client, ctx.signal);
    const stage = capabilities.includes('STAGE_UNSTAGE_VOLUME');

    let stageSecrets: Record<string, string> = {};
    const secretRef = source.nodeStageSecretRef;
    if (secretRef && stage) {
      stageSecrets = await this.credentials(ctx, secretRef.namespace ?? '', secretRef.name ?? '').catch((err: unknown) => {
        throw new Error(`fetching NodeStageSecretRef ${secretRef.namespace ?? ''}/${secretRef.name ?? ''} failed: ${errorText(err)}`, { cause: err });
      });
    }

    // Go keeps the data file even without NodeStage: UnmountDevice needs it.
    try {
      await fsp.mkdir(globalPath, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(csiLog(`attacher.MountDevice failed to create dir ${JSON.stringify(globalPath)}:  ${goFsError(err)}`), { cause: err });
    }
    const dataDir = path.dirname(globalPath);
    try {
      await saveVolumeData(dataDir, { volumeHandle: spec.volumeHandle, driverName: spec.driverName });
    } catch (err) {
      await fsp.rm(dataDir, { recursive: true, force: true }).catch((cleanErr: unknown) => {
        this.logger.error(csiLog(`failed to remove dir after error [${dataDir}]`), cleanErr);
      });
      throw new Error(goFsError(err), { cause: err });
    }

    if (!stage) {
      this.logger.info(csiLog('attacher.MountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping MountDevice...'));
      return;
    }

    try {
      await this.call(ctx.signal, (signal) =>
        client.nodeStageVolume(
          {
            volumeId: spec.volumeHandle,
            publishContext,
            stagingTargetPath: globalPath,
            volumeCapability: volumeCapability(spec.accessMode ?? 'ReadWriteOnce', { fsType: source.fsType ?? '', mountFlags: [...(spec.pv.spec?.mountOptions ?? [])] }),
            secrets: stageSecrets,
            volumeContext: { ...(source.volumeAttributes ?? {}) },
          },
          signal,
        ),
      );
    } catch (err) {
      if (isFinalCsiError(err)) {
        await this.removeMountDir(globalPath).catch((cleanErr: unknown) => {
          this.logger.error(csiLog(`attacher.MountDevice failed to remove mount dir after error [${globalPath}]`), cleanErr);
        });
        throw err;
      }
      // The driver may still be staging it: count it as staged until it is unstaged.
      this.staged.set(spec.inUseName, globalPath);
      throw uncertain(err);
    }
    this.staged.set(spec.inUseName, globalPath);
    log.info(csiLog(`attacher.MountDevice successfully requested NodeStageVolume [${globalPath}]`));
  }

  /** Go's csiMountMgr.SetUpAt for a persistent volume. */
  private async publishFilesystem(
    ctx: VolumeContext,
    spec: PersistentSpec,
    globalPath: string,
    targetPath: string,
    publishContext: Record<string, string>,
    driverObject: V1CSIDriver | undefined,
  ): Promise<void> {
    const source = spec.pv.spec!.csi!;
    const client = this.client(spec.driverName, 'mounter.SetUpAt failed to get CSI client');
    let capabilities: CsiNodeCapability[];
    try {
      capabilities = await this.capabilities(client, ctx.signal);
    } catch (err) {
      throw new Error(csiLog(`mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: ${errorText(err)}`), { cause: err });
    }
    const stagingTargetPath = capabilities.includes('STAGE_UNSTAGE_VOLUME') ? globalPath : undefined;

    await this.makeParentDir(targetPath);
    let secrets: Record<string, string> = {};
    const secretRef = source.nodePublishSecretRef;
    if (secretRef) {
      secrets = await this.credentials(ctx, secretRef.namespace ?? '', secretRef.name ?? '').catch((err: unknown) => {
        throw new Error(`fetching NodePublishSecretRef ${secretRef.namespace ?? ''}/${secretRef.name ?? ''} failed: ${errorText(err)}`, { cause: err });
      });
    }
    const volumeContext = { ...(source.volumeAttributes ?? {}), ...podAttributes(ctx.pod, driverObject, 'Persistent') };
    await this.publish(ctx, client, targetPath, {
      volumeId: spec.volumeHandle,
      publishContext,
      ...(stagingTargetPath !== undefined ? { stagingTargetPath } : {}),
      targetPath,
      volumeCapability: volumeCapability(spec.accessMode ?? 'ReadWriteOnce', { fsType: source.fsType ?? '', mountFlags: [...(spec.pv.spec?.mountOptions ?? [])] }),
      readonly: spec.readOnly,
      secrets,
      volumeContext,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Raw block volumes

  private async setUpBlock(ctx: VolumeContext, spec: PersistentSpec): Promise<MountedVolume> {
    const podUid = ctx.pod.metadata?.uid ?? '';

    // NewBlockVolumeMapper: Go's data under volumeDevices/<pv>/data, and the pod's bookkeeping copy.
    const dataDir = blockDataDir(this.pluginsDir, spec.pvName);
    const attachmentID = attachmentName(spec.volumeHandle, spec.driverName, this.nodeName);
    const data: VolumeData = {
      specVolID: spec.pvName,
      volumeHandle: spec.volumeHandle,
      driverName: spec.driverName,
      nodeName: this.nodeName,
      attachmentID,
    };
    try {
      try {
        await fsp.mkdir(dataDir, { recursive: true, mode: 0o750 });
      } catch (err) {
        throw new Error(csiLog(`failed to create data dir ${dataDir}:  ${goFsError(err)}`), { cause: err });
      }
      await saveVolumeData(dataDir, data).catch((err: unknown) => {
        throw new Error(csiLog(`failed to save volume info data: ${goFsError(err)}`), { cause: err });
      });
      await fsp.mkdir(ctx.dir, { recursive: true, mode: 0o750 }).catch((err: unknown) => {
        throw new Error(csiLog(`failed to create dir ${JSON.stringify(ctx.dir)}:  ${goFsError(err)}`), { cause: err });
      });
      await saveVolumeData(ctx.dir, { ...data, volumeLifecycleMode: 'Persistent', volumeMode: 'Block' }).catch((err: unknown) => {
        throw new Error(csiLog(`failed to save volume info data: ${goFsError(err)}`), { cause: err });
      });
    } catch (err) {
      throw opError('MapVolume.NewBlockVolumeMapper initialization', err);
    }
    const driverObject = await this.getDriverObject(spec.driverName, ctx.signal).catch((err: unknown) => {
      throw opError('MapVolume.NewBlockVolumeMapper initialization', err);
    });

    let attachment: V1VolumeAttachment | undefined;
    if (attachRequired(driverObject)) {
      attachment = await this.waitForAttach(spec.volumeHandle, spec.driverName, ctx.signal).catch((err: unknown) => {
        throw opError('MapVolume.WaitForAttach', err);
      });
    }
    const publishContext = { ...(attachment?.status?.attachmentMetadata ?? {}) };
    const stagingPath = blockStagingPath(this.pluginsDir, spec.pvName);
    const publishPath = blockPublishPath(this.pluginsDir, spec.pvName, podUid);

    return this.lock.run(spec.inUseName, async () => {
      // SetUpDevice: Go calls NodeStageVolume for every pod (the driver must be idempotent).
      await this.stageBlock(ctx, spec, stagingPath, publishContext).catch((err: unknown) => {
        throw opError('MapVolume.SetUpDevice', err);
      });

      // MapPodDevice.
      if (await this.mounter.isMountPoint(publishPath)) {
        this.logger.v(4).info(csiLog(`blockMapper.MapPodDevice skipping NodePublish, already published [${publishPath}]`));
      } else {
        await this.publishBlock(ctx, spec, stagingPath, publishPath, publishContext).catch((err: unknown) => {
          if (isUncertain(err)) this.published.set(ctx.dir, spec.inUseName);
          throw opError('MapVolume.MapPodDevice', err);
        });
      }
      this.published.set(ctx.dir, spec.inUseName);
      return { path: ctx.dir, devicePath: publishPath, readOnly: spec.readOnly, selinuxRelabel: false, inUseName: spec.inUseName };
    });
  }

  /** Go's csiBlockMapper.SetUpDevice/stageVolumeForBlock. */
  private async stageBlock(ctx: VolumeContext, spec: PersistentSpec, stagingPath: string, publishContext: Record<string, string>): Promise<void> {
    const source = spec.pv.spec!.csi!;
    const client = this.client(spec.driverName, 'blockMapper.SetUpDevice failed to get CSI client');
    let capabilities: CsiNodeCapability[];
    try {
      capabilities = await this.capabilities(client, ctx.signal);
    } catch (err) {
      throw new Error(csiLog(`blockMapper.stageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: ${errorText(err)}`), { cause: err });
    }
    if (!capabilities.includes('STAGE_UNSTAGE_VOLUME')) {
      this.logger.info(csiLog('blockMapper.stageVolumeForBlock STAGE_UNSTAGE_VOLUME capability not set. Skipping MountDevice...'));
      return;
    }
    let secrets: Record<string, string> = {};
    const secretRef = source.nodeStageSecretRef;
    if (secretRef) {
      secrets = await this.credentials(ctx, secretRef.namespace ?? '', secretRef.name ?? '').catch((err: unknown) => {
        throw new Error(`failed to get NodeStageSecretRef ${secretRef.namespace ?? ''}/${secretRef.name ?? ''}: ${errorText(err)}`, { cause: err });
      });
    }
    try {
      await fsp.mkdir(stagingPath, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(csiLog(`blockMapper.stageVolumeForBlock failed to create dir ${stagingPath}: ${goFsError(err)}`), { cause: err });
    }
    try {
      await this.call(ctx.signal, (signal) =>
        client.nodeStageVolume(
          {
            volumeId: spec.volumeHandle,
            publishContext,
            stagingTargetPath: stagingPath,
            volumeCapability: volumeCapability(spec.accessMode ?? 'ReadWriteOnce', { block: true }),
            secrets,
            volumeContext: { ...(source.volumeAttributes ?? {}) },
          },
          signal,
        ),
      );
    } catch (err) {
      if (isFinalCsiError(err)) {
        await this.cleanupOrphanDeviceFiles(spec.pvName).catch((cleanErr: unknown) => {
          this.logger.v(4).info(`Failed to clean up block volume directory ${errorText(cleanErr)}`);
        });
        throw err;
      }
      this.staged.set(spec.inUseName, stagingPath);
      throw uncertain(err);
    }
    this.staged.set(spec.inUseName, stagingPath);
  }

  /** Go's csiBlockMapper.MapPodDevice/publishVolumeForBlock. */
  private async publishBlock(ctx: VolumeContext, spec: PersistentSpec, stagingPath: string, publishPath: string, publishContext: Record<string, string>): Promise<void> {
    const source = spec.pv.spec!.csi!;
    const client = this.client(spec.driverName, 'blockMapper.MapPodDevice failed to get CSI client');
    let secrets: Record<string, string> = {};
    const secretRef = source.nodePublishSecretRef;
    if (secretRef) {
      secrets = await this.credentials(ctx, secretRef.namespace ?? '', secretRef.name ?? '').catch((err: unknown) => {
        throw new Error(
          csiLog(`blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef ${secretRef.namespace ?? ''}/${secretRef.name ?? ''}: ${errorText(err)}`),
          { cause: err },
        );
      });
    }
    const publishDir = path.dirname(publishPath);
    try {
      await fsp.mkdir(publishDir, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(csiLog(`blockMapper.publishVolumeForBlock failed to create dir ${publishDir}:  ${goFsError(err)}`), { cause: err });
    }
    // The driver creates the device file at publishPath itself; Go passes the staging path either way.
    try {
      await this.call(ctx.signal, (signal) =>
        client.nodePublishVolume(
          {
            volumeId: spec.volumeHandle,
            publishContext,
            stagingTargetPath: stagingPath,
            targetPath: publishPath,
            volumeCapability: volumeCapability(spec.accessMode ?? 'ReadWriteOnce', { block: true }),
            readonly: spec.readOnly,
            secrets,
            volumeContext: { ...(source.volumeAttributes ?? {}) },
          },
          signal,
        ),
      );
    } catch (err) {
      throw isFinalCsiError(err) ? err : uncertain(err);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Inline ephemeral volumes

  private async setUpEphemeral(ctx: VolumeContext): Promise<MountedVolume> {
    const source = ctx.volume.csi!;
    const driverName = source.driver;
    const volumeHandle = ephemeralVolumeHandle(ctx.pod.metadata?.uid ?? '', ctx.volume.name);
    const readOnly = source.readOnly === true;
    const driverObject = await this.newMounter(ctx, driverName, 'Ephemeral', {
      specVolID: ctx.volume.name,
      volumeHandle,
      op: 'MountVolume.NewMounter initialization',
    });
    const targetPath = path.join(ctx.dir, 'mount');
    return this.lock.run(ctx.dir, async () => {
      if (await this.mounter.isMountPoint(targetPath)) {
        this.logger.v(4).info(csiLog(`mounter.SetUpAt skipping NodePublish, dir already mounted [${targetPath}]`));
        return { path: targetPath, readOnly, selinuxRelabel: true };
      }
      try {
        const client = this.client(driverName, 'mounter.SetUpAt failed to get CSI client');
        await this.makeParentDir(targetPath);
        let secrets: Record<string, string> = {};
        const secretName = source.nodePublishSecretRef?.name;
        if (source.nodePublishSecretRef) {
          const namespace = ctx.pod.metadata?.namespace ?? '';
          secrets = await this.credentials(ctx, namespace, secretName ?? '').catch((err: unknown) => {
            throw new Error(`fetching NodePublishSecretRef ${namespace}/${secretName ?? ''} failed: ${errorText(err)}`, { cause: err });
          });
        }
        await this.publish(ctx, client, targetPath, {
          volumeId: volumeHandle,
          publishContext: {},
          targetPath,
          volumeCapability: volumeCapability('ReadWriteOnce', { fsType: source.fsType ?? '', mountFlags: [] }),
          readonly: readOnly,
          secrets,
          volumeContext: { ...(source.volumeAttributes ?? {}), ...podAttributes(ctx.pod, driverObject, 'Ephemeral') },
        });
        await this.applyFsGroup(ctx, targetPath, source.fsType ?? '', readOnly, driverObject, 'inline', volumeHandle);
      } catch (err) {
        throw opError('MountVolume.SetUp', err);
      }
      return { path: targetPath, readOnly, selinuxRelabel: true };
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Shared set-up steps

  /**
   * Go's csiPlugin.NewMounter: checks the CSIDriver allows the lifecycle mode, then writes the pod's
   * vol_data.json for teardown. Resolves the CSIDriver object (undefined when there is none).
   */
  private async newMounter(
    ctx: VolumeContext,
    driverName: string,
    mode: VolumeLifecycleMode,
    ids: { specVolID: string; volumeHandle: string; op: CsiVolumeOperation },
  ): Promise<V1CSIDriver | undefined> {
    try {
      const driverObject = await this.getDriverObject(driverName, ctx.signal);
      supportsVolumeLifecycleMode(driverName, mode, driverObject);
      try {
        await fsp.mkdir(ctx.dir, { recursive: true, mode: 0o750 });
      } catch (err) {
        throw new Error(csiLog(`failed to create dir ${JSON.stringify(ctx.dir)}:  ${goFsError(err)}`), { cause: err });
      }
      const data: VolumeData = {
        specVolID: ids.specVolID,
        volumeHandle: ids.volumeHandle,
        driverName,
        nodeName: this.nodeName,
        volumeLifecycleMode: mode,
        attachmentID: attachmentName(ids.volumeHandle, driverName, this.nodeName),
      };
      try {
        await saveVolumeData(ctx.dir, data);
      } catch (err) {
        await fsp.rm(ctx.dir, { recursive: true, force: true }).catch(() => undefined);
        throw new Error(csiLog(`failed to save volume info data: ${goFsError(err)}`), { cause: err });
      }
      return driverObject;
    } catch (err) {
      throw opError(ids.op, err);
    }
  }

  /** NodePublishVolume; on a final error the mount directory and the vol_data.json go (Go: removeMountDir). */
  private async publish(ctx: VolumeContext, client: CsiNodeClient, targetPath: string, request: Parameters<CsiNodeClient['nodePublishVolume']>[0]): Promise<void> {
    try {
      await this.call(ctx.signal, (signal) => client.nodePublishVolume(request, signal));
    } catch (err) {
      if (isFinalCsiError(err)) {
        await this.removeMountDir(targetPath).catch((cleanErr: unknown) => {
          this.logger.error(csiLog(`mounter.SetupAt failed to remove mount dir after a NodePublish() error [${targetPath}]`), cleanErr);
        });
        throw err;
      }
      throw uncertain(err);
    }
    this.logger.v(4).info(csiLog(`mounter.SetUp successfully requested NodePublish [${targetPath}]`));
  }

  /** Go creates the target's parent (the volume dir) 0750; the driver creates the target itself. */
  private async makeParentDir(targetPath: string): Promise<void> {
    const parent = path.dirname(targetPath);
    try {
      await fsp.mkdir(parent, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(csiLog(`mounter.SetUpAt failed to create dir ${JSON.stringify(parent)}:  ${goFsError(err)}`), { cause: err });
    }
  }

  /** Go's supportsFSGroup + SetVolumeOwnership. */
  private async applyFsGroup(
    ctx: VolumeContext,
    targetPath: string,
    fsType: string,
    readOnly: boolean,
    driverObject: V1CSIDriver | undefined,
    kind: { accessModes: string[] | undefined } | 'inline',
    volumeHandle: string,
  ): Promise<void> {
    const fsGroup = ctx.fsGroup;
    if (fsGroup === undefined || fsGroup === null) return;
    const policy = driverObject?.spec?.fsGroupPolicy ?? 'ReadWriteOnceWithFSType';
    const log = this.logger.v(4);
    if (policy === 'None' || readOnly) return;
    if (policy !== 'File') {
      if (fsType === '') {
        log.info(csiLog('mounter.SetupAt WARNING: skipping fsGroup, fsType not provided'));
        return;
      }
      if (kind !== 'inline') {
        if (!kind.accessModes) {
          log.info(csiLog('mounter.SetupAt WARNING: skipping fsGroup, access modes not provided'));
          return;
        }
        if (!hasReadWriteOnce(kind.accessModes)) {
          log.info(csiLog('mounter.SetupAt WARNING: skipping fsGroup, only support ReadWriteOnce access mode'));
          return;
        }
      }
    }
    try {
      await setVolumeOwnership(targetPath, {
        fsGroup,
        fsGroupChangePolicy: ctx.pod.spec?.securityContext?.fsGroupChangePolicy,
        readOnly: false,
        logger: this.logger,
        clock: this.clock,
        ...(this.ownershipFs ? { fs: this.ownershipFs } : {}),
      });
    } catch (err) {
      // Mounted already: the volume must be torn down even though the pod cannot use it.
      throw uncertain(new Error(`applyFSGroup failed for vol ${volumeHandle}: ${errorText(err)}`, { cause: err }));
    }
    log.info(csiLog(`mounter.SetupAt fsGroup [${fsGroup}] applied successfully to ${volumeHandle}`));
  }

  /**
   * Go's csiAttacher.WaitForAttach: the VolumeAttachment read every pollIntervalMs until it is attached,
   * failing at once when it is being deleted or reports an attach error, and after attachTimeoutMs.
   * Go 1.20 watches the object; a missing one is waited for here as the attach/detach controller is
   * about to create it.
   */
  private async waitForAttach(volumeHandle: string, driverName: string, signal?: AbortSignal): Promise<V1VolumeAttachment> {
    if (!this.attachments) throw new Error(csiLog('unable to get kubernetes client from host'));
    const attachID = attachmentName(volumeHandle, driverName, this.nodeName);
    const deadline = this.clock.now() + this.attachTimeoutMs;
    this.logger.v(4).info(csiLog(`probing for updates from CSI driver for [attachment.ID=${attachID}]`));
    for (;;) {
      if (signal?.aborted) throw abortReason(signal);
      let attachment: V1VolumeAttachment | undefined;
      try {
        attachment = await this.attachments.getVolumeAttachment(attachID, signal);
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        throw new Error(`volume ${volumeHandle} has GET error for volume attachment ${attachID}: ${errorText(err)}`, { cause: err });
      }
      if (attachment) {
        if (attachment.metadata?.deletionTimestamp) throw new Error('volume attachment is being deleted');
        if (attachment.status?.attached) return attachment;
        const attachError = attachment.status?.attachError;
        if (attachError) throw new Error(attachError.message ?? '');
      }
      const remaining = deadline - this.clock.now();
      if (remaining <= 0) {
        this.logger.error(csiLog(`attacher.WaitForAttach timeout after ${this.attachTimeoutMs}ms [volume=${volumeHandle}; attachment.ID=${attachID}]`));
        throw new Error(`attachdetachment timeout for volume ${volumeHandle}`);
      }
      await this.clock.sleep(Math.min(this.pollIntervalMs, remaining), signal);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Tear down

  async tearDown(dir: string, host: VolumeHost): Promise<void> {
    let data: VolumeData | undefined;
    try {
      data = await loadVolumeDataIfExists(dir);
    } catch (err) {
      throw new CsiVolumeError('UnmountVolume.TearDown', csiLog(`unmounter failed to load volume data file [${path.join(dir, 'mount')}]: ${goFsError(err)}`), { cause: err });
    }
    if (!data) {
      // Nothing was published from here (set up failed before NewMounter, or an earlier tearDown finished).
      const mounted = await this.mounter.mountPointsUnder(dir);
      if (mounted.length > 0) {
        throw new CsiVolumeError(
          'UnmountVolume.TearDown',
          csiLog(`unmounter failed to load volume data file [${path.join(dir, 'mount')}]: open ${path.join(dir, VOL_DATA_FILE_NAME)}: no such file or directory`),
        );
      }
      this.published.delete(dir);
      await fsp.rm(dir, { recursive: true, force: true });
      return;
    }
    if (data.volumeMode === 'Block') return this.tearDownBlock(dir, host, data);
    return this.tearDownFilesystem(dir, host, data);
  }

  private async tearDownFilesystem(dir: string, host: VolumeHost, data: VolumeData): Promise<void> {
    const driverName = data.driverName ?? '';
    const volumeHandle = data.volumeHandle ?? '';
    const persistent = data.volumeLifecycleMode !== 'Ephemeral';
    const inUseName = persistent ? csiUniqueVolumeName(driverName, volumeHandle) : undefined;
    const targetPath = path.join(dir, 'mount');
    await this.lock.run(inUseName ?? dir, async () => {
      try {
        const client = this.client(driverName, 'mounter.SetUpAt failed to get CSI client');
        try {
          await this.call(undefined, (signal) => client.nodeUnpublishVolume({ volumeId: volumeHandle, targetPath }, signal));
        } catch (err) {
          throw new Error(csiLog(`mounter.TearDownAt failed: ${errorText(err)}`), { cause: err });
        }
        await this.removeTarget(targetPath).catch((err: unknown) => {
          throw new Error(csiLog(`mounter.TearDownAt failed to clean mount dir [${targetPath}]: ${errorText(err)}`), { cause: err });
        });
      } catch (err) {
        throw opError('UnmountVolume.TearDown', err);
      }
      this.published.delete(dir);
      this.logger.v(4).info(csiLog(`mounter.TearDownAt successfully unmounted dir [${targetPath}]`));

      if (persistent && inUseName && data.specVolID) {
        if (await this.stillInUse(host.podsDir, dir, driverName, volumeHandle, inUseName)) {
          this.logger.v(4).info(csiLog(`volume ${inUseName} is still published to another pod, not unstaging it`));
        } else {
          await this.unmountDevice(data.specVolID, driverName, volumeHandle, inUseName).catch((err: unknown) => {
            throw opError('UnmountDevice', err);
          });
        }
      }
      await this.removeVolumeDir(dir).catch((err: unknown) => {
        throw opError('UnmountVolume.TearDown', err);
      });
    });
  }

  /** Go's csiAttacher.UnmountDevice. */
  private async unmountDevice(pvName: string, driverName: string, volumeHandle: string, inUseName: string): Promise<void> {
    const globalPath = deviceMountPath(this.pluginsDir, pvName);
    const dataDir = path.dirname(globalPath);
    let globalData: VolumeData | undefined;
    try {
      globalData = await loadVolumeDataIfExists(dataDir);
    } catch (err) {
      this.logger.error(csiLog(`UnmountDevice failed to load volume data file [${dataDir}]`), err);
    }
    if (!globalData && !(await exists(dataDir))) {
      // MountDevice never got as far as the global directory.
      this.staged.delete(inUseName);
      return;
    }
    const driver = globalData?.driverName ?? driverName;
    const volumeId = globalData?.volumeHandle ?? volumeHandle;
    const client = this.client(driver, 'attacher.UnmountDevice failed to create newCsiDriverClient');
    let capabilities: CsiNodeCapability[];
    try {
      capabilities = await this.capabilities(client, undefined);
    } catch (err) {
      throw new Error(csiLog(`attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: ${errorText(err)}`), { cause: err });
    }
    if (capabilities.includes('STAGE_UNSTAGE_VOLUME')) {
      try {
        await this.call(undefined, (signal) => client.nodeUnstageVolume({ volumeId, stagingTargetPath: globalPath }, signal));
      } catch (err) {
        throw new Error(csiLog(`attacher.UnmountDevice failed: ${errorText(err)}`), { cause: err });
      }
    } else {
      this.logger.info(csiLog('attacher.UnmountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping UnmountDevice...'));
    }
    await this.removeMountDir(globalPath).catch((err: unknown) => {
      throw new Error(csiLog(`failed to clean up global mount ${dataDir}: ${errorText(err)}`), { cause: err });
    });
    this.staged.delete(inUseName);
    this.logger.v(4).info(csiLog(`attacher.UnmountDevice successfully requested NodeUnStageVolume [${globalPath}]`));
  }

  private async tearDownBlock(dir: string, host: VolumeHost, data: VolumeData): Promise<void> {
    const driverName = data.driverName ?? '';
    const volumeHandle = data.volumeHandle ?? '';
    const pvName = data.specVolID ?? '';
    const inUseName = csiUniqueVolumeName(driverName, volumeHandle);
    const publishPath = blockPublishPath(this.pluginsDir, pvName, podUidOfVolumeDir(dir));
    await this.lock.run(inUseName, async () => {
      try {
        const client = this.client(driverName, 'blockMapper.UnmapPodDevice failed to get CSI client');
        // Even when publishPath is gone: a NodePublish may have timed out and must be finished.
        try {
          await this.call(undefined, (signal) => client.nodeUnpublishVolume({ volumeId: volumeHandle, targetPath: publishPath }, signal));
        } catch (err) {
          throw new Error(csiLog(`blockMapper.unpublishVolumeForBlock failed: ${errorText(err)}`), { cause: err });
        }
        if (await this.mounter.isMountPoint(publishPath)) throw new Error(csiLog(`blockMapper.unpublishVolumeForBlock failed: ${publishPath} is still mounted`));
      } catch (err) {
        throw opError('UnmapVolume.UnmapPodDevice', err);
      }
      this.published.delete(dir);
      if (await this.stillInUse(host.podsDir, dir, driverName, volumeHandle, inUseName)) {
        this.logger.v(4).info(csiLog(`volume ${inUseName} is still published to another pod, not unstaging it`));
      } else {
        await this.tearDownBlockDevice(pvName, driverName, volumeHandle, inUseName).catch((err: unknown) => {
          throw opError('UnmapDevice', err);
        });
      }
      await this.removeVolumeDir(dir).catch((err: unknown) => {
        throw opError('UnmapVolume.UnmapPodDevice', err);
      });
    });
  }

  /** Go's csiBlockMapper.TearDownDevice. */
  private async tearDownBlockDevice(pvName: string, driverName: string, volumeHandle: string, inUseName: string): Promise<void> {
    const client = this.client(driverName, 'blockMapper.TearDownDevice failed to get CSI client');
    const stagingPath = blockStagingPath(this.pluginsDir, pvName);
    if (!(await exists(stagingPath))) {
      this.logger.v(4).info(csiLog(`blockMapper.TearDownDevice stagingPath(${stagingPath}) has already been deleted, skip calling NodeUnstageVolume`));
    } else {
      let capabilities: CsiNodeCapability[];
      try {
        capabilities = await this.capabilities(client, undefined);
      } catch (err) {
        throw new Error(csiLog(`blockMapper.unstageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: ${errorText(err)}`), { cause: err });
      }
      if (capabilities.includes('STAGE_UNSTAGE_VOLUME')) {
        try {
          await this.call(undefined, (signal) => client.nodeUnstageVolume({ volumeId: volumeHandle, stagingTargetPath: stagingPath }, signal));
        } catch (err) {
          throw new Error(csiLog(`blockMapper.unstageVolumeForBlock failed: ${errorText(err)}`), { cause: err });
        }
        const mounted = await this.mounter.mountPointsUnder(stagingPath);
        if (mounted.length > 0) throw new Error(csiLog(`blockMapper.unstageVolumeForBlock failed to remove staging path after NodeUnstageVolume() [${stagingPath}]: ${mounted[0]} is still mounted`));
        await fsp.rm(stagingPath, { recursive: true, force: true }).catch((err: unknown) => {
          throw new Error(csiLog(`blockMapper.unstageVolumeForBlock failed to remove staging path after NodeUnstageVolume() error [${stagingPath}]: ${goFsError(err)}`), { cause: err });
        });
      }
    }
    this.staged.delete(inUseName);
    await this.cleanupOrphanDeviceFiles(pvName).catch((err: unknown) => {
      this.logger.v(4).info(`Failed to clean up block volume directory ${errorText(err)}`);
    });
  }

  /** Go's cleanupOrphanDeviceFiles: the (empty) publish dir and staging path, and volumeDevices/<pv>. */
  private async cleanupOrphanDeviceFiles(pvName: string): Promise<void> {
    const publishDir = blockPublishDir(this.pluginsDir, pvName);
    await fsp.rmdir(publishDir).catch((err: unknown) => {
      if (!isNotFound(err)) throw new Error(csiLog(`failed to remove publish directory [${publishDir}]: ${goFsError(err)}`), { cause: err });
    });
    const stagingPath = blockStagingPath(this.pluginsDir, pvName);
    await fsp.rmdir(stagingPath).catch((err: unknown) => {
      if (!isNotFound(err)) throw new Error(csiLog(`failed to delete volume staging path [${stagingPath}]: ${goFsError(err)}`), { cause: err });
    });
    const volumeDir = blockVolumeDir(this.pluginsDir, pvName);
    const mounted = await this.mounter.mountPointsUnder(volumeDir);
    if (mounted.length > 0) throw new Error(`${mounted[0]} is still mounted`);
    await fsp.rm(volumeDir, { recursive: true, force: true });
  }

  /**
   * Whether the same driver and handle is still wanted by something other than dir: a set-up under
   * way, or another pod volume directory whose vol_data.json names it.
   */
  private async stillInUse(podsDir: string, exceptDir: string, driverName: string, volumeHandle: string, inUseName: string): Promise<boolean> {
    if ((this.pending.get(inUseName) ?? 0) > 0) return true;
    const except = path.resolve(exceptDir);
    for (const uid of await readdirOrEmpty(podsDir)) {
      const pluginDir = path.join(podsDir, uid, 'volumes', CSI_PLUGIN_DIR_NAME);
      for (const name of await readdirOrEmpty(pluginDir)) {
        const volumeDir = path.join(pluginDir, name);
        if (path.resolve(volumeDir) === except) continue;
        let other: VolumeData | undefined;
        try {
          other = await loadVolumeDataIfExists(volumeDir);
        } catch (err) {
          this.logger.warn(csiLog('failed to read volume data file while counting users of a volume'), { dir: volumeDir, err: errorText(err) });
          continue;
        }
        if (other && other.volumeLifecycleMode !== 'Ephemeral' && other.driverName === driverName && other.volumeHandle === volumeHandle) return true;
      }
    }
    return false;
  }

  /** After NodeUnpublish: the target must not be a mount point any more; its (empty) directory goes. */
  private async removeTarget(targetPath: string): Promise<void> {
    if (await this.mounter.isMountPoint(targetPath)) throw new Error(`${targetPath} is still mounted`);
    await fsp.rmdir(targetPath).catch((err: unknown) => {
      if (!isNotFound(err)) throw new Error(goFsError(err), { cause: err });
    });
  }

  /** The pod's volume directory with its vol_data.json, refusing while anything is mounted below it. */
  private async removeVolumeDir(dir: string): Promise<void> {
    const mounted = await this.mounter.mountPointsUnder(dir);
    if (mounted.length > 0) throw new Error(csiLog(`failed to delete volume path [${dir}]: ${mounted[0]} is still mounted`));
    await fsp.rm(dir, { recursive: true, force: true });
  }

  /**
   * Go's removeMountDir: when mountPath is not a mount point, it goes with the vol_data.json and the
   * directory beside it; a path still mounted is an error here (Go leaves it silently).
   */
  private async removeMountDir(mountPath: string): Promise<void> {
    if (await this.mounter.isMountPoint(mountPath)) throw new Error(`${mountPath} is still mounted`);
    await fsp.rmdir(mountPath).catch((err: unknown) => {
      if (!isNotFound(err)) throw new Error(csiLog(`failed to remove dir [${mountPath}]: ${goFsError(err)}`), { cause: err });
    });
    const volPath = path.dirname(mountPath);
    const dataFile = path.join(volPath, VOL_DATA_FILE_NAME);
    await fsp.unlink(dataFile).catch((err: unknown) => {
      if (!isNotFound(err)) throw new Error(csiLog(`failed to delete volume data file [${dataFile}]: ${goFsError(err)}`), { cause: err });
    });
    await fsp.rmdir(volPath).catch((err: unknown) => {
      if (!isNotFound(err)) throw new Error(csiLog(`failed to delete volume path [${volPath}]: ${goFsError(err)}`), { cause: err });
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Reconstruction and stats

  async reconstruct(dir: string, host: VolumeHost): Promise<MountedVolume | undefined> {
    void host;
    let data: VolumeData | undefined;
    try {
      data = await loadVolumeDataIfExists(dir);
    } catch (err) {
      this.logger.error(csiLog(`plugin.ConstructVolumeSpec failed loading volume data using [${dir}]`), err);
      return undefined;
    }
    if (!data) return undefined;
    const driverName = data.driverName ?? '';
    const volumeHandle = data.volumeHandle ?? '';
    if (data.volumeLifecycleMode === 'Ephemeral') return { path: path.join(dir, 'mount'), readOnly: false, selinuxRelabel: true };
    const inUseName = csiUniqueVolumeName(driverName, volumeHandle);
    this.published.set(dir, inUseName);
    const pvName = data.specVolID ?? '';
    if (data.volumeMode === 'Block') {
      const stagingPath = blockStagingPath(this.pluginsDir, pvName);
      if (await exists(stagingPath)) this.staged.set(inUseName, stagingPath);
      return {
        path: dir,
        devicePath: blockPublishPath(this.pluginsDir, pvName, podUidOfVolumeDir(dir)),
        readOnly: false,
        selinuxRelabel: false,
        inUseName,
      };
    }
    const globalPath = deviceMountPath(this.pluginsDir, pvName);
    if (await this.mounter.isMountPoint(globalPath)) this.staged.set(inUseName, globalPath);
    return { path: path.join(dir, 'mount'), readOnly: false, selinuxRelabel: true, inUseName };
  }

  /** Go's metricsCsi.GetMetrics: NodeGetVolumeStats when the driver offers GET_VOLUME_STATS. */
  async getVolumeStats(dir: string, mounted: MountedVolume, host: VolumeHost): Promise<VolumeUsageStats | undefined> {
    void host;
    const data = await loadVolumeData(dir).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!data) return undefined;
    const client = this.drivers.client(data.driverName ?? '');
    const capabilities = await this.capabilities(client, undefined);
    if (!capabilities.includes('GET_VOLUME_STATS')) return undefined;
    const volumePath =
      data.volumeMode === 'Block'
        ? (mounted.devicePath ?? blockPublishPath(this.pluginsDir, data.specVolID ?? '', podUidOfVolumeDir(dir)))
        : path.join(dir, 'mount');
    const response = await this.call(undefined, (signal) => client.nodeGetVolumeStats({ volumeId: data.volumeHandle ?? '', volumePath }, signal));
    if (!response.usage || response.usage.length === 0) throw new Error('failed to get usage from response. usage is nil');
    const stats: VolumeUsageStats = { capacityBytes: 0, availableBytes: 0, usedBytes: 0, inodes: 0, inodesFree: 0, inodesUsed: 0 };
    for (const usage of response.usage) {
      if (usage.unit === 'BYTES') {
        stats.availableBytes = usage.available;
        stats.capacityBytes = usage.total;
        stats.usedBytes = usage.used;
      } else if (usage.unit === 'INODES') {
        stats.inodesFree = usage.available;
        stats.inodes = usage.total;
        stats.inodesUsed = usage.used;
      } else {
        this.logger.error(`unknown key ${usage.unit} in usage`);
      }
    }
    if (response.volumeCondition) {
      stats.abnormal = response.volumeCondition.abnormal;
      stats.message = response.volumeCondition.message;
    }
    return stats;
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  private addPending(name: string): void {
    this.pending.set(name, (this.pending.get(name) ?? 0) + 1);
  }

  private removePending(name: string): void {
    const count = (this.pending.get(name) ?? 0) - 1;
    if (count > 0) this.pending.set(name, count);
    else this.pending.delete(name);
  }

  /** The driver's client; an unregistered driver fails with `kubernetes.io/csi: <what>: <registry error>`. */
  private client(driverName: string, what: string): CsiNodeClient {
    try {
      return this.drivers.client(driverName);
    } catch (err) {
      throw new Error(csiLog(`${what}: ${errorText(err)}`), { cause: err });
    }
  }

  private async capabilities(client: CsiNodeClient, parent: AbortSignal | undefined): Promise<CsiNodeCapability[]> {
    return this.call(parent, (signal) => client.nodeGetCapabilities(signal));
  }

  /**
   * Runs one CSI call with the caller's signal (the pod's volume operation; tearDown has none). The
   * client gives every call Go's csiTimeout deadline itself.
   */
  private async call<T>(signal: AbortSignal | undefined, fn: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    if (signal?.aborted) throw abortReason(signal);
    return fn(signal);
  }

  /** The CSIDriver object, undefined when there is none (or no getter). */
  private async getDriverObject(driverName: string, signal?: AbortSignal): Promise<V1CSIDriver | undefined> {
    if (!this.csiDrivers) return undefined;
    return this.csiDrivers.getCSIDriver(driverName, signal);
  }

  /** Go's getCredentialsFromSecret: the secret's data, decoded. */
  private async credentials(ctx: VolumeContext, namespace: string, name: string): Promise<Record<string, string>> {
    const getter = this.secrets ?? ctx.host.secrets;
    const secret = await getter.getSecret(namespace, name);
    const credentials: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {})) credentials[key] = Buffer.from(value, 'base64').toString('utf8');
    return credentials;
  }
}

/** Go's skipAttach inverted: attach is required unless a CSIDriver says attachRequired: false. */
function attachRequired(driverObject: V1CSIDriver | undefined): boolean {
  return driverObject?.spec?.attachRequired !== false;
}

/** Go's supportsVolumeLifecycleMode. */
function supportsVolumeLifecycleMode(driverName: string, mode: VolumeLifecycleMode, driverObject: V1CSIDriver | undefined): void {
  if (!driverObject) {
    if (mode === 'Persistent') return;
    throw new Error(`volume mode ${JSON.stringify(mode)} not supported by driver ${driverName} (no CSIDriver object)`);
  }
  // The API server defaults an empty list to [Persistent].
  const modes = driverObject.spec?.volumeLifecycleModes?.length ? driverObject.spec.volumeLifecycleModes : ['Persistent'];
  if (modes.includes(mode)) return;
  throw new Error(`volume mode ${JSON.stringify(mode)} not supported by driver ${driverName} (only supports ${goQuoteList(modes)})`);
}

/** Go's csiMountMgr.podAttributes (CSIInlineVolume on, as in v1.20). */
function podAttributes(pod: V1Pod, driverObject: V1CSIDriver | undefined, mode: VolumeLifecycleMode): Record<string, string> {
  if (driverObject?.spec?.podInfoOnMount !== true) return {};
  return {
    [POD_INFO_KEYS.podName]: pod.metadata?.name ?? '',
    [POD_INFO_KEYS.podNamespace]: pod.metadata?.namespace ?? '',
    [POD_INFO_KEYS.podUid]: pod.metadata?.uid ?? '',
    [POD_INFO_KEYS.serviceAccountName]: pod.spec?.serviceAccountName ?? '',
    [POD_INFO_KEYS.ephemeral]: String(mode === 'Ephemeral'),
  };
}

/** `<podsDir>/<uid>/volumes/kubernetes.io~csi/<name>` -> `<uid>`. */
function podUidOfVolumeDir(dir: string): string {
  return path.basename(path.dirname(path.dirname(path.dirname(path.resolve(dir)))));
}

async function exists(p: string): Promise<boolean> {
  try {
    await fsp.lstat(p);
    return true;
  } catch {
    return false;
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fsp.readdir(dir);
  } catch {
    return [];
  }
}
