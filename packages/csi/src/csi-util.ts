// Names, paths and small helpers of the CSI volume plugin (Go v1.20: pkg/volume/csi csi_util.go, the
// naming functions of csi_attacher.go/csi_mounter.go/csi_block.go, and csi_client.go's access modes).
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { GrpcCode } from './errors.js';
import type { CsiAccessMode, CsiVolumeCapability } from './types.js';

/** Go: CSIPluginName. */
export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';
/** The plugin name as a path element (Go: utilstrings.EscapeQualifiedName). */
export const CSI_PLUGIN_DIR_NAME = 'kubernetes.io~csi';
/** Go: volDataFileName. */
export const VOL_DATA_FILE_NAME = 'vol_data.json';
/** Go: volNameSep, between driver and handle in the unique volume name. */
export const VOL_NAME_SEP = '^';
/**
 * Go: the operation generator's waitForAttachTimeout, how long MountVolume waits for the
 * VolumeAttachment to be attached.
 */
export const WAIT_FOR_ATTACH_TIMEOUT_MS = 10 * 60_000;
/** How often the VolumeAttachment is read while waiting (Go 1.20 watches it; csiAttacher's waitSleepTime). */
export const ATTACH_POLL_INTERVAL_MS = 1_000;

/** storage.k8s.io VolumeLifecycleMode. */
export type VolumeLifecycleMode = 'Persistent' | 'Ephemeral';

function sha256Hex(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** Go's getAttachmentName: `csi-<sha256(volumeHandle + driver + node)>`, the VolumeAttachment's name. */
export function attachmentName(volumeHandle: string, driverName: string, nodeName: string): string {
  return `csi-${sha256Hex(`${volumeHandle}${driverName}${nodeName}`)}`;
}

/** Go's makeVolumeHandle for an inline ephemeral volume: `csi-<sha256(podUID + volume name)>`. */
export function ephemeralVolumeHandle(podUid: string, volumeName: string): string {
  return `csi-${sha256Hex(`${podUid}${volumeName}`)}`;
}

/** Go's GetUniqueVolumeName of an attachable/device-mountable CSI volume: `kubernetes.io/csi/<driver>^<handle>`. */
export function csiUniqueVolumeName(driverName: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driverName}${VOL_NAME_SEP}${volumeHandle}`;
}

/** `<pluginsDir>/kubernetes.io/csi` (Go: host.GetPluginDir(CSIPluginName)). */
export function csiPluginDir(pluginsDir: string): string {
  return path.join(pluginsDir, CSI_PLUGIN_NAME);
}

/** Go's makeDeviceMountPath: `<pluginsDir>/kubernetes.io/csi/pv/<pv name>/globalmount`. */
export function deviceMountPath(pluginsDir: string, pvName: string): string {
  return path.join(csiPluginDir(pluginsDir), 'pv', pvName, 'globalmount');
}

/** Go: GetVolumeDevicePluginDir(CSIPluginName), `<pluginsDir>/kubernetes.io/csi/volumeDevices`. */
export function volumeDevicesDir(pluginsDir: string): string {
  return path.join(csiPluginDir(pluginsDir), 'volumeDevices');
}

/** Go's csiBlockMapper.getStagingPath: `.../volumeDevices/staging/<pv name>`. */
export function blockStagingPath(pluginsDir: string, pvName: string): string {
  return path.join(volumeDevicesDir(pluginsDir), 'staging', pvName);
}

/** Go's csiBlockMapper.getPublishDir: `.../volumeDevices/publish/<pv name>`. */
export function blockPublishDir(pluginsDir: string, pvName: string): string {
  return path.join(volumeDevicesDir(pluginsDir), 'publish', pvName);
}

/** Go's csiBlockMapper.getPublishPath: `.../volumeDevices/publish/<pv name>/<pod uid>`, the device file. */
export function blockPublishPath(pluginsDir: string, pvName: string, podUid: string): string {
  return path.join(blockPublishDir(pluginsDir, pvName), podUid);
}

/** Go's getVolumePluginDir: `.../volumeDevices/<pv name>` (holds `data/vol_data.json` and `dev/`). */
export function blockVolumeDir(pluginsDir: string, pvName: string): string {
  return path.join(volumeDevicesDir(pluginsDir), pvName);
}

/** Go's getVolumeDeviceDataDir: `.../volumeDevices/<pv name>/data`. */
export function blockDataDir(pluginsDir: string, pvName: string): string {
  return path.join(blockVolumeDir(pluginsDir, pvName), 'data');
}

/** Go's asCSIAccessModeV1 (v1.20: no ReadWriteOncePod yet). */
export function csiAccessMode(mode: string | undefined): CsiAccessMode {
  switch (mode) {
    case 'ReadWriteOnce':
      return 'SINGLE_NODE_WRITER';
    case 'ReadOnlyMany':
      return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany':
      return 'MULTI_NODE_MULTI_WRITER';
    default:
      return 'UNKNOWN';
  }
}

/** The capability Go's csiDriverClient builds: block for fsType `block`, else mount with fsType and flags. */
export function volumeCapability(accessMode: string | undefined, access: { block: true } | { fsType: string; mountFlags: string[] }): CsiVolumeCapability {
  const mode = { mode: csiAccessMode(accessMode) };
  if ('block' in access) return { block: {}, accessMode: mode };
  return { mount: { fsType: access.fsType, mountFlags: access.mountFlags }, accessMode: mode };
}

/** The keys Go writes to vol_data.json (volDataKey). */
export interface VolumeData {
  specVolID?: string;
  volumeHandle?: string;
  driverName?: string;
  nodeName?: string;
  attachmentID?: string;
  volumeLifecycleMode?: string;
  /** Not Go's: set to `Block` in the pod's bookkeeping directory of a raw block volume. */
  volumeMode?: string;
}

/**
 * Go's saveVolumeData: the map as json.Encoder writes it (keys sorted, compact, a newline), so a Go
 * kubelet started on the same root dir reads it and the other way round.
 */
export async function saveVolumeData(dir: string, data: VolumeData): Promise<void> {
  const sorted: Record<string, string> = {};
  for (const key of Object.keys(data).sort()) {
    const value = data[key as keyof VolumeData];
    if (value !== undefined) sorted[key] = value;
  }
  await fsp.writeFile(path.join(dir, VOL_DATA_FILE_NAME), `${JSON.stringify(sorted)}\n`, { mode: 0o640 });
}

/** Go's loadVolumeData; rejects with the fs error (ENOENT when there is none) or the parse error. */
export async function loadVolumeData(dir: string): Promise<VolumeData> {
  const text = await fsp.readFile(path.join(dir, VOL_DATA_FILE_NAME), 'utf8');
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${VOL_DATA_FILE_NAME} in ${dir} is not a JSON object`);
  const data: VolumeData = {};
  for (const [key, value] of Object.entries(parsed)) if (typeof value === 'string') (data as Record<string, string>)[key] = value;
  return data;
}

/** loadVolumeData, or undefined when the file does not exist. */
export async function loadVolumeDataIfExists(dir: string): Promise<VolumeData | undefined> {
  try {
    return await loadVolumeData(dir);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT' || (err as { code?: unknown }).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** The gRPC codes after which the driver may still be working on the operation (Go's isFinalError). */
const NOT_FINAL_CODES: ReadonlySet<number> = new Set([GrpcCode.Canceled, GrpcCode.DeadlineExceeded, GrpcCode.Unavailable, GrpcCode.ResourceExhausted, GrpcCode.Aborted]);

/**
 * Go's isFinalError: a gRPC error whose code says the driver may still be working on the operation
 * (Canceled, DeadlineExceeded, Unavailable, ResourceExhausted, Aborted) is not final, nor is an error
 * that is not a gRPC error at all (a CsiCallError's numeric `code`); every other gRPC error means the
 * operation did not happen.
 */
export function isFinalCsiError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'number') return false;
  return !NOT_FINAL_CODES.has(code);
}

/**
 * The Go operation a CSI volume failure belongs to, so the caller can word the event as Go's
 * operation generator does: `<operation> failed for volume "<name>" : <message>`.
 */
export type CsiVolumeOperation =
  | 'MountVolume.NewMounter initialization'
  | 'MountVolume.WaitForAttach'
  | 'MountVolume.MountDevice'
  | 'MountVolume.SetUp'
  | 'MapVolume.NewBlockVolumeMapper initialization'
  | 'MapVolume.WaitForAttach'
  | 'MapVolume.SetUpDevice'
  | 'MapVolume.MapPodDevice'
  | 'UnmountVolume.NewUnmounter failed'
  | 'UnmountVolume.TearDown'
  | 'UnmountDevice'
  | 'UnmapVolume.UnmapPodDevice'
  | 'UnmapDevice';

/**
 * A failure of the CSI volume plugin. `message` is the part after Go's `<operation> failed for volume
 * "<name>" : ` (e.g. `kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver
 * name x not found in the list of registered CSI drivers`); `operation` is the Go operation it happened in.
 * `uncertain` is Go's UncertainProgressError: the driver may have staged or published the volume anyway
 * (a CSI call that timed out, was cancelled or found the driver unavailable, or an fsGroup change that
 * failed after NodePublishVolume), so the pod's volume directory must be torn down even though setUp
 * rejected (Go: MarkVolumeMountAsUncertain).
 */
export class CsiVolumeError extends Error {
  override name = 'CsiVolumeError';
  readonly uncertain: boolean;
  constructor(
    readonly operation: CsiVolumeOperation,
    message: string,
    options?: { cause?: unknown; uncertain?: boolean },
  ) {
    super(message, options);
    this.uncertain = options?.uncertain ?? false;
  }

  /** The whole event message as Go's operation generator words it. */
  eventMessage(volumeName: string): string {
    return `${this.operation} failed for volume ${JSON.stringify(volumeName)} : ${this.message}`;
  }
}

/** A per-key lock: operations on one volume run one after another (Go: nestedpendingoperations). */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

/** Go's `%q` of a []string: `["a" "b"]`. */
export function goQuoteList(items: readonly string[]): string {
  return `[${items.map((s) => JSON.stringify(s)).join(' ')}]`;
}
