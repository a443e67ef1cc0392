// Test doubles of @kubelet-ts/volume-manager: a VolumeManager that mounts nothing, an in-memory Mounter
// and in-memory API objects, so a kubelet test needs neither root nor an API server.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { makeMounts, type ContainerMount } from './container-mounts.js';
import { podVolumeNamesInUse } from './names.js';
import { FakeMounter } from './testing-mounter.js';
import type { MountedVolume } from './types.js';
import type { PodVolumeStats, VolumeManager } from './volume-manager.js';

export { FakeMounter, type FakeMount, type FakeMountCall, type FakeMountOperation } from './testing-mounter.js';
export { FakeApiObjects, notFoundError } from './fake-api.js';

/**
 * A VolumeManager that "mounts" every volume a pod's containers use at `<root>/<uid>/<volume>` at once
 * (nothing is written); a volume in `volumeDevices` gets the device path `<root>/<uid>/<volume>/dev`. Set `mountError` to make waits fail with it; every call is recorded.
 */
export class FakeVolumeManager implements VolumeManager {
  readonly waitedForMount: string[] = [];
  readonly waitedForUnmount: string[] = [];
  readonly cleanups: Array<ReadonlySet<string>> = [];
  readonly remounts: number[] = [];
  /** When set, waitForAttachAndMount rejects with it. */
  mountError: Error | undefined;
  volumesInUse: string[] = [];
  /** What getVolumeStats answers, by pod uid. */
  readonly volumeStats = new Map<string, PodVolumeStats[]>();
  /** What getContainerMounts bind-mounts subPaths with (nothing happens on disk). */
  readonly mounter = new FakeMounter();
  private readonly mounted = new Map<string, Map<string, MountedVolume>>();
  private started = false;

  constructor(private readonly root = '/fake/pods') {}

  async start(): Promise<void> {
    this.started = true;
  }

  async stop(): Promise<void> {
    this.started = false;
  }

  async waitForAttachAndMount(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.waitedForMount.push(uid);
    if (this.mountError) throw this.mountError;
    const volumes = new Map<string, MountedVolume>();
    const devices = new Set(
      [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].flatMap((c) => (c.volumeDevices ?? []).map((d) => d.name)),
    );
    for (const name of podVolumeNamesInUse(pod)) {
      const path = `${this.root}/${uid}/${name}`;
      // A volume in volumeDevices is "mapped" to a device node under it (what makeDevices hands the runtime).
      volumes.set(name, { path, readOnly: false, selinuxRelabel: false, ...(devices.has(name) ? { devicePath: `${path}/dev` } : {}) });
    }
    this.mounted.set(uid, volumes);
  }

  async waitForUnmount(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.waitedForUnmount.push(uid);
    this.mounted.delete(uid);
  }

  getMountedVolumesForPod(podUid: string): Map<string, MountedVolume> {
    return new Map(this.mounted.get(podUid) ?? []);
  }

  /** makeMounts over the fake volumes; a subPath fails (the fake volume paths do not exist). */
  getContainerMounts(pod: V1Pod, container: V1Container, env?: ReadonlyMap<string, string>): Promise<ContainerMount[]> {
    const uid = pod.metadata?.uid ?? '';
    return makeMounts(pod, container, this.getMountedVolumesForPod(uid), { env, podDir: `${this.root}/${uid}`, mounter: this.mounter });
  }

  podVolumesExist(podUid: string): boolean {
    return this.mounted.has(podUid);
  }

  getVolumesInUse(): string[] {
    return [...this.volumesInUse];
  }

  async getVolumeStats(podUid: string): Promise<PodVolumeStats[]> {
    return structuredClone(this.volumeStats.get(podUid) ?? []);
  }

  reconcilerStatesHasBeenSynced(): boolean {
    return this.started;
  }

  async cleanupOrphanedPodDirs(keep: ReadonlySet<string>): Promise<void> {
    this.cleanups.push(new Set(keep));
  }

  remountPodsReferencing(): void {
    this.remounts.push(Date.now());
  }
}
