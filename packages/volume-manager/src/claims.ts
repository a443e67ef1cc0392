// persistentVolumeClaim and generic ephemeral volumes resolved to the PersistentVolume they are bound to
// (Go: the desired state of world populator's createVolumeSpec, getPVCExtractPV and getPVSpec, and
// component-helpers' ephemeral.VolumeClaimName / VolumeIsForPod). One place for the checks and Go's texts,
// used by the volume manager's populator and by the PersistentClaimPlugin when it is called on its own.
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1Volume } from '@kubernetes/client-node';
import { errorText } from '@kubelet-ts/core';
import type { PersistentVolumeGetter, ResolvedPersistentVolume } from './types.js';

/** The claim behind a pod volume and whether the volume is a generic ephemeral one. */
export interface PodVolumeClaim {
  claimName: string;
  /** `volumes[].ephemeral`: the claim `<pod name>-<volume name>`, which the pod must control. */
  ephemeral: boolean;
  /** `volumes[].persistentVolumeClaim.readOnly`; false for an ephemeral volume. */
  readOnly: boolean;
}

/**
 * The claim a pod volume refers to (Go: createVolumeSpec's pvcSource; ephemeral.VolumeClaimName for a
 * generic ephemeral volume), or undefined for a volume that is no claim.
 */
export function podVolumeClaim(pod: V1Pod, volume: V1Volume): PodVolumeClaim | undefined {
  const source = volume.persistentVolumeClaim;
  if (source) return { claimName: source.claimName, ephemeral: false, readOnly: source.readOnly ?? false };
  if (volume.ephemeral) return { claimName: `${pod.metadata?.name ?? ''}-${volume.name}`, ephemeral: true, readOnly: false };
  return undefined;
}

/** Whether some container mounts (volumeMounts) or maps (volumeDevices) the volume. */
export function podVolumeUse(pod: V1Pod, volumeName: string): { mounts: boolean; devices: boolean } {
  const spec = pod.spec;
  const containers = [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...(spec?.ephemeralContainers ?? [])];
  return {
    mounts: containers.some((c) => (c.volumeMounts ?? []).some((m) => m.name === volumeName)),
    devices: containers.some((c) => (c.volumeDevices ?? []).some((d) => d.name === volumeName)),
  };
}

/** A PersistentVolume's volumeMode (Go: util.GetVolumeMode; unset is Filesystem). */
export function persistentVolumeMode(pv: V1PersistentVolume): string {
  return pv.spec?.volumeMode ?? 'Filesystem';
}

/**
 * Go's check of the PV's volumeMode against how the pod's containers use the volume: Filesystem for
 * volumeMounts, Block for volumeDevices. Throws with Go's message.
 */
export function checkVolumeMode(pod: V1Pod, volumeName: string, pv: V1PersistentVolume): void {
  const volumeMode = persistentVolumeMode(pv);
  const use = podVolumeUse(pod, volumeName);
  if (use.mounts && volumeMode !== 'Filesystem') throw new Error(`volume ${volumeName} has volumeMode ${volumeMode}, but is specified in volumeMounts`);
  if (use.devices && volumeMode !== 'Block') throw new Error(`volume ${volumeName} has volumeMode ${volumeMode}, but is specified in volumeDevices`);
}

/** Go's metav1.IsControlledBy(pvc, pod), with ephemeral.VolumeIsForPod's namespace check and message. */
export function checkClaimIsForPod(pod: V1Pod, claim: V1PersistentVolumeClaim): void {
  const podUid = pod.metadata?.uid;
  const namespace = claim.metadata?.namespace ?? '';
  const controller = (claim.metadata?.ownerReferences ?? []).find((ref) => ref.controller === true);
  if (namespace !== (pod.metadata?.namespace ?? '') || !controller || !podUid || controller.uid !== podUid) {
    throw new Error(
      `PVC ${namespace}/${claim.metadata?.name ?? ''} was not created for pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''} (pod is not owner)`,
    );
  }
}

/** Go's getPVCExtractPV: the claim, which must not be being deleted, and must be bound to a named volume. */
export async function getBoundClaim(getter: PersistentVolumeGetter, namespace: string, claimName: string): Promise<V1PersistentVolumeClaim> {
  let claim: V1PersistentVolumeClaim;
  try {
    claim = await getter.getPersistentVolumeClaim(namespace, claimName);
  } catch (err) {
    throw new Error(`failed to fetch PVC from API server: ${errorText(err)}`, { cause: err });
  }
  // A pod using a claim that is being deleted must not start (StorageObjectInUseProtection).
  if (claim.metadata?.deletionTimestamp) throw new Error('PVC is being deleted');
  if (claim.status?.phase !== 'Bound') throw new Error('PVC is not bound');
  if (!claim.spec?.volumeName) throw new Error('PVC has empty pvc.Spec.VolumeName');
  return claim;
}

/** Go's getPVSpec: the volume, whose claimRef must point back at the claim. */
export async function getClaimedVolume(getter: PersistentVolumeGetter, pvName: string, claimUid: string | undefined): Promise<V1PersistentVolume> {
  let pv: V1PersistentVolume;
  try {
    pv = await getter.getPersistentVolume(pvName);
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

/**
 * The claim behind a persistentVolumeClaim or generic ephemeral volume and the PV bound to it (Go:
 * createVolumeSpec up to the volumeMode checks). Rejects with Go's texts: `error processing PVC <ns>/<claim>:
 * failed to fetch PVC from API server: ...` (a claim not created yet, not bound, being deleted), `PVC <ns>/<claim>
 * was not created for pod <ns>/<pod> (pod is not owner)`, `error processing PVC <ns>/<claim>: found PV object ...`.
 */
export async function resolvePersistentVolume(getter: PersistentVolumeGetter, pod: V1Pod, volume: V1Volume): Promise<ResolvedPersistentVolume> {
  const ref = podVolumeClaim(pod, volume);
  if (!ref) throw new Error('spec does not reference a PersistentVolumeClaim');
  const namespace = pod.metadata?.namespace ?? '';
  const processing = (err: unknown): Error => new Error(`error processing PVC ${namespace}/${ref.claimName}: ${errorText(err)}`, { cause: err });
  let claim: V1PersistentVolumeClaim;
  try {
    claim = await getBoundClaim(getter, namespace, ref.claimName);
  } catch (err) {
    throw processing(err);
  }
  if (ref.ephemeral) checkClaimIsForPod(pod, claim);
  let pv: V1PersistentVolume;
  try {
    pv = await getClaimedVolume(getter, claim.spec?.volumeName ?? '', claim.metadata?.uid);
  } catch (err) {
    throw processing(err);
  }
  return { claim, volume: pv, readOnly: ref.readOnly };
}
