import { mkdir, writeFile } from 'node:fs/promises';
import type { DependencyContainer } from 'tsyringe';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { loadClientNode, nodeReference, type Clock, type EventLoopMonitor, type Logger } from '@kubelet-ts/core';
import type { RemoteImageService, RemoteRuntimeService, RuntimeService } from '@kubelet-ts/cri-client';
import type { SystemdUnitManager } from '@kubelet-ts/container-manager';
import type { LocalRuntime } from '@kubelet-ts/local-runtime';
import type { PodSourceConfig } from '@kubelet-ts/pod-config';
import type { KubeletConfig } from './config.js';
import { Tokens, runtimeEndpoint } from './container.js';
import { EMBEDDED_RUNTIME_TAINT, LOCAL_RUNTIME_ENDPOINT } from './flags.js';
import { HealthzServer, type HealthzCheck, type KubeletMetrics } from '@kubelet-ts/server';
import type { LogManager } from '@kubelet-ts/container-logs';
import { startKubeletServers, type RunningServers } from './kubelet-server.js';
import { cgroupDriverFromRuntime } from './cgroup-driver.js';
import type { NodeHostIPs } from './host-ips.js';
import type { ServiceLister } from './service-lister.js';
import type { DnsConfigurer, RuntimeClassManager } from '@kubelet-ts/runtime-manager';
import type { ConfigMapManager, Mounter, SecretManager, TokenManager } from '@kubelet-ts/volume-manager';
import type { Kubelet, KubeletRuntime } from './kubelet.js';
import { runOnce, type RunPodResult } from './run-once.js';
import type { KubeletEventRecorder, KubeletStatusManager } from '@kubelet-ts/status-manager';
import type { NodeLeaseController, NodeStatusManager } from '@kubelet-ts/node-status';
import { KUBELET_VERSION } from './version.js';
import { pluginsRegistryDir, type NodeInfoManager, type PluginWatcher } from '@kubelet-ts/csi';
import type { PodResourcesServer } from '@kubelet-ts/device-manager';
import type { CertificateManager } from '@kubelet-ts/certificate';
import { bootstrapClientCertificate } from './certificates.js';
import type { NodeShutdownManager } from '@kubelet-ts/node-shutdown';

/**
 * Go: oomAdjuster.ApplyOOMScoreAdj(0, --oom-score-adj) for the kubelet's own process. A kernel that refuses it (no
 * CAP_SYS_RESOURCE for a negative value) is reported and the kubelet goes on, as Go does.
 */
export async function applyOomScoreAdj(value: number, logger: Logger, path = '/proc/self/oom_score_adj'): Promise<boolean> {
  try {
    await writeFile(path, `${value}`);
    logger.v(2).info('Applied oom_score_adj to the kubelet', { oomScoreAdj: value });
    return true;
  } catch (error) {
    logger.info('Failed to ApplyOOMScoreAdj', { err: (error as Error).message, oomScoreAdj: value });
    return false;
  }
}

export interface RunningKubelet {
  kubelet: Kubelet;
  /** The healthz port actually bound (useful with port 0), or undefined when disabled. */
  healthzPort?: number;
  /** The kubelet server's secure and read-only ports actually bound, when they run. */
  port?: number;
  readOnlyPort?: number;
  /** Resolves when the kubelet has stopped; rejects if start-up or runOnce failed. */
  done: Promise<RunPodResult[] | void>;
}

/** A one-line summary of a pod's status, as the binary prints it. */
export function describePodStatus(pod: V1Pod, status: V1PodStatus): string {
  const containers = [...(status.initContainerStatuses ?? []).map((c) => ({ ...c, init: true })), ...(status.containerStatuses ?? []).map((c) => ({ ...c, init: false }))]
    .map((c) => {
      const state = c.state?.running
        ? 'running'
        : c.state?.terminated
          ? `terminated(${c.state.terminated.reason ?? ''} exit=${c.state.terminated.exitCode})`
          : `waiting(${c.state?.waiting?.reason ?? ''})`;
      return `${c.init ? 'init:' : ''}${c.name}=${state}${c.ready ? ',ready' : ''}${c.restartCount ? `,restarts=${c.restartCount}` : ''}`;
    })
    .join(' ');
  return `pod ${pod.metadata?.namespace}/${pod.metadata?.name} ${status.phase}${status.podIP ? ` ip=${status.podIP}` : ''} ${containers}`;
}

/**
 * Go: RunKubelet + startKubelet: starts the embedded runtime when configured, the healthz server and
 * the kubelet (or runOnce), and tears everything down when the signal aborts.
 */
export async function startKubelet(c: DependencyContainer, signal: AbortSignal): Promise<RunningKubelet> {
  const config = c.resolve<KubeletConfig>(Tokens.Config);
  const logger = c.resolve<Logger>(Tokens.Logger);
  const clock = c.resolve<Clock>(Tokens.Clock);
  logger.info('Starting kubelet', {
    version: KUBELET_VERSION,
    nodeName: config.nodeName,
    containerRuntimeEndpoint: config.containerRuntimeEndpoint,
    staticPodPath: config.staticPodPath ?? '',
    staticPodURL: config.staticPodURL ?? '',
  });
  // What resolving the configuration found (unknown config fields, feature gates kubelet-ts does not implement).
  for (const warning of config.warnings ?? []) logger.warn(warning.msg, warning.kv);
  await applyOomScoreAdj(config.oomScoreAdj, logger);
  await mkdir(config.rootDir, { recursive: true });
  await mkdir(config.podLogsDir, { recursive: true });
  // Go: TLS bootstrap comes first: nothing may talk to the API server before the kubeconfig exists.
  await bootstrapClientCertificate(config, clock, logger, signal);
  // The API clients are made synchronously by the container's factories; client-node is loaded here, once, and
  // only in API server mode (a standalone kubelet never pays its ~75 MiB).
  if (config.kubeconfig) await loadClientNode();

  const local = c.resolve<LocalRuntime | undefined>(Tokens.LocalRuntime);
  if (local) {
    await local.start();
    logger.info('Started the embedded local runtime: containers run as host processes without isolation', { endpoint: runtimeEndpoint(config) });
  }
  // Go (KubeletCgroupDriverFromCRI): the runtime's cgroup driver wins over the configuration, when the runtime says.
  config.cgroupDriver = await cgroupDriverFromRuntime(c.resolve<RuntimeService>(Tokens.RuntimeService), config.cgroupDriver, { clock, logger, signal });
  // The node's IPs for pod statuses until the API server's Node has them (and standalone, for good).
  void c.resolve<NodeHostIPs>(Tokens.HostIPs).detect();
  const sources = c.resolve<PodSourceConfig>(Tokens.PodSourceConfig);
  const kubelet = c.resolve<Kubelet>(Tokens.Kubelet);
  const recorder = c.resolve<KubeletEventRecorder>(Tokens.EventRecorder);
  // API server mode (Go: Kubelet.Run): register and report the node, renew its lease, sync pod statuses.
  const apiServerParts = config.runOnce
    ? []
    : [
        c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus),
        c.resolve<NodeLeaseController | undefined>(Tokens.NodeLease),
        c.resolve<KubeletStatusManager | undefined>(Tokens.StatusManager),
        c.resolve<ServiceLister | undefined>(Tokens.ServiceLister),
        c.resolve<RuntimeClassManager | undefined>(Tokens.RuntimeClassManager),
        c.resolve<TokenManager | undefined>(Tokens.TokenManager),
        c.resolve<CertificateManager | undefined>(Tokens.ClientCertificateManager),
        c.resolve<CertificateManager | undefined>(Tokens.ServerCertificateManager),
      ].filter(
        (part): part is NonNullable<typeof part> => part !== undefined,
      );
  for (const part of apiServerParts) part.start();
  recorder.event(nodeReference(config.nodeName), 'Normal', 'Starting', 'Starting kubelet.');
  if (local && config.kubeconfig) {
    // The node joins a cluster but isolates nothing: say so where an operator looks (the log and the node's events).
    const message =
      `The node runs its pods on the embedded local runtime (--container-runtime-endpoint=${LOCAL_RUNTIME_ENDPOINT}): containers are host processes ` +
      `without isolation, images are not applied and limits are not enforced. The node is registered with the taint ${EMBEDDED_RUNTIME_TAINT}; ` +
      `a node registered before keeps its taints: add it with kubectl taint nodes ${config.nodeName} ${EMBEDDED_RUNTIME_TAINT}`;
    logger.warn(message);
    recorder.event(nodeReference(config.nodeName), 'Warning', 'EmbeddedRuntime', message);
  }

  // The process's event loop: a stall over 10 s fails the `eventloop` healthz check for a minute (as Go's PLEG check
  // fails `syncloop`'s sibling for a relist older than 3 min) and is logged once. It does not touch the node's Ready
  // condition: a loop blocked long enough to matter already stops the lease and status updates, and the node
  // lifecycle controller marks the node Unknown by itself; an ended stall must not taint the node NoExecute.
  // The monitor runs while any kubelet of the process runs (a fleet's nodes share it).
  const eventLoop = config.runOnce ? undefined : c.resolve<EventLoopMonitor>(Tokens.EventLoopMonitor);
  const eventLoopHold = new AbortController();
  eventLoop?.start(AbortSignal.any([signal, eventLoopHold.signal]));
  const healthChecks: HealthzCheck[] = [
    { name: 'ping', check: () => undefined },
    { name: 'log', check: () => undefined },
    { name: 'syncloop', check: () => kubelet.syncLoopHealthy() },
    ...(eventLoop ? [{ name: 'eventloop', check: () => eventLoop.check() }] : []),
  ];
  let healthz: HealthzServer | undefined;
  let healthzPort: number | undefined;
  // As the Go kubelet: port 0 disables the healthz server.
  if (config.healthzPort > 0 && !config.runOnce) {
    healthz = new HealthzServer(healthChecks, { port: config.healthzPort, address: config.healthzBindAddress });
    try {
      healthzPort = await healthz.start();
      logger.info('Started healthz server', { address: `${config.healthzBindAddress}:${healthzPort}` });
    } catch (error) {
      logger.error('Failed to start healthz server', error, { port: config.healthzPort });
      healthz = undefined;
    }
  }

  // Go: the kubelet server (10250) and the read-only server; the container log manager rotates what they serve.
  let servers: RunningServers | undefined;
  const logManager = config.runOnce ? undefined : c.resolve<LogManager | undefined>(Tokens.ContainerLogManager);
  if (!config.runOnce) {
    try {
      servers = await startKubeletServers(c, kubelet, healthChecks);
    } catch (error) {
      await healthz?.stop();
      await Promise.all(apiServerParts.map((part) => part.stop()));
      eventLoopHold.abort();
      throw error;
    }
    logManager?.start();
  }
  // Go: ListenAndServePodResources, the pod resources API on <root-dir>/pod-resources/kubelet.sock.
  const podResources = config.runOnce ? undefined : c.resolve<PodResourcesServer | undefined>(Tokens.PodResourcesServer);
  try {
    await podResources?.start();
  } catch (error) {
    logger.error('Failed to start the pod resources server', error);
  }
  // Go: the plugin manager (initializeRuntimeDependentModules) registers CSI drivers from <root-dir>/plugins_registry,
  // and the CSI plugin's Init makes the node's CSINode (retried; a failure is logged, the drivers still register).
  const pluginWatcher = config.runOnce ? undefined : c.resolve<PluginWatcher>(Tokens.PluginWatcher);
  const csiNodeInfo = config.runOnce ? undefined : c.resolve<NodeInfoManager | undefined>(Tokens.CsiNodeInfo);
  const csiNodeInitialized = csiNodeInfo?.initializeCsiNode(signal).catch((error: unknown) => {
    if (!signal.aborted) logger.error('Failed to initialize CSINode', error);
  });
  try {
    await pluginWatcher?.start(signal);
  } catch (error) {
    logger.error('Failed to start the plugin manager', error, { dir: pluginsRegistryDir(config.rootDir) });
  }
  // Go: the node shutdown manager watches for a shutdown (logind, else a signal); a failure to watch is logged.
  const shutdownManager = config.runOnce ? undefined : c.resolve<NodeShutdownManager | undefined>(Tokens.NodeShutdownManager);
  const shutdownStarted = shutdownManager?.start().catch((error: unknown) => logger.error('Failed to start node shutdown manager', error));

  const teardown = async () => {
    await shutdownStarted;
    await shutdownManager?.stop();
    await Promise.all([healthz?.stop(), servers?.stop(), logManager?.stop(), podResources?.stop(), pluginWatcher?.stop()]);
    await csiNodeInitialized;
    await Promise.all(apiServerParts.map((part) => part.stop()));
    await Promise.all([c.resolve<ConfigMapManager | undefined>(Tokens.ConfigMapManager)?.stop(), c.resolve<SecretManager | undefined>(Tokens.SecretManager)?.stop()]);
    await recorder.stop();
    c.resolve<KubeletMetrics>(Tokens.Metrics).close();
    await sources.stop();
    const runtimeService = c.resolve<RemoteRuntimeService>(Tokens.RuntimeService);
    const imageService = c.resolve<RemoteImageService>(Tokens.ImageService);
    runtimeService.close?.();
    imageService.close?.();
    c.resolve<SystemdUnitManager | undefined>(Tokens.SystemdUnits)?.close();
    c.resolve<Mounter>(Tokens.Mounter).close?.(); // the mount helper process
    await local?.stop();
  };

  const done = (async () => {
    try {
      if (config.runOnce) {
        return await runOnce(
          { kubelet, runtime: c.resolve<KubeletRuntime>(Tokens.ContainerRuntime), clock, logger },
          sources.podConfig.updates(),
          signal,
        );
      }
      // Go: the resolver configuration's limits are checked once, as the sync loop starts.
      const dns = c.resolve<DnsConfigurer>(Tokens.DnsConfigurer);
      if (dns.resolvConf !== '') dns.checkLimitsForResolvConf();
      await kubelet.run(signal);
    } finally {
      await teardown();
    }
  })();
  return { kubelet, healthzPort, port: servers?.port, readOnlyPort: servers?.readOnlyPort, done };
}
