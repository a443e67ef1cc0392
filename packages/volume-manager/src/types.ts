// The contracts between the volume manager, its plugins and the host (Go: pkg/volume's VolumePlugin,
// Mounter/Unmounter and VolumeHost, narrowed to what a node without attach/detach needs).
import type {
  AuthenticationV1TokenRequest,
  V1ConfigMap,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Secret,
  V1Volume,
} from '@kubernetes/client-node';
import type { Clock, Logger } from '@kubelet-ts/core';

/** The host's mount table, behind an interface so that tests and unprivileged users can fake it. */
export interface Mounter {
  /** `mount -t tmpfs -o size=<sizeBytes> tmpfs <target>`; rejects with the mount error (e.g. not permitted). */
  mountTmpfs(target: string, options?: { sizeBytes?: number }): Promise<void>;
  /**
   * A bind mount of source at target (`mount --no-canonicalize -o bind`); source may be a
   * `/proc/<pid>/fd/<fd>` link, which the kernel follows to the opened file. Rejects with the mount error.
   */
  bindMount(source: string, target: string): Promise<void>;
  /** Unmounts target; no error when it is not a mount point. */
  unmount(target: string): Promise<void>;
  /** Whether target is itself a mount point. */
  isMountPoint(target: string): Promise<boolean>;
  /** Every mount point at or below prefix, deepest first. */
  mountPointsUnder(prefix: string): Promise<string[]>;
  /** Releases what the mounter holds (SystemMounter: its mount helper process). */
  close?(): void;
}

/**
 * Reads a ConfigMap. Rejects with an Error whose message is Go's (`configmap "x" not found`) and whose
 * `statusCode` is 404 when it does not exist.
 */
export interface ConfigMapGetter {
  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap>;
}

/** Reads a Secret; not found as for ConfigMapGetter (`secret "x" not found`). */
export interface SecretGetter {
  getSecret(namespace: string, name: string): Promise<V1Secret>;
}

/** Go's GetServiceAccountToken: a TokenRequest for `serviceaccounts/<name>/token`, cached and refreshed. */
export interface ServiceAccountTokenGetter {
  getServiceAccountToken(namespace: string, name: string, request: AuthenticationV1TokenRequest): Promise<AuthenticationV1TokenRequest>;
  /** Forgets the tokens bound to a pod that is gone (Go: DeleteServiceAccountToken). */
  deleteServiceAccountToken?(podUid: string): void;
}

/** Reads the claim and the volume it is bound to. */
export interface PersistentVolumeGetter {
  getPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim>;
  getPersistentVolume(name: string): Promise<V1PersistentVolume>;
}

/** The downward API's node facts: what a resourceFieldRef without a limit falls back to, and host IPs. */
export interface NodeFacts {
  allocatableMilliCpu: number;
  allocatableMemoryBytes: number;
  allocatableEphemeralStorageBytes?: number;
  hostIPs(): string[];
}

/** File operations a plugin may need besides node's fs (ownership is root-only, so it can be faked). */
export interface VolumeHost {
  /** `<root-dir>/pods`: a pod's volumes are under `<podsDir>/<uid>/volumes/<plugin~name>/<volume>`. */
  readonly podsDir: string;
  readonly nodeName: string;
  readonly mounter: Mounter;
  readonly configMaps: ConfigMapGetter;
  readonly secrets: SecretGetter;
  readonly tokens: ServiceAccountTokenGetter;
  readonly persistentVolumes: PersistentVolumeGetter;
  readonly node: NodeFacts;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** What a plugin is told when it sets a volume up or tears it down. */
export interface VolumeContext {
  pod: V1Pod;
  volume: V1Volume;
  /** The volume's directory for this pod: `<podsDir>/<uid>/volumes/<escaped plugin name>/<volume name>`. */
  dir: string;
  /** pod.spec.securityContext.fsGroup, when set (Go: SetVolumeOwnership). */
  fsGroup?: number;
  host: VolumeHost;
  signal?: AbortSignal;
  /**
   * For a persistentVolumeClaim or generic ephemeral volume served by a plugin through
   * `canSupportPersistentVolume`: the claim and the PersistentVolume bound to it, as the volume manager
   * resolved them (Go: the desired state of world populator's getPVCExtractPV and getPVSpec), and whether
   * the pod's claim reference is read-only.
   */
  persistentVolume?: ResolvedPersistentVolume;
}

/** A claim and the PersistentVolume bound to it (Go: the PV-backed volume.Spec). */
export interface ResolvedPersistentVolume {
  claim: V1PersistentVolumeClaim;
  volume: V1PersistentVolume;
  /** `volumes[].persistentVolumeClaim.readOnly`; always false for a generic ephemeral volume. */
  readOnly: boolean;
}

/** A set-up volume as the container runtime needs it. */
export interface MountedVolume {
  /** Host path the CRI bind-mounts into containers. */
  path: string;
  /** The volume itself is read-only (secret, configMap, downwardAPI, projected, a read-only claim). */
  readOnly: boolean;
  /** Go: SupportsSELinux; the CRI relabels the mount when the pod has SELinux options. */
  selinuxRelabel: boolean;
  /**
   * The name node status reports in `volumesInUse` while this volume is set up. Go reports only
   * attachable and device-mountable volumes there (of the plugins here: a local PersistentVolume,
   * `kubernetes.io/local-volume/<pv name>`), so the other plugins leave it unset.
   */
  inUseName?: string;
  /**
   * For a raw block volume (a claim with volumeMode Block used in `volumeDevices`): the host path of the
   * device node handed to the runtime as a CRI Device; `path` is then the volume's bookkeeping directory.
   */
  devicePath?: string;
}

/** One volume's usage (Go: volume.Metrics); a field the plugin cannot tell is left out. */
export interface VolumeUsageStats {
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
  inodes?: number;
  inodesFree?: number;
  inodesUsed?: number;
  /** Go: VolumeHealthStats / the CSI VolumeCondition: abnormal with the driver's message. */
  abnormal?: boolean;
  message?: string;
}

export interface VolumePlugin {
  /** Go's plugin name, e.g. `kubernetes.io/configmap`; on disk escaped as `kubernetes.io~configmap`. */
  readonly name: string;
  canSupport(volume: V1Volume): boolean;
  /** Contents come from the API and are rewritten on each periodic pod sync (Go: RequiresRemount). */
  readonly requiresRemount: boolean;
  /**
   * Makes the volume ready (idempotent: a second call on a set-up volume only refreshes contents and
   * never mounts twice). Rejects with Go's message (e.g. `configmap "x" not found`).
   */
  setUp(ctx: VolumeContext): Promise<MountedVolume>;
  /**
   * Undoes setUp for a volume directory found on disk (the pod may be gone, so only the directory is
   * known); removes `dir` and what is mounted there. Host paths outside `dir` are never touched.
   */
  tearDown(dir: string, host: VolumeHost): Promise<void>;
  /**
   * Whether this plugin sets up the PersistentVolume a persistentVolumeClaim (or generic ephemeral)
   * volume is bound to (Go: FindPluginBySpec on the PV spec). Such a volume lives in
   * `<podsDir>/<uid>/volumes/<escaped plugin name>/<pv name>` and setUp gets `ctx.persistentVolume`.
   * Claims whose PV no plugin claims this way go to the plugin whose canSupport takes the pod volume.
   */
  canSupportPersistentVolume?(pv: V1PersistentVolume): boolean;
  /**
   * Names for node status `volumesInUse` beyond those of mounted volumes (`MountedVolume.inUseName`):
   * volumes being attached or set up and devices still staged (Go: GetVolumesInUse lists the desired
   * state's attachable and device-mountable volumes, so the attach/detach controller never detaches a
   * volume the kubelet is about to mount or has not unmounted).
   */
  volumesInUse?(): string[];
  /**
   * A volume of this plugin found on disk after a restart (Go: ConstructVolumeSpec and the reconstruction
   * of the actual state): how it is mounted, or undefined when `dir` holds nothing set up. Without this
   * hook the volume counts as mounted at `dir`.
   */
  reconstruct?(dir: string, host: VolumeHost): Promise<MountedVolume | undefined>;
  /** Usage of a set-up volume (Go: MetricsProvider.GetMetrics); without it the stats are du/statfs of the directory. */
  getVolumeStats?(dir: string, mounted: MountedVolume, host: VolumeHost): Promise<VolumeUsageStats | undefined>;
}

/** Go: UniqueVolumeName for non-attachable volumes: `<plugin name>/<pod uid>-<volume name>`. */
export type UniqueVolumeName = string;

/** Raised when a volume cannot be set up; `reason` is the event reason (FailedMount). */
export class VolumeSetupError extends Error {
  override name = 'VolumeSetupError';
}
