// persistentVolumeClaim volumes: the claim is resolved to its bound PersistentVolume (Go: the
// desired state of world populator's getPVCExtractPV/getPVSpec), and the PV's host path is used
// directly. Only PVs that are a path on this node can be served: hostPath (with the hostPath
// plugin's checks) and local.
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1Volume } from '@kubernetes/client-node';
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

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
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

  canSupport(volume: V1Volume): boolean {
    return volume.persistentVolumeClaim !== undefined && volume.persistentVolumeClaim !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    const source = ctx.volume.persistentVolumeClaim;
    if (!source) throw new Error('spec does not reference a PersistentVolumeClaim');
    const namespace = ctx.pod.metadata?.namespace ?? '';
    const claimName = source.claimName;
    const readOnly = source.readOnly ?? false;
    const processing = (err: unknown): Error => new Error(`error processing PVC ${namespace}/${claimName}: ${errorText(err)}`, { cause: err });

    const claim = await this.getBoundClaim(ctx.host, namespace, claimName).catch((err: unknown) => {
      throw processing(err);
    });
    const pvName = claim.spec?.volumeName ?? '';
    const pv = await this.getClaimedVolume(ctx.host, pvName, claim.metadata?.uid).catch((err: unknown) => {
      throw processing(err);
    });

    const volumeMode = pv.spec?.volumeMode ?? 'Filesystem';
    const use = volumeUse(ctx.pod, ctx.volume.name);
    if (use.mounts && volumeMode !== 'Filesystem') {
      throw new Error(`volume ${ctx.volume.name} has volumeMode ${volumeMode}, but is specified in volumeMounts`);
    }
    if (use.devices && volumeMode !== 'Block') {
      throw new Error(`volume ${ctx.volume.name} has volumeMode ${volumeMode}, but is specified in volumeDevices`);
    }
    if (volumeMode === 'Block') {
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

  /** Go's getPVCExtractPV. */
  private async getBoundClaim(host: VolumeHost, namespace: string, claimName: string): Promise<V1PersistentVolumeClaim> {
    let claim: V1PersistentVolumeClaim;
    try {
      claim = await host.persistentVolumes.getPersistentVolumeClaim(namespace, claimName);
    } catch (err) {
      throw new Error(`failed to fetch PVC from API server: ${errorText(err)}`, { cause: err });
    }
    // A pod using a claim that is being deleted must not start (StorageObjectInUseProtection).
    if (claim.metadata?.deletionTimestamp) throw new Error('PVC is being deleted');
    if (claim.status?.phase !== 'Bound') throw new Error('PVC is not bound');
    if (!claim.spec?.volumeName) throw new Error('PVC has empty pvc.Spec.VolumeName');
    return claim;
  }

  /** Go's getPVSpec: the PV must point back at this claim. */
  private async getClaimedVolume(host: VolumeHost, pvName: string, claimUid: string | undefined): Promise<V1PersistentVolume> {
    let pv: V1PersistentVolume;
    try {
      pv = await host.persistentVolumes.getPersistentVolume(pvName);
    } catch (err) {
      throw new Error(`failed to fetch PV ${pvName} from API server: ${errorText(err)}`, { cause: err });
    }
    const claimRef = pv.spec?.claimRef;
    if (!claimRef) throw new Error(`found PV object ${pvName} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`);
    if ((claimRef.uid ?? '') !== (claimUid ?? '')) {
      throw new Error(`found PV object ${pvName} but its pv.Spec.ClaimRef.UID ${claimRef.uid ?? ''} does not point to claim.UID ${claimUid ?? ''}`);
    }
    return pv;
  }

  async tearDown(dir: string, host: VolumeHost): Promise<void> {
    // The data lives at the PV's path; only a bookkeeping directory can exist here.
    await removeBookkeepingDir(dir, host);
  }
}
