// Messages as the kubelet sends and receives them for a typical pod (the shapes kuberuntime builds: labels,
// annotations, a projected token, DNS, masked paths, resources), for the codec lines of cri-overhead.bench.ts.
import type { runtimeapi } from '@kubelet-ts/cri-client';

const hex = (seed: number) => (seed.toString(16).padStart(8, '0') + 'a3f09c1e7b52d4806e19f3c2b7a5d0e4c8f1a2b3d4e5f6071829304a5b6c7d8e9f').slice(0, 64);
const NOW_NS = 1_764_300_000_000_000_000;

export function podSandboxConfig(i: number): runtimeapi.PodSandboxConfigInit {
  const uid = `0b6f3c2e-5d1a-4f7b-9c8e-${String(i).padStart(12, '0')}`;
  return {
    metadata: { name: `web-7d4b9c8f6d-${i}`, namespace: 'default', uid, attempt: 0 },
    hostname: `web-7d4b9c8f6d-${i}`,
    logDirectory: `/var/log/pods/default_web-7d4b9c8f6d-${i}_${uid}`,
    dnsConfig: { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'], options: ['ndots:5'] },
    portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort: 0, hostIp: '' }],
    labels: {
      app: 'web',
      'io.kubernetes.pod.name': `web-7d4b9c8f6d-${i}`,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': uid,
      'pod-template-hash': '7d4b9c8f6d',
    },
    annotations: { 'kubernetes.io/config.seen': '2026-11-28T10:00:00.000000000Z', 'kubernetes.io/config.source': 'api' },
    linux: {
      cgroupParent: `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice`,
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' }, seccomp: { profileType: 'RuntimeDefault' } },
      resources: { cpuPeriod: 100000, cpuQuota: 0, cpuShares: 102, memoryLimitInBytes: 134217728, oomScoreAdj: 0 },
    },
  } as runtimeapi.PodSandboxConfigInit;
}

export function containerConfig(i: number): runtimeapi.ContainerConfigInit {
  const uid = `0b6f3c2e-5d1a-4f7b-9c8e-${String(i).padStart(12, '0')}`;
  return {
    metadata: { name: 'web', attempt: 0 },
    image: { image: 'sha256:' + hex(i), userSpecifiedImage: 'registry.example.com/team/web:1.4.2' },
    command: ['/usr/local/bin/web'],
    args: ['--port=8080', '--log-level=info'],
    workingDir: '/srv',
    envs: [
      { key: 'PORT', value: '8080' },
      { key: 'KUBERNETES_SERVICE_HOST', value: '10.96.0.1' },
      { key: 'KUBERNETES_SERVICE_PORT', value: '443' },
      { key: 'KUBERNETES_SERVICE_PORT_HTTPS', value: '443' },
      { key: 'KUBERNETES_PORT', value: 'tcp://10.96.0.1:443' },
      { key: 'KUBERNETES_PORT_443_TCP', value: 'tcp://10.96.0.1:443' },
      { key: 'KUBERNETES_PORT_443_TCP_PROTO', value: 'tcp' },
      { key: 'KUBERNETES_PORT_443_TCP_PORT', value: '443' },
      { key: 'KUBERNETES_PORT_443_TCP_ADDR', value: '10.96.0.1' },
    ],
    mounts: [
      { containerPath: '/etc/config', hostPath: `/var/lib/kubelet/pods/${uid}/volumes/kubernetes.io~configmap/config`, readonly: true },
      { containerPath: '/var/run/secrets/kubernetes.io/serviceaccount', hostPath: `/var/lib/kubelet/pods/${uid}/volumes/kubernetes.io~projected/kube-api-access-x7k2p`, readonly: true },
      { containerPath: '/etc/hosts', hostPath: `/var/lib/kubelet/pods/${uid}/etc-hosts` },
      { containerPath: '/dev/termination-log', hostPath: `/var/lib/kubelet/pods/${uid}/containers/web/3f9a1c2b` },
    ],
    labels: {
      'io.kubernetes.container.name': 'web',
      'io.kubernetes.pod.name': `web-7d4b9c8f6d-${i}`,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': uid,
    },
    annotations: {
      'io.kubernetes.container.hash': '5e7b9d2c',
      'io.kubernetes.container.ports': '[{"containerPort":8080,"protocol":"TCP"}]',
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '30',
    },
    logPath: 'web/0.log',
    linux: {
      resources: { cpuPeriod: 100000, cpuQuota: 0, cpuShares: 102, memoryLimitInBytes: 134217728, oomScoreAdj: 984 },
      securityContext: {
        namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
        runAsUser: { value: 1000 },
        maskedPaths: ['/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/devices/virtual/powercap'],
        readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
        seccomp: { profileType: 'RuntimeDefault' },
      },
    },
  } as runtimeapi.ContainerConfigInit;
}

const labels = (i: number) => ({
  'io.kubernetes.container.name': 'web',
  'io.kubernetes.pod.name': `web-7d4b9c8f6d-${i}`,
  'io.kubernetes.pod.namespace': 'default',
  'io.kubernetes.pod.uid': `0b6f3c2e-5d1a-4f7b-9c8e-${String(i).padStart(12, '0')}`,
});

export function containers(n: number): runtimeapi.ContainerInit[] {
  return Array.from({ length: n }, (_, i) => ({
    id: hex(i * 7 + 1),
    podSandboxId: hex(i * 7 + 2),
    metadata: { name: 'web', attempt: 0 },
    image: { image: 'sha256:' + hex(3), userSpecifiedImage: 'registry.example.com/team/web:1.4.2' },
    imageRef: 'sha256:' + hex(3),
    state: 'CONTAINER_RUNNING',
    createdAt: NOW_NS + i * 1_000_003,
    labels: labels(i),
    annotations: { 'io.kubernetes.container.hash': '5e7b9d2c', 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.pod.terminationGracePeriod': '30' },
  })) as runtimeapi.ContainerInit[];
}

const u = (value: number) => ({ value });
function containerStats(i: number): runtimeapi.ContainerStatsInit {
  return {
    attributes: { id: hex(i * 7 + 1), metadata: { name: 'web', attempt: 0 }, labels: labels(i), annotations: { 'io.kubernetes.container.hash': '5e7b9d2c' } },
    cpu: { timestamp: NOW_NS + i, usageCoreNanoSeconds: u(81_234_567_890 + i), usageNanoCores: u(12_345_678) },
    memory: { timestamp: NOW_NS + i, workingSetBytes: u(41_943_040 + i), availableBytes: u(92_274_688), usageBytes: u(50_331_648), rssBytes: u(33_554_432), pageFaults: u(12_345), majorPageFaults: u(12) },
    writableLayer: { timestamp: NOW_NS + i, fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' }, usedBytes: u(65_536), inodesUsed: u(17) },
  } as runtimeapi.ContainerStatsInit;
}

export function listContainerStats(n: number): runtimeapi.ContainerStatsInit[] {
  return Array.from({ length: n }, (_, i) => containerStats(i));
}

export function listPodSandboxStats(n: number): runtimeapi.PodSandboxStatsInit[] {
  return Array.from({ length: n }, (_, i) => {
    const config = podSandboxConfig(i);
    return {
      attributes: { id: hex(i * 7 + 2), metadata: config.metadata, labels: config.labels, annotations: config.annotations },
      linux: {
        cpu: { timestamp: NOW_NS + i, usageCoreNanoSeconds: u(91_234_567_890 + i), usageNanoCores: u(13_345_678) },
        memory: { timestamp: NOW_NS + i, workingSetBytes: u(45_943_040), availableBytes: u(88_274_688), usageBytes: u(52_331_648), rssBytes: u(35_554_432), pageFaults: u(22_345), majorPageFaults: u(14) },
        network: {
          timestamp: NOW_NS + i,
          defaultInterface: { name: 'eth0', rxBytes: u(1_234_567), rxErrors: u(0), txBytes: u(7_654_321), txErrors: u(0) },
          interfaces: [{ name: 'eth0', rxBytes: u(1_234_567), rxErrors: u(0), txBytes: u(7_654_321), txErrors: u(0) }],
        },
        process: { timestamp: NOW_NS + i, processCount: u(3) },
        containers: [containerStats(i)],
      },
    } as runtimeapi.PodSandboxStatsInit;
  });
}
