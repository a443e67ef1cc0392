import type { V1Pod } from '@kubernetes/client-node';
import { isMirrorPod, podFullName } from '@kubelet-ts/core';

/** Go's secret and configMap managers as the pod manager feeds them: the objects each pod references. */
export interface PodObjectRegistry {
  registerPod(pod: V1Pod): void;
  unregisterPod(pod: V1Pod): void;
}

/**
 * The desired pods by UID and full name, and the API server's mirror pods of static pods (Go:
 * pod.Manager). Mirror pods are never run: they only carry a static pod's status to the API server.
 */
export class PodManager {
  private readonly byUid = new Map<string, V1Pod>();
  private readonly byFullName = new Map<string, V1Pod>();
  private readonly mirrorByFullName = new Map<string, V1Pod>();
  private readonly mirrorUidToFullName = new Map<string, string>();

  /** Registries told of every pod added, updated or removed (mirror pods are not run, so not registered). */
  constructor(private readonly registries: readonly PodObjectRegistry[] = []) {}

  addPod(pod: V1Pod): void {
    this.updatePod(pod);
  }

  updatePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const fullName = podFullName(pod);
    if (isMirrorPod(pod)) {
      this.mirrorByFullName.set(fullName, pod);
      this.mirrorUidToFullName.set(uid, fullName);
      return;
    }
    for (const registry of this.registries) registry.registerPod(pod);
    this.byUid.set(uid, pod);
    this.byFullName.set(fullName, pod);
  }

  removePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const fullName = podFullName(pod);
    if (isMirrorPod(pod)) {
      if (this.mirrorByFullName.get(fullName)?.metadata?.uid === uid) this.mirrorByFullName.delete(fullName);
      this.mirrorUidToFullName.delete(uid);
      return;
    }
    const known = this.byUid.get(uid);
    if (known) for (const registry of this.registries) registry.unregisterPod(known);
    this.byUid.delete(uid);
    if (this.byFullName.get(fullName)?.metadata?.uid === uid) this.byFullName.delete(fullName);
  }

  getPodByUid(uid: string): V1Pod | undefined {
    return this.byUid.get(uid);
  }

  getPodByFullName(fullName: string): V1Pod | undefined {
    return this.byFullName.get(fullName);
  }

  /** The pods to run (static and API pods; not mirror pods). */
  getPods(): V1Pod[] {
    return [...this.byUid.values()];
  }

  getMirrorPodByPod(pod: V1Pod): V1Pod | undefined {
    return this.mirrorByFullName.get(podFullName(pod));
  }

  /** The static pod a mirror pod stands for. */
  getPodByMirrorPod(mirrorPod: V1Pod): V1Pod | undefined {
    return this.byFullName.get(podFullName(mirrorPod));
  }

  /** A mirror pod's UID maps to its static pod's UID (Go: TranslatePodUID); other UIDs stay. */
  translatePodUID(uid: string): string {
    const fullName = this.mirrorUidToFullName.get(uid);
    return (fullName && this.byFullName.get(fullName)?.metadata?.uid) || uid;
  }

  /** Mirror pods whose static pod is gone. */
  getOrphanedMirrorPodNames(): string[] {
    return [...this.mirrorByFullName.keys()].filter((fullName) => !this.byFullName.has(fullName));
  }
}
