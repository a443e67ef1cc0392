// /metrics/cadvisor without cAdvisor: the cAdvisor metric names the summary's figures allow, with the
// labels the Go kubelet gives them (containerPrometheusLabelsFunc: container, id, image, name,
// namespace, pod) plus each metric's own extra label (cpu, device, interface).
import type { NetworkStats, PodStats, Summary } from './api.js';
import { renderFamilies, timeToMs, type MetricFamily, type Sample } from './prometheus-text.js';

/**
 * What cAdvisor knows about a container that the summary does not: its cgroup, its runtime id and its
 * image. Matched to the summary by namespace, pod and container name; `container: ''` describes the
 * pod's own cgroup.
 */
export interface CadvisorContainerInfo {
  namespace: string;
  pod: string;
  container: string;
  /** The cgroup path, cAdvisor's `id` label (e.g. /kubepods/besteffort/pod<uid>/<container id>). */
  id?: string;
  /** The runtime's container id, cAdvisor's `name` label. */
  name?: string;
  image?: string;
  /** The device of the container's writable layer (cAdvisor's `device` label on fs metrics). */
  device?: string;
  /**
   * OOM kills observed in the cgroup: container_oom_events_total. For a pod (container "") on cgroup v1, where the
   * kernel counts a kill only in the victim's cgroup, the caller sums the pod cgroup and its children.
   */
  oomEvents?: number;
  /** The cgroup's PSI totals (µs): container_pressure_{cpu,memory,io}_{waiting,stalled}_seconds_total. */
  pressure?: CadvisorPressure;
  /** When oomEvents and pressure were read (ms since the epoch): their samples' timestamp, as cAdvisor's stats time. */
  timestampMs?: number;
}

/** A PSI file's totals in µs: `some` (at least one task stalled: "waiting") and `full` (all stalled: "stalled"). */
export interface CadvisorPsi {
  some?: { total: number };
  full?: { total: number };
}

/** A cgroup's cpu.pressure, memory.pressure and io.pressure (cgroup v2 with PSI). */
export interface CadvisorPressure {
  cpu?: CadvisorPsi;
  memory?: CadvisorPsi;
  io?: CadvisorPsi;
}

export interface RenderCadvisorOptions {
  /** Info for the node's root cgroup ("/"); default id "/". */
  root?: Omit<CadvisorContainerInfo, 'namespace' | 'pod' | 'container'>;
  /** cAdvisor's container_scrape_error: 1 when collecting failed. Default 0. */
  scrapeError?: boolean;
}

const NANOS_PER_SECOND = 1e9;
const MICROS_PER_SECOND = 1e6;
const PSI_RESOURCES = [
  ['cpu', 'CPU'],
  ['memory', 'memory'],
  ['io', 'IO'],
] as const;

type Labels = Record<string, string>;

/**
 * The /metrics/cadvisor body: one series per container, per pod cgroup (container="") and for the
 * node's root cgroup (id="/"), each with the figures it has.
 */
export function renderCadvisorMetrics(summary: Summary, containers: CadvisorContainerInfo[] = [], options: RenderCadvisorOptions = {}): string {
  const infoByKey = new Map(containers.map((info) => [infoKey(info.namespace, info.pod, info.container), info]));
  const cpu: Sample[] = [];
  const memoryUsage: Sample[] = [];
  const workingSet: Sample[] = [];
  const rss: Sample[] = [];
  const fsUsage: Sample[] = [];
  const rxBytes: Sample[] = [];
  const txBytes: Sample[] = [];
  const startTime: Sample[] = [];
  const oomEvents: Sample[] = [];
  // cAdvisor's PressureMetrics: "waiting" is PSI's some line, "stalled" its full line.
  const pressure = Object.fromEntries(PSI_RESOURCES.map(([resource]) => [resource, { waiting: [] as Sample[], stalled: [] as Sample[] }])) as Record<
    (typeof PSI_RESOURCES)[number][0],
    { waiting: Sample[]; stalled: Sample[] }
  >;

  const baseLabels = (namespace: string, pod: string, container: string, info?: Partial<CadvisorContainerInfo>): Labels => ({
    container,
    id: info?.id ?? '',
    image: info?.image ?? '',
    name: info?.name ?? '',
    namespace,
    pod,
  });

  const addCpuMemory = (labels: Labels, s: { cpu?: PodStats['cpu']; memory?: PodStats['memory'] }): void => {
    if (s.cpu?.usageCoreNanoSeconds !== undefined) {
      cpu.push({ labels: { ...labels, cpu: 'total' }, value: s.cpu.usageCoreNanoSeconds / NANOS_PER_SECOND, timestampMs: timeToMs(s.cpu.time) });
    }
    const memory = s.memory;
    if (!memory) return;
    const timestampMs = timeToMs(memory.time);
    if (memory.usageBytes !== undefined) memoryUsage.push({ labels, value: memory.usageBytes, timestampMs });
    if (memory.workingSetBytes !== undefined) workingSet.push({ labels, value: memory.workingSetBytes, timestampMs });
    if (memory.rssBytes !== undefined) rss.push({ labels, value: memory.rssBytes, timestampMs });
  };

  const addNetwork = (labels: Labels, network: NetworkStats | undefined): void => {
    if (!network) return;
    const timestampMs = timeToMs(network.time);
    const interfaces = network.interfaces ?? (network.name ? [network] : []);
    for (const iface of interfaces) {
      const withInterface = { ...labels, interface: iface.name };
      if (iface.rxBytes !== undefined) rxBytes.push({ labels: withInterface, value: iface.rxBytes, timestampMs });
      if (iface.txBytes !== undefined) txBytes.push({ labels: withInterface, value: iface.txBytes, timestampMs });
    }
  };

  const addStartTime = (labels: Labels, time: string): void => {
    const ms = timeToMs(time);
    // cAdvisor writes the creation time in whole seconds (Spec.CreationTime.Unix()), without a sample timestamp.
    if (ms !== undefined && ms > 0) startTime.push({ labels, value: Math.floor(ms / 1000) });
  };

  const addOomPressure = (labels: Labels, info: CadvisorContainerInfo | undefined): void => {
    if (!info) return;
    const timestampMs = info.timestampMs;
    if (info.oomEvents !== undefined) oomEvents.push({ labels, value: info.oomEvents, timestampMs });
    for (const [resource] of PSI_RESOURCES) {
      const psi = info.pressure?.[resource];
      if (psi?.some) pressure[resource].waiting.push({ labels, value: psi.some.total / MICROS_PER_SECOND, timestampMs });
      if (psi?.full) pressure[resource].stalled.push({ labels, value: psi.full.total / MICROS_PER_SECOND, timestampMs });
    }
  };

  const node = summary.node;
  const rootLabels = baseLabels('', '', '', { id: '/', ...options.root });
  addCpuMemory(rootLabels, node);
  addNetwork(rootLabels, node.network);
  addStartTime(rootLabels, node.startTime);
  if (node.fs?.usedBytes !== undefined) {
    fsUsage.push({ labels: { ...rootLabels, device: options.root?.device ?? '' }, value: node.fs.usedBytes, timestampMs: timeToMs(node.fs.time) });
  }

  for (const pod of summary.pods) {
    const { namespace, name } = pod.podRef;
    const podInfo = infoByKey.get(infoKey(namespace, name, ''));
    const podLabels = baseLabels(namespace, name, '', podInfo);
    addCpuMemory(podLabels, pod);
    addOomPressure(podLabels, podInfo);
    addNetwork(podLabels, pod.network);
    addStartTime(podLabels, pod.startTime);
    for (const container of pod.containers) {
      const info = infoByKey.get(infoKey(namespace, name, container.name));
      const labels = baseLabels(namespace, name, container.name, info);
      addCpuMemory(labels, container);
      addStartTime(labels, container.startTime);
      addOomPressure(labels, info);
      if (container.rootfs?.usedBytes !== undefined) {
        fsUsage.push({
          labels: { ...labels, device: info?.device ?? '' },
          value: container.rootfs.usedBytes,
          timestampMs: timeToMs(container.rootfs.time),
        });
      }
    }
  }

  const families: MetricFamily[] = [
    { name: 'container_cpu_usage_seconds_total', help: 'Cumulative cpu time consumed in seconds.', type: 'counter', samples: cpu },
    {
      name: 'container_memory_usage_bytes',
      help: 'Current memory usage in bytes, including all memory regardless of when it was accessed',
      type: 'gauge',
      samples: memoryUsage,
    },
    { name: 'container_memory_working_set_bytes', help: 'Current working set in bytes.', type: 'gauge', samples: workingSet },
    { name: 'container_memory_rss', help: 'Size of RSS in bytes.', type: 'gauge', samples: rss },
    {
      name: 'container_fs_usage_bytes',
      help: 'Number of bytes that are consumed by the container on this filesystem.',
      type: 'gauge',
      samples: fsUsage,
    },
    { name: 'container_network_receive_bytes_total', help: 'Cumulative count of bytes received', type: 'counter', samples: rxBytes },
    { name: 'container_network_transmit_bytes_total', help: 'Cumulative count of bytes transmitted', type: 'counter', samples: txBytes },
    { name: 'container_start_time_seconds', help: 'Start time of the container since unix epoch in seconds.', type: 'gauge', samples: startTime },
    { name: 'container_oom_events_total', help: 'Count of out of memory events observed for the container', type: 'counter', samples: oomEvents },
    ...PSI_RESOURCES.flatMap(([resource, title]): MetricFamily[] => [
      {
        name: `container_pressure_${resource}_stalled_seconds_total`,
        help: `Total time duration no tasks in the container could make progress due to ${title} congestion.`,
        type: 'counter',
        samples: pressure[resource].stalled,
      },
      {
        name: `container_pressure_${resource}_waiting_seconds_total`,
        help: `Total time duration tasks in the container have waited due to ${title} congestion.`,
        type: 'counter',
        samples: pressure[resource].waiting,
      },
    ]),
    {
      name: 'container_scrape_error',
      help: '1 if there was an error while getting container metrics, 0 otherwise',
      type: 'gauge',
      samples: [{ labels: {}, value: options.scrapeError ? 1 : 0 }],
    },
  ];
  return renderFamilies(families);
}

function infoKey(namespace: string, pod: string, container: string): string {
  return `${namespace}\u0000${pod}\u0000${container}`;
}
