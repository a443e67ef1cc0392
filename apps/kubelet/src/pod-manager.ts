import type { V1Pod } from '@kubernetes/client-node';
import { podFullName } from '@kubelet-ts/core';

/** The desired pods by UID and full name (Go: pod.Manager, without mirror pods until API server mode). */
export class PodManager {
  private readonly byUid = new Map<string, V1Pod>();
  private readonly byFullName = new Map<string, V1Pod>();

  addPod(pod: V1Pod): void {
    this.updatePod(pod);
  }

  updatePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    this.byUid.set(uid, pod);
    this.byFullName.set(podFullName(pod), pod);
  }

  removePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    this.byUid.delete(uid);
    const fullName = podFullName(pod);
    if (this.byFullName.get(fullName)?.metadata?.uid === uid) this.byFullName.delete(fullName);
  }

  getPodByUid(uid: string): V1Pod | undefined {
    return this.byUid.get(uid);
  }

  getPodByFullName(fullName: string): V1Pod | undefined {
    return this.byFullName.get(fullName);
  }

  getPods(): V1Pod[] {
    return [...this.byUid.values()];
  }
}
