import 'reflect-metadata';
import { instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import { EventLoopMonitor, PodCache, createLogger, deferredApiClient, isMirrorPod, nodeReference, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { adjustableLogger } from './log-verbosity.js';
import { RemoteImageService, RemoteRuntimeService, type ImageService, type RuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { EventedPLEG, GenericPLEG, type PodLifecycleEventGenerator } from '@kubelet-ts/pleg';
import { PodWorkers, type PodSyncer } from '@kubelet-ts/pod-workers';
import { makePodSourceConfig, type PodSourceConfig } from '@kubelet-ts/pod-config';
import { DnsConfigurer, GenericRuntimeManager, RuntimeClassManager, standaloneRuntimeHandler } from '@kubelet-ts/runtime-manager';
import { CriImageFsStatsProvider, RealImageGCManager, type ImageGCManager } from '@kubelet-ts/image-gc';
import { ContainerGC } from '@kubelet-ts/container-gc';
import { ProbeManager, type ContainerProber } from '@kubelet-ts/prober';
import type { V1Node, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { KUBELET_VERSION } from './version.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { newKeepAliveKubeConfig } from './kube-config.js';
import type { CertificateManager } from '@kubelet-ts/certificate';
import { registerCertificateDeps } from './certificates.js';
import { KubeletEventRecorder, KubeletStatusManager, BasicMirrorClient, syncMirrorPod, deleteOrphanedMirrorPods } from '@kubelet-ts/status-manager';
import { NodeLeaseController, NodeStatusManager, cachedMachineInfo, type KubeClient, type MachineInfoProvider, type NodeStatusManagerOptions } from '@kubelet-ts/node-status';
import { ConfigError } from './config.js';
import { NodeHostIPs } from './host-ips.js';
import { ServiceLister } from './service-lister.js';
import { join } from 'node:path';
import {
  ConfigMapManager,
  KubeletVolumeManager,
  SecretManager,
  SystemMounter,
  TokenManager,
  createConfigMapManager,
  createPersistentVolumeGetter,
  createSecretManager,
  createTokenRequester,
  defaultVolumePlugins,
  type Mounter,
  type VolumePlugin,
} from '@kubelet-ts/volume-manager';
import { ContainerManager, SystemdDbusUnitManager, type SystemdUnitManager } from '@kubelet-ts/container-manager';
import { EvictionManager } from '@kubelet-ts/eviction';
import { NodeShutdownManager, defaultShutdownTrigger, type ShutdownTrigger } from '@kubelet-ts/node-shutdown';
import { parseThresholdConfig } from '@kubelet-ts/core';
import type { CgroupReader, SummarySource } from '@kubelet-ts/stats';
import { nodeCapacity, type NodeCapacity } from './node-capacity.js';
import { registerCsiDeps } from './csi.js';
import { configMapAndSecretSource, criMountsFor, pullSecretsFor, referencesObject, withBlockVolumeDevices } from './volumes.js';
import { localRuntimePaths, type KubeletConfig } from './config.js';
import { EMBEDDED_RUNTIME_TAINT, LOCAL_RUNTIME_ENDPOINT } from './flags.js';
import { registerServerDeps } from './kubelet-server.js';
import { Kubelet, type ContainerGCLoop, type KubeletOptions, type PodStateProvider, type ProbeManagerLike } from './kubelet.js';
import { instrumentImageService, instrumentRuntimeService, type KubeletMetrics } from '@kubelet-ts/server';
import { createKubeletMetrics, plegMetricsHooks, probeMetricsHooks, volumeMetricsHook } from './metrics.js';
import { cgroupDriverMismatchHint } from './cgroup-driver.js';
import { DeviceManager, PodResourcesServer, podResourcesSocketPath } from '@kubelet-ts/device-manager';

/**
 * The injection tokens of KubeletDeps. Only the app knows tsyringe: every library is built here by a
 * factory from the config and the other dependencies. Tests and embedders register their own provider
 * for any token in a child container (the last registration wins).
 */
export const Tokens = {
  Config: Symbol.for('kubelet-ts.KubeletConfig'),
  Clock: Symbol.for('kubelet-ts.Clock'),
  Logger: Symbol.for('kubelet-ts.Logger'),
  LocalRuntime: Symbol.for('kubelet-ts.LocalRuntime'),
  /** The CRI clients as dialed; RuntimeService and ImageService are them instrumented with the metrics. */
  CriRuntimeService: Symbol.for('kubelet-ts.CriRuntimeService'),
  CriImageService: Symbol.for('kubelet-ts.CriImageService'),
  RuntimeService: Symbol.for('kubelet-ts.RuntimeService'),
  ImageService: Symbol.for('kubelet-ts.ImageService'),
  /** The node's KubeletMetrics: /metrics and /metrics/probes. */
  Metrics: Symbol.for('kubelet-ts.Metrics'),
  /** The process's EventLoopMonitor: the `eventloop` healthz check and the nodejs_* metrics (a fleet shares one). */
  EventLoopMonitor: Symbol.for('kubelet-ts.EventLoopMonitor'),
  ContainerRuntime: Symbol.for('kubelet-ts.ContainerRuntime'),
  PodCache: Symbol.for('kubelet-ts.PodCache'),
  PLEG: Symbol.for('kubelet-ts.PLEG'),
  PodSourceConfig: Symbol.for('kubelet-ts.PodSourceConfig'),
  PodWorkersFactory: Symbol.for('kubelet-ts.PodWorkersFactory'),
  ImageGC: Symbol.for('kubelet-ts.ImageGC'),
  ContainerGCFactory: Symbol.for('kubelet-ts.ContainerGCFactory'),
  ProbeManagerFactory: Symbol.for('kubelet-ts.ProbeManagerFactory'),
  EventRecorder: Symbol.for('kubelet-ts.EventRecorder'),
  KubeConfig: Symbol.for('kubelet-ts.KubeConfig'),
  /** Go: the client and serving certificate managers (--rotate-certificates, serverTLSBootstrap); else undefined. */
  ClientCertificateManager: Symbol.for('kubelet-ts.ClientCertificateManager'),
  ServerCertificateManager: Symbol.for('kubelet-ts.ServerCertificateManager'),
  NodeStatus: Symbol.for('kubelet-ts.NodeStatus'),
  NodeLease: Symbol.for('kubelet-ts.NodeLease'),
  StatusManager: Symbol.for('kubelet-ts.StatusManager'),
  MirrorPods: Symbol.for('kubelet-ts.MirrorPods'),
  HostIPs: Symbol.for('kubelet-ts.HostIPs'),
  NodeAnyWay: Symbol.for('kubelet-ts.NodeAnyWay'),
  DnsConfigurer: Symbol.for('kubelet-ts.DnsConfigurer'),
  ServiceLister: Symbol.for('kubelet-ts.ServiceLister'),
  RuntimeClassManager: Symbol.for('kubelet-ts.RuntimeClassManager'),
  Mounter: Symbol.for('kubelet-ts.Mounter'),
  ConfigMapManager: Symbol.for('kubelet-ts.ConfigMapManager'),
  SecretManager: Symbol.for('kubelet-ts.SecretManager'),
  TokenManager: Symbol.for('kubelet-ts.TokenManager'),
  VolumeManagerFactory: Symbol.for('kubelet-ts.VolumeManagerFactory'),
  KubeletOptions: Symbol.for('kubelet-ts.KubeletOptions'),
  ServerGate: Symbol.for('kubelet-ts.ServerGate'),
  ServerHostFactory: Symbol.for('kubelet-ts.ServerHostFactory'),
  ServerMetrics: Symbol.for('kubelet-ts.ServerMetrics'),
  StatsProvider: Symbol.for('kubelet-ts.StatsProvider'),
  PodVolumeStats: Symbol.for('kubelet-ts.PodVolumeStats'),
  CsiDrivers: Symbol.for('kubelet-ts.CsiDrivers'),
  CsiNodeInfo: Symbol.for('kubelet-ts.CsiNodeInfo'),
  PluginWatcher: Symbol.for('kubelet-ts.PluginWatcher'),
  CsiVolumePlugin: Symbol.for('kubelet-ts.CsiVolumePlugin'),
  StatsSource: Symbol.for('kubelet-ts.StatsSource'),
  ContainerLogManager: Symbol.for('kubelet-ts.ContainerLogManager'),
  /** Go: cm.ContainerManager (--cgroups-per-qos); undefined without pod cgroups. */
  ContainerManager: Symbol.for('kubelet-ts.ContainerManager'),
  /** The systemd cgroup driver's connection to systemd on the system bus (undefined on cgroupfs). */
  SystemdUnits: Symbol.for('kubelet-ts.SystemdUnits'),
  /** Go: eviction.Manager. */
  EvictionManager: Symbol.for('kubelet-ts.EvictionManager'),
  /** Go: nodeshutdown.Manager (GracefulNodeShutdown), and what tells it of a shutdown (logind, else a signal). */
  NodeShutdownManager: Symbol.for('kubelet-ts.NodeShutdownManager'),
  ShutdownTrigger: Symbol.for('kubelet-ts.ShutdownTrigger'),
  /** Go: devicemanager.ManagerImpl on <root-dir>/device-plugins; undefined in --runonce mode. */
  DeviceManager: Symbol.for('kubelet-ts.DeviceManager'),
  /** Go: the pod resources API v1 server on <root-dir>/pod-resources/kubelet.sock; undefined in --runonce mode. */
  PodResourcesServer: Symbol.for('kubelet-ts.PodResourcesServer'),
  /**
   * The node's machine facts (Go: cadvisor's MachineInfo) for its status and /spec, and its capacity (CPUs, memory,
   * pids) for allocatable, eviction and pod cgroups: read from the host by default; a fleet node says its own.
   */
  MachineInfo: Symbol.for('kubelet-ts.MachineInfo'),
  NodeCapacity: Symbol.for('kubelet-ts.NodeCapacity'),
  /** Extra NodeStatusManager options over the kubelet's (a fleet node's given InternalIPs); default none. */
  NodeStatusOptions: Symbol.for('kubelet-ts.NodeStatusOptions'),
  /** Runs the probes (prober's ContainerProber); undefined: the prober's own exec/http/tcp/grpc probes. */
  ContainerProber: Symbol.for('kubelet-ts.ContainerProber'),
  /** Reads the node's and pods' cgroups for /stats/summary; undefined: the host's cgroup filesystem. */
  CgroupReader: Symbol.for('kubelet-ts.CgroupReader'),
  Kubelet: Symbol.for('kubelet-ts.Kubelet'),
} as const;

/** Whether this kubelet runs its pods on the embedded local runtime (as host processes, without isolation). */
export function usesEmbeddedRuntime(config: KubeletConfig): boolean {
  return config.containerRuntimeEndpoint === LOCAL_RUNTIME_ENDPOINT || config.imageServiceEndpoint === LOCAL_RUNTIME_ENDPOINT;
}

/**
 * --register-with-taints, plus the embedded runtime's NoSchedule taint when the node runs its pods as host processes:
 * only pods that tolerate it (and static pods) land on such a node, never whatever the scheduler or a DaemonSet sends.
 */
export function registrationTaints(config: KubeletConfig): string {
  if (!usesEmbeddedRuntime(config)) return config.registerWithTaints;
  const key = EMBEDDED_RUNTIME_TAINT.split('=')[0];
  const taints = config.registerWithTaints.split(',').filter((t) => t.trim() !== '');
  if (!taints.some((t) => t.trim().split(/[=:]/)[0] === key)) taints.push(EMBEDDED_RUNTIME_TAINT);
  return taints.join(',');
}

/** The CRI endpoint the clients dial: the configured one, or the embedded runtime's socket. */
export function runtimeEndpoint(config: KubeletConfig, endpoint = config.containerRuntimeEndpoint): string {
  return endpoint === LOCAL_RUNTIME_ENDPOINT ? `unix://${localRuntimePaths(config).socketPath}` : endpoint;
}

/** Standalone mode's node client: the Node is only computed locally, and any call to an API server is a bug. */
const NO_API_SERVER = new Proxy({} as KubeClient, {
  get: (_target, method) => async () => {
    throw new Error(`standalone mode: no API server for ${String(method)}`);
  },
});

const singleton = <T>(factory: (c: DependencyContainer) => T) => ({ useFactory: instanceCachingFactory<T>(factory) });

/** Registers the default KubeletDeps for a config (Go: NewMainKubelet's dependencies). */
export function registerKubeletDeps(c: DependencyContainer, config: KubeletConfig): void {
  c.register(Tokens.Config, { useValue: config });
  c.register<Clock>(Tokens.Clock, { useValue: realClock });
  c.register<MachineInfoProvider>(Tokens.MachineInfo, singleton(() => cachedMachineInfo(config.rootDir)));
  c.register<NodeCapacity>(Tokens.NodeCapacity, singleton(() => nodeCapacity()));
  c.register<Partial<NodeStatusManagerOptions>>(Tokens.NodeStatusOptions, { useValue: {} });
  c.register<ContainerProber | undefined>(Tokens.ContainerProber, { useFactory: () => undefined });
  c.register<CgroupReader | undefined>(Tokens.CgroupReader, { useFactory: () => undefined });
  // The verbosity can change at run time: PUT /debug/flags/v on the kubelet's port (Go: klog's setter).
  c.register<Logger>(Tokens.Logger, singleton(() => adjustableLogger((verbosity) => createLogger({ verbosity, format: config.loggingFormat, name: 'kubelet' }), config.verbosity)));
  // API server mode (--kubeconfig): the client config; undefined in standalone mode.
  c.register<KubeConfig | undefined>(
    Tokens.KubeConfig,
    singleton((c) => {
      if (!config.kubeconfig) return undefined;
      const kubeConfig = newKeepAliveKubeConfig();
      try {
        kubeConfig.loadFromFile(config.kubeconfig);
      } catch (error) {
        throw new ConfigError(`failed to load kubeconfig ${config.kubeconfig}: ${(error as Error).message}`);
      }
      // Resolved per request: the rotating client certificate, once the manager has one.
      if (config.rotateCertificates) kubeConfig.clientCertificate = () => c.resolve<CertificateManager | undefined>(Tokens.ClientCertificateManager)?.current();
      return kubeConfig;
    }),
  );
  registerCertificateDeps(c, config);
  // The CoreV1Api of the status manager and the event recorder; client-node loads with their first request.
  const coreApi = (c: DependencyContainer) => {
    const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
    return kubeConfig ? deferredApiClient(kubeConfig, (k) => k.CoreV1Api) : undefined;
  };
  // Events go to the API server when there is one, and are logged otherwise.
  c.register<KubeletEventRecorder>(
    Tokens.EventRecorder,
    singleton(
      (c) =>
        new KubeletEventRecorder({
          kubeClient: coreApi(c),
          host: config.nodeName,
          qps: config.eventQps,
          burst: config.eventBurst,
          clock: c.resolve(Tokens.Clock),
          logger: c.resolve<Logger>(Tokens.Logger),
        }),
    ),
  );
  // The node status side, built the same way for API server mode and, standalone, for the Node pods are admitted against.
  const newNodeStatusManager = (c: DependencyContainer, kubeClient: KubeConfig | KubeClient, recordEvents = true) => {
    const recorder = c.resolve<KubeletEventRecorder>(Tokens.EventRecorder);
    return new NodeStatusManager({
      nodeName: config.nodeName,
      hostname: config.nodeName,
      kubeClient,
      runtimeService: c.resolve(Tokens.RuntimeService),
      imageService: c.resolve(Tokens.ImageService),
      clock: c.resolve(Tokens.Clock),
      logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'node-status' }),
      // Resolved per check: the kubelet (and its PLEG) exist by the time the first status is computed.
      healthChecks: () => {
        const state = c.resolve<Kubelet>(Tokens.Kubelet).runtimeState;
        const shutdown = c.resolve<NodeShutdownManager | undefined>(Tokens.NodeShutdownManager)?.shutdownStatus();
        return { runtimeErrors: state.runtimeErrors(), networkErrors: state.networkErrors(), shutdownErrors: shutdown ? [shutdown] : [] };
      },
      volumesInUse: {
        synced: () => c.resolve<Kubelet>(Tokens.Kubelet).volumeManager?.reconcilerStatesHasBeenSynced() ?? false,
        list: () => c.resolve<Kubelet>(Tokens.Kubelet).volumeManager?.getVolumesInUse() ?? [],
      },
      // Go: the node's images come from the image manager's cache, refreshed by image GC's detection.
      imageList: async () => c.resolve<Partial<Pick<ImageGCManager, 'getImageList'>> | undefined>(Tokens.ImageGC)?.getImageList?.() ?? [],
      updatePodCIDR: (cidr) => c.resolve<Kubelet>(Tokens.Kubelet).updatePodCIDR(cidr),
      recordEvent: recordEvents ? (event) => recorder.event(nodeReference(config.nodeName), event.type, event.reason, event.message) : undefined,
      registerNode: config.registerNode,
      nodeLabels: config.nodeLabels,
      registerWithTaints: registrationTaints(config),
      registerSchedulable: config.registerSchedulable,
      nodeIP: config.nodeIP,
      kubeletPort: config.port,
      maxPods: config.maxPods,
      kubeReserved: config.kubeReserved,
      systemReserved: config.systemReserved,
      evictionHard: config.evictionHard,
      // Go: the eviction manager's conditions (MemoryPressure, DiskPressure, PIDPressure).
      pressure: {
        memory: () => c.resolve<EvictionManager>(Tokens.EvictionManager).isUnderMemoryPressure(),
        disk: () => c.resolve<EvictionManager>(Tokens.EvictionManager).isUnderDiskPressure(),
        pid: () => c.resolve<EvictionManager>(Tokens.EvictionManager).isUnderPIDPressure(),
      },
      nodeStatusUpdateFrequencyMs: config.nodeStatusUpdateFrequencyMs,
      nodeStatusReportFrequencyMs: config.nodeStatusReportFrequencyMs,
      rootDir: config.rootDir,
      machineInfo: c.resolve<MachineInfoProvider>(Tokens.MachineInfo),
      kubeletVersion: KUBELET_VERSION,
      // Go: GetDevicePluginResourceCapacity, and ShouldResetExtendedResourceCapacity (no device checkpoint).
      devicePluginResourceCapacity: () => c.resolve<DeviceManager | undefined>(Tokens.DeviceManager)?.getCapacity() ?? { capacity: {}, allocatable: {}, removed: [] },
      shouldResetExtendedResourceCapacity: () => c.resolve<DeviceManager | undefined>(Tokens.DeviceManager)?.shouldResetExtendedResourceCapacity() ?? false,
      ...c.resolve<Partial<NodeStatusManagerOptions>>(Tokens.NodeStatusOptions),
    });
  };
  c.register<NodeStatusManager | undefined>(
    Tokens.NodeStatus,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      return kubeConfig ? newNodeStatusManager(c, kubeConfig) : undefined;
    }),
  );
  // Go: getNodeAnyWay, for pod admission and the host IPs: the API server's Node once synced, else the Node as the
  // kubelet would register it (computed locally, at most once per node status update period: it resolves addresses
  // and reads machine facts).
  c.register<() => Promise<V1Node | undefined>>(
    Tokens.NodeAnyWay,
    singleton((c) => {
      const apiNodeStatus = c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus);
      const local = apiNodeStatus ?? newNodeStatusManager(c, NO_API_SERVER, false);
      const clock = c.resolve<Clock>(Tokens.Clock);
      let cached: { at: number; node: Promise<V1Node> } | undefined;
      return async () => {
        const synced = apiNodeStatus?.lastNode();
        if (synced) return synced;
        if (!cached || clock.since(cached.at) >= config.nodeStatusUpdateFrequencyMs) cached = { at: clock.now(), node: local.initialNode() };
        return cached.node;
      };
    }),
  );
  c.register<NodeLeaseController | undefined>(
    Tokens.NodeLease,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig) return undefined;
      return new NodeLeaseController({
        nodeName: config.nodeName,
        kubeClient: kubeConfig,
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'node-lease' }),
      });
    }),
  );
  c.register<KubeletStatusManager | undefined>(
    Tokens.StatusManager,
    singleton((c) => {
      const kubeClient = coreApi(c);
      if (!kubeClient) return undefined;
      const kubelet = () => c.resolve<Kubelet>(Tokens.Kubelet);
      return new KubeletStatusManager({
        kubeClient,
        podManager: {
          getPodByUid: (uid: string) => kubelet().podManager.getPodByUid(uid),
          getMirrorPodByPod: (pod) => kubelet().podManager.getMirrorPodByPod(pod),
          translatePodUID: (uid: string) => kubelet().podManager.translatePodUID(uid),
        },
        podDeletionSafety: { podCouldHaveRunningContainers: (uid: string) => kubelet().podWorkers.couldHaveRunningContainers(uid) },
        qps: config.kubeApiQps,
        burst: config.kubeApiBurst,
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'status-manager' }),
      });
    }),
  );
  c.register(
    Tokens.MirrorPods,
    singleton((c) => {
      const kubeClient = coreApi(c);
      if (!kubeClient) return undefined;
      const logger = c.resolve<Logger>(Tokens.Logger);
      // Mirror pods are owned by the Node object: its uid is known once the node is registered.
      const getNode = () => {
        const node = c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus)?.lastNode();
        return node?.metadata?.uid ? { name: node.metadata.name!, uid: node.metadata.uid, deletionTimestamp: node.metadata.deletionTimestamp } : undefined;
      };
      const client = new BasicMirrorClient({ kubeClient, getNode, logger });
      return {
        sync: (staticPod: V1Pod, mirrorPod: V1Pod | undefined) => syncMirrorPod(client, staticPod, mirrorPod, { getNode, logger }),
        deleteOrphans: (fullNames: string[], isPodRunning: (fullName: string) => boolean) => deleteOrphanedMirrorPods(client, fullNames, isPodRunning, logger),
      };
    }),
  );
  c.register<NodeHostIPs>(
    Tokens.HostIPs,
    singleton(
      (c) =>
        new NodeHostIPs({
          getNode: c.resolve(Tokens.NodeAnyWay),
          lastNode: () => c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus)?.lastNode(),
          logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'host-ips' }),
        }),
    ),
  );
  c.register<DnsConfigurer>(
    Tokens.DnsConfigurer,
    singleton(
      (c) =>
        new DnsConfigurer({
          clusterDNS: config.clusterDNS,
          clusterDomain: config.clusterDomain,
          resolvConf: config.resolvConf,
          nodeRef: nodeReference(config.nodeName),
          recorder: c.resolve(Tokens.EventRecorder),
          logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'dns' }),
        }),
    ),
  );
  // API server mode: the Services of the cluster for pods' service environment variables (Go: serviceLister).
  c.register<ServiceLister | undefined>(
    Tokens.ServiceLister,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig) return undefined;
      return new ServiceLister({ kubeConfig, clock: c.resolve(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'service-lister' }) });
    }),
  );
  // API server mode: the RuntimeClass cache for pods' runtimeClassName (Go: runtimeclass.NewManager when there is a kubeClient).
  c.register<RuntimeClassManager | undefined>(
    Tokens.RuntimeClassManager,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig) return undefined;
      return new RuntimeClassManager({ kubeConfig, clock: c.resolve(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'runtimeclass' }) });
    }),
  );
  c.register<LocalRuntime | undefined>(
    Tokens.LocalRuntime,
    singleton((c) => {
      if (!usesEmbeddedRuntime(config)) return undefined;
      const paths = localRuntimePaths(config);
      return new LocalRuntime({ ...paths, mode: 'process', clock: c.resolve(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'local-runtime' }) });
    }),
  );
  c.register<EventLoopMonitor>(
    Tokens.EventLoopMonitor,
    singleton((c) => new EventLoopMonitor({ clock: c.resolve<Clock>(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'eventloop' }) })),
  );
  c.register<KubeletMetrics>(
    Tokens.Metrics,
    singleton((c) => createKubeletMetrics(config.nodeName, c.resolve<KubeConfig | undefined>(Tokens.KubeConfig), c.resolve<EventLoopMonitor>(Tokens.EventLoopMonitor))),
  );
  c.register<RuntimeService>(
    Tokens.CriRuntimeService,
    singleton(() => new RemoteRuntimeService({ endpoint: runtimeEndpoint(config), timeoutMs: config.runtimeRequestTimeoutMs })),
  );
  c.register<ImageService>(
    Tokens.CriImageService,
    singleton(() => new RemoteImageService({ endpoint: runtimeEndpoint(config, config.imageServiceEndpoint), timeoutMs: config.runtimeRequestTimeoutMs })),
  );
  // Go: kuberuntime's instrumentedRuntimeService / instrumentedImageManagerService (kubelet_runtime_operations_*).
  c.register<RuntimeService>(Tokens.RuntimeService, singleton((c) => instrumentRuntimeService(c.resolve<RuntimeService>(Tokens.CriRuntimeService), c.resolve<KubeletMetrics>(Tokens.Metrics))));
  c.register<ImageService>(Tokens.ImageService, singleton((c) => instrumentImageService(c.resolve<ImageService>(Tokens.CriImageService), c.resolve<KubeletMetrics>(Tokens.Metrics))));
  c.register<PodCache>(Tokens.PodCache, singleton((c) => new PodCache({ clock: c.resolve(Tokens.Clock) })));
  c.register<GenericRuntimeManager>(
    Tokens.ContainerRuntime,
    singleton(
      (c) =>
        new GenericRuntimeManager({
          runtimeService: c.resolve(Tokens.RuntimeService),
          imageService: c.resolve(Tokens.ImageService),
          clock: c.resolve(Tokens.Clock),
          logger: c.resolve(Tokens.Logger),
          podLogsRootDirectory: config.podLogsDir,
          kubeletRootDirectory: config.rootDir,
          recorder: c.resolve(Tokens.EventRecorder),
          hostIPs: () => c.resolve<NodeHostIPs>(Tokens.HostIPs).get(),
          dnsConfigFor: (pod) => c.resolve<DnsConfigurer>(Tokens.DnsConfigurer).getPodDNS(pod),
          clusterDomain: config.clusterDomain,
          services: c.resolve<ServiceLister | undefined>(Tokens.ServiceLister),
          // Go: the RuntimeClass manager's handler for RunPodSandbox. Standalone there is none to ask: a pod naming a
          // class fails rather than run on another handler than it asked for.
          runtimeHandler: c.resolve<RuntimeClassManager | undefined>(Tokens.RuntimeClassManager)?.runtimeHandlerFor ?? standaloneRuntimeHandler,
          configMapsAndSecrets: configMapAndSecretSource(c.resolve(Tokens.ConfigMapManager), c.resolve(Tokens.SecretManager)),
          // Resolved per container: the volume manager belongs to the kubelet, built after the runtime manager.
          mountsFor: (pod, container, env) => criMountsFor(c.resolve<Kubelet>(Tokens.Kubelet).volumeManager, pod, container, env),
          kubeletVersion: KUBELET_VERSION,
          // Go: with the EventedPLEG gate a pod's status comes from its sandbox's status (containers and timestamp).
          eventedPleg: config.featureGates.EventedPLEG === true,
          // Go: the pod's cgroup is its sandbox's cgroupParent (GetPodCgroupParent).
          cgroupParentFor: (pod) => c.resolve<ContainerManager | undefined>(Tokens.ContainerManager)?.podCgroupParent(pod) ?? '',
          sandboxErrorHint: (message) => cgroupDriverMismatchHint(message, config.cgroupDriver),
          // Go: GenerateRunContainerOptions' device options (containerManager.GetResources).
          deviceRunContainerOptionsFor: async (pod, container) =>
            withBlockVolumeDevices(
              await c.resolve<DeviceManager | undefined>(Tokens.DeviceManager)?.getDeviceRunContainerOptions(pod, container),
              c.resolve<Kubelet>(Tokens.Kubelet).volumeManager,
              pod,
              container,
              c.resolve<Logger>(Tokens.Logger),
            ),
        }),
    ),
  );
  c.register<PodLifecycleEventGenerator>(
    Tokens.PLEG,
    singleton((c) => {
      const deps = { runtime: c.resolve<GenericRuntimeManager>(Tokens.ContainerRuntime), cache: c.resolve<PodCache>(Tokens.PodCache), clock: c.resolve<Clock>(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger) };
      const metrics = c.resolve<KubeletMetrics>(Tokens.Metrics);
      const generic = new GenericPLEG({ ...deps, ...plegMetricsHooks(metrics) });
      metrics.watchPleg({ lastRelistTime: () => generic.lastRelistTime(), droppedEvents: () => generic.droppedEvents });
      // Go: the EventedPLEG feature gate; the generic PLEG stays as its fallback and slow relist.
      if (!config.featureGates.EventedPLEG) return generic;
      return new EventedPLEG({ ...deps, runtimeService: c.resolve(Tokens.RuntimeService), genericPleg: generic });
    }),
  );
  c.register<PodSourceConfig>(
    Tokens.PodSourceConfig,
    singleton((c) =>
      makePodSourceConfig({
        nodeName: config.nodeName,
        staticPodPath: config.staticPodPath,
        fileCheckFrequencyMs: config.fileCheckFrequencyMs,
        staticPodURL: config.staticPodURL,
        staticPodURLHeader: config.staticPodURLHeader,
        httpCheckFrequencyMs: config.httpCheckFrequencyMs,
        // API server mode: pods bound to this node, once the node is registered (Go: nodeHasSynced).
        kubeConfig: c.resolve<KubeConfig | undefined>(Tokens.KubeConfig),
        nodeHasSynced: () => c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus)?.isRegistered() ?? true,
        recorder: c.resolve(Tokens.EventRecorder),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve(Tokens.Logger),
      }),
    ),
  );
  c.register<KubeletOptions['createPodWorkers']>(Tokens.PodWorkersFactory, {
    useFactory: (c: DependencyContainer) => (syncer: PodSyncer) => {
      const metrics = c.resolve<KubeletMetrics>(Tokens.Metrics);
      const pleg = c.resolve<PodLifecycleEventGenerator>(Tokens.PLEG);
      return new PodWorkers({
        syncer,
        cache: c.resolve(Tokens.PodCache),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve(Tokens.Logger),
        resyncIntervalMs: config.syncFrequencyMs,
        onSyncDuration: (operationType, durationMs) => metrics.observePodWorkerDuration(operationType, durationMs),
        refreshPodStatus: pleg instanceof EventedPLEG ? (pod) => pleg.refreshPodStatus(pod) : undefined,
      });
    },
  });
  c.register<KubeletOptions['imageGC']>(
    Tokens.ImageGC,
    singleton(
      (c) =>
        new RealImageGCManager({
          imageService: c.resolve(Tokens.ImageService),
          runtimeService: c.resolve(Tokens.RuntimeService),
          statsProvider: new CriImageFsStatsProvider({ imageService: c.resolve(Tokens.ImageService), imageFsPath: config.rootDir }),
          policy: config.imageGC,
          sandboxImage: config.podInfraContainerImage,
          nodeRef: nodeReference(config.nodeName),
          recorder: c.resolve(Tokens.EventRecorder),
          clock: c.resolve(Tokens.Clock),
          logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'image-gc' }),
        }),
    ),
  );
  c.register<(podState: PodStateProvider) => ContainerGCLoop>(Tokens.ContainerGCFactory, {
    useFactory: (c: DependencyContainer) => (podStateProvider: PodStateProvider) =>
      new ContainerGC({
        runtimeService: c.resolve(Tokens.RuntimeService),
        podStateProvider,
        policy: config.containerGC,
        podLogsRootDirectory: config.podLogsDir,
        nodeRef: nodeReference(config.nodeName),
        recorder: c.resolve(Tokens.EventRecorder),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'container-gc' }),
        // Go: cgc.manager.killContainer(nil, ...): the runtime manager restores the grace period and
        // preStop hook from the container's annotations.
        killContainer: async (container, message) => {
          const runtime = c.resolve<GenericRuntimeManager>(Tokens.ContainerRuntime);
          await runtime.killContainer(undefined, { type: runtime.type(), id: container.id }, container.name, message, 'Unknown');
        },
      }),
  });
  c.register<(getPodStatus: (uid: string) => V1PodStatus | undefined) => ProbeManagerLike>(Tokens.ProbeManagerFactory, {
    useFactory: (c: DependencyContainer) => (getPodStatus: (uid: string) => V1PodStatus | undefined) => {
      const probes = new ProbeManager({
        getPodStatus,
        runner: c.resolve(Tokens.RuntimeService),
        prober: c.resolve<ContainerProber | undefined>(Tokens.ContainerProber),
        recorder: c.resolve(Tokens.EventRecorder),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'prober' }),
        kubeletVersion: KUBELET_VERSION,
        ...probeMetricsHooks(c.resolve<KubeletMetrics>(Tokens.Metrics)),
      });
      // The runtime manager restarts containers whose liveness or startup probe failed.
      const runtime = c.resolve<{ setProbeResults?: GenericRuntimeManager['setProbeResults'] }>(Tokens.ContainerRuntime);
      runtime.setProbeResults?.({ liveness: probes.livenessManager.lookup, startup: probes.startupManager.lookup });
      return probes;
    },
  });
  // Volumes (Go: the volume plugin manager, the secret/configMap/token managers and the volume manager).
  c.register<Mounter>(Tokens.Mounter, singleton(() => new SystemMounter()));
  c.register<ConfigMapManager | undefined>(
    Tokens.ConfigMapManager,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      return kubeConfig && createConfigMapManager(kubeConfig, { clock: c.resolve(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger) });
    }),
  );
  c.register<SecretManager | undefined>(
    Tokens.SecretManager,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      return kubeConfig && createSecretManager(kubeConfig, { clock: c.resolve(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger) });
    }),
  );
  c.register<TokenManager | undefined>(
    Tokens.TokenManager,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig) return undefined;
      return new TokenManager({
        requestToken: createTokenRequester(kubeConfig),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'token-manager' }),
      });
    }),
  );
  c.register<NonNullable<KubeletOptions['createVolumeManager']>>(Tokens.VolumeManagerFactory, {
    useFactory: (c: DependencyContainer) => (pods, podState) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      const configMaps = c.resolve<ConfigMapManager | undefined>(Tokens.ConfigMapManager);
      const secrets = c.resolve<SecretManager | undefined>(Tokens.SecretManager);
      const tokens = c.resolve<TokenManager | undefined>(Tokens.TokenManager);
      const manager = new KubeletVolumeManager({
        podsDir: join(config.rootDir, 'pods'),
        nodeName: config.nodeName,
        plugins: [...defaultVolumePlugins(), c.resolve<VolumePlugin>(Tokens.CsiVolumePlugin)],
        mounter: c.resolve(Tokens.Mounter),
        pods,
        podState,
        configMaps,
        secrets,
        tokens,
        persistentVolumes: kubeConfig && createPersistentVolumeGetter(kubeConfig),
        node: {
          allocatableMilliCpu: c.resolve<NodeCapacity>(Tokens.NodeCapacity).milliCpu,
          allocatableMemoryBytes: c.resolve<NodeCapacity>(Tokens.NodeCapacity).memoryBytes,
          hostIPs: () => c.resolve<NodeHostIPs>(Tokens.HostIPs).get(),
        },
        // Go: the kubelet's sourcesReady: the sources' pods are in the pod manager, not only in pod-config.
        sourcesReady: () => c.resolve<Kubelet>(Tokens.Kubelet).sourcesReady(),
        genericEphemeralVolumes: config.featureGates.GenericEphemeralVolume ?? true,
        onOperationComplete: volumeMetricsHook(c.resolve<KubeletMetrics>(Tokens.Metrics)),
        recorder: c.resolve(Tokens.EventRecorder),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'volume-manager' }),
      });
      // A referenced object that changes reaches the pods' files at once, not at their next periodic sync.
      configMaps?.onChange((namespace, name) => manager.remountPodsReferencing((pod) => referencesObject(pod, 'configmap', namespace, name)));
      secrets?.onChange((namespace, name) => manager.remountPodsReferencing((pod) => referencesObject(pod, 'secret', namespace, name)));
      return manager;
    },
  });
  c.register<SystemdUnitManager | undefined>(
    Tokens.SystemdUnits,
    singleton((c) => {
      if (config.cgroupDriver !== 'systemd') return undefined;
      // Go: libcontainer's systemd manager on the system bus ($DBUS_SYSTEM_BUS_ADDRESS or /run/dbus/system_bus_socket).
      return new SystemdDbusUnitManager({ clock: c.resolve(Tokens.Clock), logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'systemd' }) });
    }),
  );
  c.register<ContainerManager | undefined>(
    Tokens.ContainerManager,
    singleton((c) => {
      if (!config.cgroupsPerQOS) return undefined;
      return new ContainerManager({
        cgroupsPerQOS: true,
        cgroupRoot: config.cgroupRoot,
        cgroupDriver: config.cgroupDriver,
        systemdUnits: c.resolve<SystemdUnitManager | undefined>(Tokens.SystemdUnits),
        enforceNodeAllocatable: config.enforceNodeAllocatable,
        systemReservedCgroup: config.systemReservedCgroup || undefined,
        kubeReservedCgroup: config.kubeReservedCgroup || undefined,
        systemReserved: resourceMap(config.systemReserved),
        kubeReserved: resourceMap(config.kubeReserved),
        capacity: c.resolve<NodeCapacity>(Tokens.NodeCapacity),
        cpuCfsQuota: config.cpuCFSQuota,
        cpuCfsQuotaPeriodUs: config.cpuCFSQuotaPeriodMs * 1000,
        podPidsLimit: config.podPidsLimit,
        // As Go: differing kernel tunables (vm.overcommit_memory=1, kernel.panic=10, ...) are set, unless
        // --protect-kernel-defaults, which refuses to start instead.
        kernelTunables: { behavior: config.protectKernelDefaults ? 'error' : 'modify' },
        recorder: c.resolve(Tokens.EventRecorder),
        nodeRef: nodeReference(config.nodeName),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'container-manager' }),
      });
    }),
  );
  c.register<EvictionManager>(
    Tokens.EvictionManager,
    singleton((c) => {
      const kubelet = () => c.resolve<Kubelet>(Tokens.Kubelet);
      const containerManager = c.resolve<ContainerManager | undefined>(Tokens.ContainerManager);
      const capacity = c.resolve<NodeCapacity>(Tokens.NodeCapacity);
      return new EvictionManager({
        summaryProvider: c.resolve<SummarySource>(Tokens.StatsProvider),
        thresholds: evictionThresholds(config),
        maxPodGracePeriodSeconds: config.eviction.maxPodGracePeriodSeconds,
        pressureTransitionPeriodMs: config.eviction.pressureTransitionPeriodMs,
        capacity: () => ({ memoryBytes: capacity.memoryBytes, allocatableMemoryBytes: containerManager?.nodeAllocatableAbsolute().memoryBytes }),
        activePods: () => kubelet().getActivePods(),
        killPod: (pod, gracePeriodOverrideSeconds, statusFn) => kubelet().killPodForEviction(pod, gracePeriodOverrideSeconds, statusFn),
        podCleanedUp: (pod) => kubelet().podResourcesAreReclaimed(pod),
        imageGC: c.resolve<ImageGCManager>(Tokens.ImageGC),
        containerGC: { deleteAllUnusedContainers: () => kubelet().containerGC?.deleteAllUnusedContainers() ?? Promise.resolve() },
        recorder: c.resolve(Tokens.EventRecorder),
        nodeRef: nodeReference(config.nodeName),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'eviction-manager' }),
      });
    }),
  );
  c.register<ShutdownTrigger>(
    Tokens.ShutdownTrigger,
    singleton((c) => defaultShutdownTrigger({ shutdownGracePeriodMs: config.shutdownGracePeriodMs, logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'node-shutdown' }) })),
  );
  c.register<NodeShutdownManager | undefined>(
    Tokens.NodeShutdownManager,
    singleton((c) => {
      // Go: the manager exists with the gate on; shutdownGracePeriod 0 leaves it idle (never watching).
      if (!config.featureGates.GracefulNodeShutdown || config.shutdownGracePeriodMs <= 0 || config.runOnce) return undefined;
      const kubelet = () => c.resolve<Kubelet>(Tokens.Kubelet);
      return new NodeShutdownManager({
        shutdownGracePeriodMs: config.shutdownGracePeriodMs,
        shutdownGracePeriodCriticalPodsMs: config.shutdownGracePeriodCriticalPodsMs,
        trigger: c.resolve<ShutdownTrigger>(Tokens.ShutdownTrigger),
        getPods: () => kubelet().getActivePods(),
        killPod: (pod, gracePeriodOverrideSeconds, statusFn) => kubelet().killPodForEviction(pod, gracePeriodOverrideSeconds, statusFn, false),
        // Go: syncNodeStatus as the shutdown starts, so the Ready condition says so at once.
        syncNodeStatus: () => c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus)?.syncNodeStatus(),
        recorder: c.resolve(Tokens.EventRecorder),
        nodeRef: nodeReference(config.nodeName),
        clock: c.resolve(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'node-shutdown' }),
      });
    }),
  );
  c.register<DeviceManager | undefined>(
    Tokens.DeviceManager,
    singleton((c) =>
      config.runOnce
        ? undefined
        : new DeviceManager({
            socketDir: join(config.rootDir, 'device-plugins'),
            clock: c.resolve(Tokens.Clock),
            logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'device-manager' }),
          }),
    ),
  );
  c.register<PodResourcesServer | undefined>(
    Tokens.PodResourcesServer,
    singleton((c) => {
      const devices = c.resolve<DeviceManager | undefined>(Tokens.DeviceManager);
      if (!devices) return undefined;
      return new PodResourcesServer({
        socketPath: podResourcesSocketPath(config.rootDir),
        // Go: the pod manager's pods.
        pods: () => c.resolve<Kubelet>(Tokens.Kubelet).podManager.getPods().filter((pod) => !isMirrorPod(pod)),
        devices,
        getEnabled: config.featureGates.KubeletPodResourcesGet ?? false,
        getAllocatableEnabled: config.featureGates.KubeletPodResourcesGetAllocatable ?? true,
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'pod-resources' }),
      });
    }),
  );
  registerServerDeps(c, config);
  registerCsiDeps(c, config);
  c.register<Partial<KubeletOptions>>(Tokens.KubeletOptions, { useValue: {} });
  c.register<Kubelet>(
    Tokens.Kubelet,
    singleton(
      (c) =>
        new Kubelet({
          nodeName: config.nodeName,
          rootDir: config.rootDir,
          runtime: c.resolve(Tokens.ContainerRuntime),
          podCache: c.resolve(Tokens.PodCache),
          pleg: c.resolve(Tokens.PLEG),
          podSource: c.resolve<PodSourceConfig>(Tokens.PodSourceConfig).podConfig,
          createPodWorkers: c.resolve(Tokens.PodWorkersFactory),
          imageGC: c.resolve(Tokens.ImageGC),
          createContainerGC: c.resolve(Tokens.ContainerGCFactory),
          createProbeManager: c.resolve(Tokens.ProbeManagerFactory),
          createVolumeManager: c.resolve(Tokens.VolumeManagerFactory),
          podObjectRegistries: [c.resolve<SecretManager | undefined>(Tokens.SecretManager), c.resolve<ConfigMapManager | undefined>(Tokens.ConfigMapManager)].filter((m) => m !== undefined),
          getPullSecrets: pullSecretsFor(c.resolve<SecretManager | undefined>(Tokens.SecretManager), c.resolve<Logger>(Tokens.Logger)),
          statusManager: c.resolve(Tokens.StatusManager),
          mirrorPods: c.resolve(Tokens.MirrorPods),
          hostIPs: () => c.resolve<NodeHostIPs>(Tokens.HostIPs).get(),
          recorder: c.resolve(Tokens.EventRecorder),
          getNode: c.resolve(Tokens.NodeAnyWay),
          allowedUnsafeSysctls: config.allowedUnsafeSysctls,
          containerManager: c.resolve<ContainerManager | undefined>(Tokens.ContainerManager),
          evictionManager: c.resolve<EvictionManager>(Tokens.EvictionManager),
          deviceManager: c.resolve<DeviceManager | undefined>(Tokens.DeviceManager),
          extraAdmitHandlers: [c.resolve<NodeShutdownManager | undefined>(Tokens.NodeShutdownManager)].filter((h) => h !== undefined),
          metrics: c.resolve<KubeletMetrics>(Tokens.Metrics),
          clock: c.resolve(Tokens.Clock),
          logger: c.resolve(Tokens.Logger),
          ...c.resolve<Partial<KubeletOptions>>(Tokens.KubeletOptions),
        }),
    ),
  );
}

/** "cpu=200m,memory=1Gi" (--kube-reserved, --system-reserved) as a map. */
function resourceMap(list: string): Record<string, string> {
  const map: Record<string, string> = {};
  for (const pair of list.split(',').filter((p) => p.trim() !== '')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new ConfigError(`invalid resource reservation ${JSON.stringify(pair)}: expected name=quantity`);
    map[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return map;
}

/** Go: eviction.ParseThresholdConfig over the kubelet's eviction settings; errors name the setting. */
export function evictionThresholds(config: KubeletConfig) {
  try {
    return parseThresholdConfig(config.enforceNodeAllocatable, config.eviction.hard, config.eviction.soft, config.eviction.softGracePeriod, config.eviction.minimumReclaim);
  } catch (error) {
    throw new ConfigError(`invalid eviction configuration: ${(error as Error).message}`);
  }
}
