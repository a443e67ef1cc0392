// The pods' volume stats for the Summary API and kubelet_volume_stats_*: du/statfs of the volume directories,
// except for plugins that report usage themselves (CSI's NodeGetVolumeStats), with the claim each volume comes
// from (Go: the server/stats volumeStatCalculator over the volume manager's mounted volumes and their
// MetricsProviders; pvcRef for volumes backed by a claim).
import type { V1Pod } from '@kubernetes/client-node';
import { formatTime, type Clock, type Logger } from '@kubelet-ts/core';
import type { ClaimVolumeStats } from '@kubelet-ts/server';
import type { PodVolumeStats, PodVolumeStatsFunction, VolumeDirStats, VolumeStats } from '@kubelet-ts/stats';
import { podVolumeClaim, type VolumeUsageStats } from '@kubelet-ts/volume-manager';

/** The usage a volume plugin reports for a pod's mounted volumes (the volume manager's getVolumeStats). */
export interface PluginVolumeStatsSource {
  getVolumeStats(podUid: string): Promise<Array<{ volumeName: string; pvcRef?: { name: string; namespace: string }; stats: VolumeUsageStats }>>;
}

export interface PodVolumeStatsOptions {
  dirStats: Pick<VolumeDirStats, 'podVolumeStats'>;
  /** The volume manager, once the kubelet has one. */
  plugins: () => PluginVolumeStatsSource | undefined;
  /** The pod of a uid, to name the claims its volumes come from. */
  pod: (podUid: string) => V1Pod | undefined;
  clock: Clock;
  logger: Logger;
}

/** The claim a pod volume is backed by (the volume manager's podVolumeClaim: a persistentVolumeClaim, or a generic ephemeral volume's). */
export function claimOfVolume(pod: V1Pod, volumeName: string): { name: string; namespace: string } | undefined {
  const volume = pod.spec?.volumes?.find((v) => v.name === volumeName);
  const claim = volume && podVolumeClaim(pod, volume);
  return claim && { name: claim.claimName, namespace: pod.metadata?.namespace ?? '' };
}

export function podVolumeStatsWithPlugins(opts: PodVolumeStatsOptions): PodVolumeStatsFunction {
  return async (podUid) => {
    const measured = await opts.dirStats.podVolumeStats(podUid);
    let reported: Awaited<ReturnType<PluginVolumeStatsSource['getVolumeStats']>> = [];
    try {
      reported = (await opts.plugins()?.getVolumeStats(podUid)) ?? [];
    } catch (err) {
      opts.logger.warn('Unable to get the volume plugins\' stats of a pod', { podUID: podUid, err: err instanceof Error ? err.message : String(err) });
    }
    if (!measured && reported.length === 0) return undefined;
    const result: PodVolumeStats = { ephemeralVolumes: measured?.ephemeralVolumes ?? [], persistentVolumes: [...(measured?.persistentVolumes ?? [])] };
    const pod = opts.pod(podUid);
    if (pod) {
      for (const volume of result.persistentVolumes) {
        const claim = volume.name !== undefined ? claimOfVolume(pod, volume.name) : undefined;
        if (claim) volume.pvcRef = claim;
      }
    }
    const time = formatTime(opts.clock.now());
    for (const { volumeName, pvcRef, stats } of reported) {
      const volume: VolumeStats = {
        time,
        availableBytes: stats.availableBytes,
        capacityBytes: stats.capacityBytes,
        usedBytes: stats.usedBytes,
        inodesFree: stats.inodesFree,
        inodes: stats.inodes,
        inodesUsed: stats.inodesUsed,
        name: volumeName,
      };
      for (const key of Object.keys(volume) as Array<keyof VolumeStats>) if (volume[key] === undefined) delete volume[key];
      const claim = pvcRef ?? (pod ? claimOfVolume(pod, volumeName) : undefined);
      if (claim) volume.pvcRef = claim;
      result.persistentVolumes.push(volume);
    }
    return result;
  };
}

/** kubelet_volume_stats_*'s source: the claim-backed volumes of the given pods. */
export async function claimVolumeStats(pods: readonly V1Pod[], podVolumeStats: PodVolumeStatsFunction): Promise<ClaimVolumeStats[]> {
  const all = await Promise.all(pods.map((pod) => podVolumeStats(pod.metadata?.uid ?? '').catch(() => undefined)));
  const claims: ClaimVolumeStats[] = [];
  for (const stats of all) {
    for (const volume of stats?.persistentVolumes ?? []) {
      if (!volume.pvcRef) continue;
      claims.push({
        namespace: volume.pvcRef.namespace,
        claimName: volume.pvcRef.name,
        capacityBytes: volume.capacityBytes,
        availableBytes: volume.availableBytes,
        usedBytes: volume.usedBytes,
        inodes: volume.inodes,
        inodesFree: volume.inodesFree,
        inodesUsed: volume.inodesUsed,
      });
    }
  }
  return claims;
}
