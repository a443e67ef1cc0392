// What /metrics/cadvisor knows beyond the summary: each running container's runtime id and image (CRI), and the OOM
// counters and PSI of each pod's cgroup and of the container cgroups below it (the container manager reads them).
import type { V1Pod } from '@kubernetes/client-node';
import { errorText, type Clock, type Logger } from '@kubelet-ts/core';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import type { ContainerManager } from '@kubelet-ts/container-manager';
import { getContainerInfoFromLabels } from '@kubelet-ts/runtime-manager';
import type { CadvisorContainerInfo, Summary } from '@kubelet-ts/stats';

export interface CadvisorInfoOptions {
  summary: Summary;
  /** The runtime's running containers (CRI ListContainers). */
  containers: runtimeapi.Container[];
  /** The container manager; undefined without cgroupsPerQOS (then no OOM or PSI figures). */
  containerManager?: ContainerManager;
  /** The pod by its uid (the pod manager), for its cgroup's name. */
  podByUid: (uid: string) => V1Pod | undefined;
  clock: Clock;
  logger: Logger;
}

/**
 * The CadvisorContainerInfo for renderCadvisorMetrics: the CRI containers' ids and images, and for each pod of the
 * summary with a pod cgroup its cgroup (the pod series' `id`), OOM count and PSI, and those of its containers whose
 * cgroup is found below the pod's. Reading a cgroup never fails the scrape: what cannot be read is left out.
 */
export async function cadvisorContainerInfos(opts: CadvisorInfoOptions): Promise<CadvisorContainerInfo[]> {
  const infos: CadvisorContainerInfo[] = [];
  const byId = new Map<string, CadvisorContainerInfo>();
  for (const ct of opts.containers) {
    const { podNamespace, podName, containerName } = getContainerInfoFromLabels(ct.labels);
    const info: CadvisorContainerInfo = { namespace: podNamespace, pod: podName, container: containerName, id: ct.id, name: ct.id, image: ct.image?.image ?? '' };
    infos.push(info);
    byId.set(ct.id, info);
  }
  const cm = opts.containerManager;
  if (!cm) return infos;
  await Promise.all(
    opts.summary.pods.map(async ({ podRef }) => {
      const pod = opts.podByUid(podRef.uid);
      if (!pod) return;
      let stats;
      try {
        stats = await cm.podCgroupStats(pod);
      } catch (err) {
        opts.logger.v(4).info('Unable to read the OOM and pressure figures of the pod cgroup', { pod: `${podRef.namespace}/${podRef.name}`, err: errorText(err) });
        return;
      }
      if (!stats) return;
      const timestampMs = opts.clock.now();
      infos.push({ namespace: podRef.namespace, pod: podRef.name, container: '', id: stats.cgroup, ...stats.pod, timestampMs });
      for (const [id, figures] of stats.containers) {
        const info = byId.get(id);
        // The sandbox's cgroup and those of exited containers have no series of their own.
        if (!info || info.namespace !== podRef.namespace || info.pod !== podRef.name) continue;
        if (figures.oomEvents !== undefined) info.oomEvents = figures.oomEvents;
        if (figures.pressure) info.pressure = figures.pressure;
        info.timestampMs = timestampMs;
      }
    }),
  );
  return infos;
}
