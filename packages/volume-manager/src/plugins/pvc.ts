// persistentVolumeClaim and generic ephemeral volumes whose PersistentVolume no other plugin serves
// (canSupportPersistentVolume): the claim is resolved to its bound PersistentVolume (src/claims.ts, Go: the
// desired state of world populator's getPVCExtractPV/getPVSpec) and the PV's host path is used directly.
// Only PVs that are a path on this node can be served: hostPath (with the hostPath plugin's checks) and local.
import type { V1Volume } from '@kubernetes/client-node';
import { checkVolumeMode, persistentVolumeMode, resolvePersistentVolume } from '../claims.js';
import { setVolumeOwnership, type OwnershipFs } from '../ownership.js';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin } from '../types.js';
import { getFileType, removeBookkeepingDir, setUpHostPath, validatePathNoBacksteps, type StatFn } from './host-path.js';

export const PVC_PLUGIN_NAME = 'kubernetes.io/persistent-claim';

/** PersistentVolumeSpec fields that are not a volume source. */
const nonSourceFields = new Set([
  'accessModes',
  'capacity',
  'claimRef',
  'mountOptions',
  'nodeAffinity',
  'persistentVolumeReclaimPolicy',
  'storageClassName',
  'volumeMode',
  'volumeAttributesClassName',
]);

export interface PersistentClaimPluginOptions {
  /** For tests: how host paths are stat'ed. */
  stat?: StatFn;
  /** For tests: the file operations of the fsGroup ownership change of local PVs. */
  ownershipFs?: OwnershipFs;
}

export class PersistentClaimPlugin implements VolumePlugin {
  readonly name = PVC_PLUGIN_NAME;
  readonly requiresRemount = false;
  private readonly stat?: StatFn;
  private readonly ownershipFs?: OwnershipFs;

  constructor(opts: PersistentClaimPluginOptions = {}) {
    this.stat = opts.stat;
    this.ownershipFs = opts.ownershipFs;
  }

  /** A persistentVolumeClaim or a generic ephemeral volume (`volumes[].ephemeral`). */
  canSupport(volume: V1Volume): boolean {
    return (volume.persistentVolumeClaim !== undefined && volume.persistentVolumeClaim !== null) || (volume.ephemeral !== undefined && volume.ephemeral !== null);
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    // The volume manager hands the claim and PV it resolved; called on its own, the plugin reads them.
    const { claim, volume: pv, readOnly } = ctx.persistentVolume ?? (await resolvePersistentVolume(ctx.host.persistentVolumes, ctx.pod, ctx.volume));
    const namespace = claim.metadata?.namespace ?? ctx.pod.metadata?.namespace ?? '';
    const claimName = claim.metadata?.name ?? '';
    const pvName = pv.metadata?.name ?? '';

    checkVolumeMode(ctx.pod, ctx.volume.name, pv);
    if (persistentVolumeMode(pv) === 'Block') {
      throw new Error(`volume ${ctx.volume.name}: persistentvolume "${pvName}" has volumeMode Block; raw block volumes (volumeDevices) are not supported by this kubelet`);
    }

    const hostPath = pv.spec?.hostPath;
    if (hostPath) {
      await setUpHostPath(hostPath.path, hostPath.type, this.stat);
      // Go's hostPath attributes: never relabelled; read-only as the pod's claim says.
      return { path: hostPath.path, readOnly, selinuxRelabel: false };
    }

    const local = pv.spec?.local;
    if (local) {
      const p = local.path;
      if (!p) throw new Error(`LocalVolume volume "${pvName}" path is empty`);
      const backsteps = validatePathNoBacksteps(p);
      if (backsteps) throw new Error(`invalid path: ${p} ${backsteps}`);
      // Go bind-mounts the path, which fails when it is missing; here it is used as is, so check.
      await getFileType(p, this.stat);
      if (!readOnly) {
        await setVolumeOwnership(p, {
          fsGroup: ctx.fsGroup,
          fsGroupChangePolicy: ctx.pod.spec?.securityContext?.fsGroupChangePolicy,
          readOnly: false,
          logger: ctx.host.logger,
          clock: ctx.host.clock,
          ...(this.ownershipFs ? { fs: this.ownershipFs } : {}),
        });
      }
      // Go's local volume supports SELinux relabelling, and is device-mountable, so node status lists it in volumesInUse.
      return { path: p, readOnly, selinuxRelabel: true, inUseName: `kubernetes.io/local-volume/${pv.metadata?.name ?? ''}` };
    }

    const kind = Object.entries(pv.spec ?? {}).find(([k, v]) => !nonSourceFields.has(k) && v !== undefined && v !== null)?.[0];
    throw new Error(
      `persistentvolume "${pvName}" bound to claim ${namespace}/${claimName} is ${kind ? `a ${kind} volume` : 'of an unknown type'}; ` +
        'only hostPath and local persistent volumes are supported by this kubelet',
    );
  }

  async tearDown(dir: string, host: VolumeHost): Promise<void> {
    // The data lives at the PV's path; only a bookkeeping directory can exist here.
    await removeBookkeepingDir(dir, host);
  }
}
