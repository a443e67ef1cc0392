import { instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import { errorText, type Clock, type Logger } from '@kubelet-ts/core';
import { runtimeapi, type RuntimeService } from '@kubelet-ts/cri-client';
import type { ContainerManager } from '@kubelet-ts/container-manager';
import type { ImageService } from '@kubelet-ts/cri-client';
import { ContainerLogManager, type LogManager } from '@kubelet-ts/container-logs';
import type { MachineInfoProvider } from '@kubelet-ts/node-status';
import type { KubeConfig } from '@kubernetes/client-node';
import { SummaryProvider, VolumeDirStats, type CgroupReader, renderCadvisorMetrics, scrapeResourceMetrics, type PodVolumeStatsFunction, type SummarySource } from '@kubelet-ts/stats';
import { escapePluginName } from '@kubelet-ts/volume-manager';
import { CSI_PLUGIN_NAME } from '@kubelet-ts/csi';
import { KubeletServer, DynamicFileCAContent, authFilter, type HttpRequestLabels, type KubeletMetrics, createAuthenticator, createAuthorizer, loadOrCreateServingCert, type HealthzCheck, type MetricsSource, type RequestGate, type ServerHost } from '@kubelet-ts/server';
import { ConfigError, type KubeletConfig } from './config.js';
import { Tokens } from './container.js';
import type { NodeCapacity } from './node-capacity.js';
import type { Kubelet, KubeletRuntime } from './kubelet.js';
import { KubeletServerHost } from './server-host.js';
import { verbositySetter } from './log-verbosity.js';
import { claimVolumeStats, podVolumeStatsWithPlugins } from './volume-stats.js';
import { cadvisorContainerInfos } from './cadvisor-info.js';
import type { CertificateManager } from '@kubelet-ts/certificate';

/** What the kubelet's servers publish besides the routes: the metrics registries and the request counter. */
export interface ServerMetrics {
  metrics?: MetricsSource;
  probeMetrics?: MetricsSource;
  onHttpRequest?: ConstructorParameters<typeof KubeletServer>[0]['onHttpRequest'];
}

export interface RunningServers {
  /** The secure port actually bound (useful with --port=0), once listening. */
  port?: number;
  readOnlyPort?: number;
  stop(): Promise<void>;
}

const LISTEN_RETRY_MS = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000];

/**
 * Go: ListenAndServeKubeletServer and ListenAndServeKubeletReadOnlyServer. The secure server serves TLS with
 * the configured or self-signed certificate and checks every request; the read-only server (off unless
 * --read-only-port) serves the default handlers without authentication. A port that cannot be bound is
 * reported and retried with backoff: the node keeps running its pods meanwhile.
 */
export async function startKubeletServers(c: DependencyContainer, kubelet: Kubelet, healthChecks: HealthzCheck[]): Promise<RunningServers> {
  const config = c.resolve<KubeletConfig>(Tokens.Config);
  const logger = c.resolve<Logger>(Tokens.Logger).with({ component: 'server' });
  const clock = c.resolve<Clock>(Tokens.Clock);
  const host = c.resolve<(healthChecks: HealthzCheck[]) => ServerHost>(Tokens.ServerHostFactory)(healthChecks);
  const serverMetrics = c.resolve<ServerMetrics>(Tokens.ServerMetrics);
  const common = { host, logger, metrics: serverMetrics.metrics, probeMetrics: serverMetrics.probeMetrics, onHttpRequest: serverMetrics.onHttpRequest };

  const servers: Array<{ server: KubeletServer; name: string; port: number }> = [];
  const gate = c.resolve<RequestGate | undefined>(Tokens.ServerGate);
  const unsubscribes: Array<() => void> = [];
  let clientCA: DynamicFileCAContent | undefined;
  if (gate) {
    // serverTLSBootstrap: the certificate the cluster signs (none until it is issued); else the files or a self-signed pair.
    const servingManager = c.resolve<CertificateManager | undefined>(Tokens.ServerCertificateManager);
    let cert: { certPem?: string; keyPem?: string } | undefined = servingManager?.current();
    if (!servingManager) {
      const pair = loadOrCreateServingCert({ tlsCertFile: config.tlsCertFile, tlsPrivateKeyFile: config.tlsPrivateKeyFile, certDir: config.certDir, hostname: config.nodeName });
      if (pair.generated) logger.info('Generated a self-signed serving certificate', { certFile: pair.certFile, keyFile: pair.keyFile });
      cert = pair;
    } else if (!cert) {
      logger.info('No serving certificate available for the kubelet yet: TLS handshakes fail until the cluster issues one (serverTLSBootstrap)');
    }
    // The TLS server verifies client chains with this bundle (Go: the x509 authenticator's dynamic CA): the file is
    // re-read when it changes, and new connections are verified against the last good bundle.
    const clientCAFile = config.authentication.x509ClientCAFile;
    if (clientCAFile) {
      try {
        clientCA = new DynamicFileCAContent({ file: clientCAFile, clock, logger: logger.with({ component: 'client-ca' }) });
      } catch (error) {
        throw new ConfigError(`authentication.x509.clientCAFile: ${errorText(error)}`);
      }
    }
    const clientCAPem = clientCA?.currentCABundleContent().toString('utf8');
    const ciphers = config.tlsCipherSuites.length > 0 ? config.tlsCipherSuites.join(':') : undefined;
    const secure = new KubeletServer({
      ...common,
      address: config.address,
      port: config.port,
      tls: { certPem: cert?.certPem, keyPem: cert?.keyPem, clientCAPem, minVersion: config.tlsMinVersion, ciphers },
      gate,
      enableDebuggingHandlers: config.enableDebuggingHandlers,
      enableSystemLogHandler: config.enableSystemLogHandler,
      setLogVerbosity: verbositySetter(c.resolve<Logger>(Tokens.Logger)),
      clock,
    });
    const unsubscribeServing = servingManager?.subscribe((pair) => {
      secure.setCertificate(pair.certPem, pair.keyPem);
      logger.info('Serving the rotated kubelet serving certificate', { notAfter: new Date(pair.notAfter).toISOString() });
    });
    if (unsubscribeServing) unsubscribes.push(unsubscribeServing);
    if (clientCA) unsubscribes.push(clientCA.addListener((bundle) => secure.setClientCA(bundle.toString('utf8'))));
    servers.push({ name: 'kubelet server', port: config.port, server: secure });
  } else {
    logger.info('No authentication method configured: the kubelet server is not started (set --client-ca-file, or --kubeconfig for webhook token authentication, or --anonymous-auth)', { port: config.port });
  }
  if (config.readOnlyPort > 0) {
    servers.push({ name: 'kubelet read-only server', port: config.readOnlyPort, server: new KubeletServer({ ...common, address: config.address, port: config.readOnlyPort, readOnly: true }) });
  }

  const stopping = new AbortController();
  clientCA?.run(stopping.signal);
  const result: RunningServers = {
    stop: async () => {
      stopping.abort();
      for (const unsubscribe of unsubscribes) unsubscribe();
      await Promise.all(servers.map(({ server }) => server.stop()));
    },
  };
  const listen = async ({ server, name, port }: (typeof servers)[number], firstAttempt = 0): Promise<number | undefined> => {
    for (let attempt = firstAttempt; ; attempt++) {
      try {
        const bound = await server.start();
        logger.info(`Started ${name}`, { address: `${config.address}:${bound}` });
        return bound;
      } catch (error) {
        const delay = LISTEN_RETRY_MS[Math.min(attempt, LISTEN_RETRY_MS.length - 1)]!;
        logger.error(`Failed to listen for the ${name}; retrying`, error, { port, retryInMs: delay });
        if (attempt === 0) {
          // The caller goes on at once; the retries continue in the background until the kubelet stops.
          void clock.sleep(delay, stopping.signal).then(
            () => listen({ server, name, port }, 1),
            () => undefined,
          );
          return undefined;
        }
        try {
          await clock.sleep(delay, stopping.signal);
        } catch {
          return undefined;
        }
      }
    }
  };
  const ports = await Promise.all(servers.map((entry) => listen(entry)));
  result.port = gate ? ports[0] : undefined;
  result.readOnlyPort = config.readOnlyPort > 0 ? ports.at(-1) : undefined;
  return result;
}

/** Registers the server's KubeletDeps: its host, its gate, its metrics, the stats provider and the container log manager. */
export function registerServerDeps(c: DependencyContainer, config: KubeletConfig): void {
  // Go: BuildAuth. No authentication method at all (standalone defaults): no secure server rather than one that
  // answers 401 to everyone, or an open one.
  c.register<RequestGate | undefined>(Tokens.ServerGate, {
    useFactory: instanceCachingFactory((c) => {
      const { authentication, authorization } = config;
      if (!authentication.x509ClientCAFile && !authentication.webhookEnabled && !authentication.anonymousEnabled) return undefined;
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      const clock = c.resolve<Clock>(Tokens.Clock);
      const logger = c.resolve<Logger>(Tokens.Logger).with({ component: 'server-auth' });
      try {
        const authenticator = createAuthenticator({ ...authentication, kubeConfig, clock, logger });
        const authorizer = createAuthorizer({ ...authorization, kubeConfig, clock, logger });
        return authFilter(authenticator, authorizer, config.nodeName, { logger });
      } catch (error) {
        throw new ConfigError(`failed to build the kubelet server's authentication or authorization: ${errorText(error)}`);
      }
    }),
  });
  c.register<ServerMetrics>(Tokens.ServerMetrics, {
    useFactory: instanceCachingFactory((c) => {
      const metrics = c.resolve<KubeletMetrics>(Tokens.Metrics);
      return { metrics: metrics.registry, probeMetrics: metrics.probeRegistry, onHttpRequest: (labels: HttpRequestLabels) => metrics.startHttpRequest(labels) };
    }),
  });
  c.register<(healthChecks: HealthzCheck[]) => ServerHost>(Tokens.ServerHostFactory, { useFactory: (c) => (healthChecks: HealthzCheck[]) => createServerHost(c, healthChecks) });
  // Go: the volume stat calculators: du/statfs of the volume directories (cached for --volume-stats-agg-period),
  // CSI volumes from the driver's NodeGetVolumeStats; the claim-backed ones also feed kubelet_volume_stats_*.
  c.register<PodVolumeStatsFunction>(Tokens.PodVolumeStats, {
    useFactory: instanceCachingFactory((c) => {
      const clock = c.resolve<Clock>(Tokens.Clock);
      const logger = c.resolve<Logger>(Tokens.Logger).with({ component: 'stats' });
      const kubelet = () => c.resolve<Kubelet>(Tokens.Kubelet);
      const podVolumeStats = podVolumeStatsWithPlugins({
        dirStats: new VolumeDirStats({ rootDir: config.rootDir, clock, skipPluginDirs: [escapePluginName(CSI_PLUGIN_NAME)], logger }),
        plugins: () => {
          const volumes = kubelet().volumeManager;
          return volumes?.getVolumeStats ? { getVolumeStats: (uid) => volumes.getVolumeStats!(uid) } : undefined;
        },
        pod: (uid) => kubelet().podManager.getPodByUid(uid),
        clock,
        logger,
      });
      c.resolve<KubeletMetrics>(Tokens.Metrics).watchVolumeStats(() => claimVolumeStats(kubelet().podManager.getPods(), podVolumeStats));
      return podVolumeStats;
    }),
  });
  c.register<SummarySource>(
    Tokens.StatsProvider,
    {
      useFactory: instanceCachingFactory(
        (c) =>
          new SummaryProvider({
            runtimeService: c.resolve<RuntimeService>(Tokens.RuntimeService),
            imageService: c.resolve<ImageService>(Tokens.ImageService),
            nodeName: config.nodeName,
            rootDir: config.rootDir,
            podLogsDir: config.podLogsDir,
            // The pods' cgroup: the "pods" system container, whose working set the allocatableMemory.available signal reads.
            systemCgroups: config.cgroupsPerQOS ? { pods: podsCgroupName(config.cgroupRoot) } : undefined,
            podVolumeStats: c.resolve<PodVolumeStatsFunction>(Tokens.PodVolumeStats),
            cgroupReader: c.resolve<CgroupReader | undefined>(Tokens.CgroupReader),
            nodeMemoryCapacityBytes: () => c.resolve<NodeCapacity>(Tokens.NodeCapacity).memoryBytes,
            clock: c.resolve(Tokens.Clock),
            logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'stats' }),
          }),
      ),
    },
  );
  c.register<Pick<ServerHost, 'getStatsSummary' | 'resourceMetrics' | 'cadvisorMetrics'>>(Tokens.StatsSource, {
    useFactory: instanceCachingFactory((c) => {
      const provider = c.resolve<SummarySource>(Tokens.StatsProvider);
      const logger = c.resolve<Logger>(Tokens.Logger).with({ component: 'stats' });
      return {
        getStatsSummary: (onlyCpuAndMemory: boolean) => (onlyCpuAndMemory ? provider.getCPUAndMemoryStats() : provider.get(true)),
        resourceMetrics: () => scrapeResourceMetrics(provider, logger),
        cadvisorMetrics: async () => {
          const runtime = c.resolve<RuntimeService>(Tokens.RuntimeService);
          const [summary, containers] = await Promise.all([provider.get(false), runtime.listContainers({ state: { state: runtimeapi.ContainerState.CONTAINER_RUNNING } })]);
          // With pod cgroups, the pods' and containers' OOM counters and PSI (container_oom_events_total, container_pressure_*).
          const infos = await cadvisorContainerInfos({
            summary,
            containers,
            containerManager: c.resolve<ContainerManager | undefined>(Tokens.ContainerManager),
            podByUid: (uid) => c.resolve<Kubelet>(Tokens.Kubelet).podManager.getPodByUid(uid),
            clock: c.resolve<Clock>(Tokens.Clock),
            logger,
          });
          return renderCadvisorMetrics(summary, infos);
        },
      };
    }),
  });
  // Go: the container log manager rotates logs only for CRI runtimes; the embedded runtime is one too.
  c.register<LogManager | undefined>(Tokens.ContainerLogManager, {
    useFactory: instanceCachingFactory((c) =>
      config.containerLogMaxSizeBytes > 0
        ? new ContainerLogManager({
            runtime: c.resolve<RuntimeService>(Tokens.RuntimeService),
            maxSize: config.containerLogMaxSizeBytes,
            maxFiles: config.containerLogMaxFiles,
            clock: c.resolve(Tokens.Clock),
            logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'container-log-manager' }),
          })
        : undefined,
    ),
  });
}

/** The default ServerHost: the kubelet, its runtime and the machine facts. */
export function createServerHost(c: DependencyContainer, healthChecks: HealthzCheck[]): ServerHost {
  const config = c.resolve<KubeletConfig>(Tokens.Config);
  const machineInfo = c.resolve<MachineInfoProvider>(Tokens.MachineInfo);
  return new KubeletServerHost({
    kubelet: c.resolve<Kubelet>(Tokens.Kubelet),
    runtime: c.resolve<KubeletRuntime>(Tokens.ContainerRuntime),
    runtimeService: c.resolve<RuntimeService>(Tokens.RuntimeService),
    healthChecks,
    configz: () => configz(config),
    machineInfo,
    stats: c.resolve<Pick<ServerHost, 'getStatsSummary' | 'resourceMetrics' | 'cadvisorMetrics'> | undefined>(Tokens.StatsSource),
    clock: c.resolve(Tokens.Clock),
    logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'server' }),
  });
}

/** /configz: the configuration in KubeletConfiguration's field names (durations as Go prints them). */
function configz(config: KubeletConfig): Record<string, unknown> {
  const duration = (ms: number) => `${ms / 1000}s`;
  return {
    kind: 'KubeletConfiguration',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    staticPodPath: config.staticPodPath ?? '',
    staticPodURL: config.staticPodURL ?? '',
    syncFrequency: duration(config.syncFrequencyMs),
    fileCheckFrequency: duration(config.fileCheckFrequencyMs),
    httpCheckFrequency: duration(config.httpCheckFrequencyMs),
    address: config.address,
    port: config.port,
    readOnlyPort: config.readOnlyPort,
    tlsCertFile: config.tlsCertFile ?? '',
    tlsPrivateKeyFile: config.tlsPrivateKeyFile ?? '',
    authentication: {
      x509: { clientCAFile: config.authentication.x509ClientCAFile ?? '' },
      webhook: { enabled: config.authentication.webhookEnabled, cacheTTL: duration(config.authentication.webhookCacheTTLMs) },
      anonymous: { enabled: config.authentication.anonymousEnabled },
    },
    authorization: {
      mode: config.authorization.mode,
      webhook: { cacheAuthorizedTTL: duration(config.authorization.cacheAuthorizedTTLMs), cacheUnauthorizedTTL: duration(config.authorization.cacheUnauthorizedTTLMs) },
    },
    healthzPort: config.healthzPort,
    healthzBindAddress: config.healthzBindAddress,
    clusterDomain: config.clusterDomain,
    clusterDNS: config.clusterDNS,
    nodeStatusUpdateFrequency: duration(config.nodeStatusUpdateFrequencyMs),
    nodeStatusReportFrequency: duration(config.nodeStatusReportFrequencyMs),
    imageMinimumGCAge: duration(config.imageGC.minAgeMs),
    imageGCHighThresholdPercent: config.imageGC.highThresholdPercent,
    imageGCLowThresholdPercent: config.imageGC.lowThresholdPercent,
    runtimeRequestTimeout: duration(config.runtimeRequestTimeoutMs),
    maxPods: config.maxPods,
    resolvConf: config.resolvConf,
    eventRecordQPS: config.eventQps,
    eventBurst: config.eventBurst,
    kubeAPIQPS: config.kubeApiQps,
    kubeAPIBurst: config.kubeApiBurst,
    enableDebuggingHandlers: config.enableDebuggingHandlers,
    enableSystemLogHandler: config.enableSystemLogHandler,
    containerLogMaxSize: String(config.containerLogMaxSizeBytes),
    containerLogMaxFiles: config.containerLogMaxFiles,
    featureGates: config.featureGates,
    containerRuntimeEndpoint: config.containerRuntimeEndpoint,
    podLogsDir: config.podLogsDir,
  };
}

/** The literal cgroupfs name of the kubepods cgroup under --cgroup-root. */
export function podsCgroupName(cgroupRoot: string): string {
  return `${cgroupRoot.replace(/\/+$/, '')}/kubepods`;
}
