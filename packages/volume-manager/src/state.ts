// The two caches the reconciler compares (Go: pkg/kubelet/volumemanager/cache): what the pods on this
// node need (desired) and what is set up on disk (actual).
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import type { MountedVolume, ResolvedPersistentVolume, UniqueVolumeName, VolumePlugin } from './types.js';

/** The claim a volume comes from (Go: the PVC reference of the volume's stats). */
export interface ClaimReference {
  name: string;
  namespace: string;
}

export interface VolumeToMount {
  uniqueName: UniqueVolumeName;
  podUid: string;
  /** The pod's name for the volume (Go: OuterVolumeSpecName). */
  volumeName: string;
  volume: V1Volume;
  plugin: VolumePlugin;
  /**
   * `<podsDir>/<uid>/volumes/<escaped plugin>/<name>`: the pod's name for the volume, or the PV's name when a
   * plugin serves the claim's PersistentVolume (Go's volume spec name).
   */
  dir: string;
  /** For a claim (persistentVolumeClaim or generic ephemeral volume): the claim and its bound PV. */
  persistentVolume?: ResolvedPersistentVolume;
}

interface DesiredPod {
  pod: V1Pod;
  volumes: Map<string, VolumeToMount>;
}

/** Go: DesiredStateOfWorld, for plugins that need no attach: pods and the volumes they mount. */
export class DesiredStateOfWorld {
  private readonly pods = new Map<string, DesiredPod>();

  /** Replaces what the pod needs with `volumes` (the latest pod object is what setUp sees). */
  setPod(pod: V1Pod, volumes: VolumeToMount[]): void {
    this.pods.set(pod.metadata!.uid!, { pod, volumes: new Map(volumes.map((v) => [v.volumeName, v])) });
  }

  deletePod(podUid: string): void {
    this.pods.delete(podUid);
  }

  hasPod(podUid: string): boolean {
    return this.pods.has(podUid);
  }

  getPod(podUid: string): V1Pod | undefined {
    return this.pods.get(podUid)?.pod;
  }

  podUids(): string[] {
    return [...this.pods.keys()];
  }

  volumesOf(podUid: string): VolumeToMount[] {
    return [...(this.pods.get(podUid)?.volumes.values() ?? [])];
  }

  hasVolume(podUid: string, volumeName: string): boolean {
    return this.pods.get(podUid)?.volumes.has(volumeName) ?? false;
  }

  *volumesToMount(): Iterable<{ pod: V1Pod; volume: VolumeToMount }> {
    for (const { pod, volumes } of this.pods.values()) for (const volume of volumes.values()) yield { pod, volume };
  }
}

export interface ActualVolume {
  uniqueName: UniqueVolumeName;
  podUid: string;
  volumeName: string;
  pluginName: string;
  dir: string;
  mounted: MountedVolume;
  /** Found on disk after a restart; not set up by this process yet (Go: reconstructed volumes). */
  reconstructed: boolean;
  /**
   * Found on disk and described by the plugin's `reconstruct` hook: it counts as set up (a pod that still
   * needs it does not set it up again), though it is only torn down once every pod source is ready.
   */
  reconstructedByPlugin?: boolean;
  /** setUp must run again to refresh contents (Go: remountRequired). */
  remountRequired: boolean;
  /**
   * setUp failed in a way that may have left the volume set up anyway (Go: MarkVolumeMountAsUncertain, after an
   * UncertainProgressError): not handed to containers, set up again, and torn down if the pod goes.
   */
  uncertain?: boolean;
  /** The claim the volume comes from, for its stats (unknown for a volume found on disk). */
  pvcRef?: ClaimReference;
}

/** Go: ActualStateOfWorld: the volumes set up for each pod. */
export class ActualStateOfWorld {
  private readonly pods = new Map<string, Map<string, ActualVolume>>();

  markMounted(volume: ActualVolume): void {
    let byName = this.pods.get(volume.podUid);
    if (!byName) {
      byName = new Map();
      this.pods.set(volume.podUid, byName);
    }
    byName.set(volume.volumeName, volume);
  }

  markUnmounted(podUid: string, volumeName: string): void {
    const byName = this.pods.get(podUid);
    if (!byName) return;
    byName.delete(volumeName);
    if (byName.size === 0) this.pods.delete(podUid);
  }

  /** Files a volume under another of the pod's names (a volume found on disk under its PV's name). */
  rename(podUid: string, from: string, to: string): void {
    const volume = this.get(podUid, from);
    if (!volume || from === to) return;
    this.markUnmounted(podUid, from);
    volume.volumeName = to;
    this.markMounted(volume);
  }

  get(podUid: string, volumeName: string): ActualVolume | undefined {
    return this.pods.get(podUid)?.get(volumeName);
  }

  volumesOf(podUid: string): ActualVolume[] {
    return [...(this.pods.get(podUid)?.values() ?? [])];
  }

  podUids(): string[] {
    return [...this.pods.keys()];
  }

  *all(): Iterable<ActualVolume> {
    for (const byName of this.pods.values()) yield* byName.values();
  }

  markRemountRequired(podUid: string): void {
    for (const volume of this.pods.get(podUid)?.values() ?? []) volume.remountRequired = true;
  }
}
