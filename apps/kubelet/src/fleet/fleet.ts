// Fleet mode: many real kubelets in one process. Each node is a tsyringe child container with the kubelet's own
// registrations (registerKubeletDeps), then a few overrides: what the nodes share (the API client, one pod watch,
// the Service and RuntimeClass caches, the logger's sink, the serving certificate) and what a simulated node has
// instead of a machine (its runtime in-process, capacity, usage, mounts, probe answers). A library user composing
// kubelets for many nodes does the same: registerKubeletDeps, then register these tokens.
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import type { DependencyContainer } from 'tsyringe';
import type { KubeConfig } from '@kubernetes/client-node';
import { EventLoopMonitor, loadClientNode, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import type { ImageService, RuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { SharedPodWatch, makePodSourceConfig } from '@kubelet-ts/pod-config';
import { Prober } from '@kubelet-ts/prober';
import { cachedMachineInfo, type NodeStatusManager } from '@kubelet-ts/node-status';
import { loadOrCreateServingCert } from '@kubelet-ts/server';
import { RuntimeClassManager } from '@kubelet-ts/runtime-manager';
import { Tokens, registerKubeletDeps } from '../container.js';
import type { KubeletConfig } from '../config.js';
import { startKubelet, type RunningKubelet } from '../app.js';
import { createKubeletMetrics } from '../metrics.js';
import { nodeCapacity } from '../node-capacity.js';
import { ServiceLister } from '../service-lister.js';
import { newKeepAliveKubeConfig } from '../kube-config.js';
import { ConfigError } from '../config.js';
import type { FleetNodeSpec, FleetSpec } from './fleet-spec.js';
import { SimulatedCgroupReader, SimulatedMounter, simulatedMachineInfo, simulatedNodeCapacity, simulatedProbe } from './simulated-node.js';

/** Every fleet node carries this label, and this taint unless the operator names its own with the same key. */
export const FLEET_LABEL = 'kubelet-ts.io/fleet';
export const FLEET_GROUP_LABEL = 'kubelet-ts.io/fleet-group';
export const FLEET_TAINT = 'kubelet-ts.io/fleet=simulated:NoSchedule';
/** The node's "runtime endpoint" as its config and logs show it: in-process, no socket. */
export const SIMULATED_RUNTIME_ENDPOINT = 'inprocess://simulated';

/** How many kubelets start at once: each start makes a few API requests (node, lease, CSINode). */
const START_CONCURRENCY = 25;

export type FleetNodeState = 'starting' | 'running' | 'dead' | 'stopping';

export interface FleetNodeInfo {
  name: string;
  state: FleetNodeState;
  port: number;
}

interface FleetNode {
  spec: FleetNodeSpec;
  config: KubeletConfig;
  runtime: LocalRuntime;
  services: { runtimeService: RuntimeService; imageService: ImageService };
  state: FleetNodeState;
  running?: { controller: AbortController; kubelet: RunningKubelet | undefined; done: Promise<void> };
}

export interface FleetOptions {
  spec: FleetSpec;
  /** The kubelet configuration every node starts from (the kubelet flags given to `kubelet fleet`). */
  template: KubeletConfig;
  /** The fleet's own container (a child of tsyringe's root); each node gets a child of it. */
  container: DependencyContainer;
  logger: Logger;
  clock?: Clock;
}

/**
 * Node i's pod IPs, distinct across the fleet (an API server refuses loopback Endpoints addresses): 10.128.0.0/9 cut
 * into /24s, used until the node's pod CIDR, if the cluster allocates them, reaches its runtime.
 */
export function fleetPodCIDR(index: number): string | undefined {
  if (index >= 32768) return undefined;
  return `10.${128 + (index >> 8)}.${index & 255}.0/24`;
}

/** A port nothing listens on now, on 127.0.0.1. */
async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A shared part behind a node's token: the node uses it, but its start and stop belong to the fleet. */
function sharedPart<T extends object>(part: T): T {
  return new Proxy(part, {
    get(target, property) {
      if (property === 'start' || property === 'stop') return async () => undefined;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A CRI client a node's teardown may "close" without closing it for the node's next life (revive). */
function withoutClose<T extends object>(service: T): T {
  return new Proxy(service, {
    get(target, property) {
      if (property === 'close') return () => undefined;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The node's configuration: the template, with the node's identity, ports, directories and a simulated machine. */
export function fleetNodeConfig(template: KubeletConfig, spec: FleetSpec, node: FleetNodeSpec, servingCert: { certFile: string; keyFile: string } | undefined): KubeletConfig {
  const rootDir = join(spec.rootDir, node.name);
  const operatorTaints = template.registerWithTaints.split(',').filter((t) => t.trim() !== '');
  const taints = [...operatorTaints, ...node.group.taints];
  if (!taints.some((t) => t.split(/[=:]/)[0] === FLEET_LABEL)) taints.push(FLEET_TAINT);
  return {
    ...template,
    nodeName: node.name,
    rootDir,
    podLogsDir: join(rootDir, 'logs'),
    certDir: join(rootDir, 'pki'),
    tlsCertFile: template.tlsCertFile ?? servingCert?.certFile,
    tlsPrivateKeyFile: template.tlsPrivateKeyFile ?? servingCert?.keyFile,
    containerRuntimeEndpoint: SIMULATED_RUNTIME_ENDPOINT,
    imageServiceEndpoint: SIMULATED_RUNTIME_ENDPOINT,
    // The API server reaches every node's server on the loopback (its InternalIP, see nodeContainer): its port tells
    // the nodes apart.
    address: '127.0.0.1',
    nodeIP: undefined,
    port: spec.basePort === 0 ? 0 : spec.basePort + node.index,
    healthzPort: 0,
    readOnlyPort: 0,
    maxPods: node.group.pods,
    nodeLabels: { ...template.nodeLabels, ...node.group.labels, [FLEET_LABEL]: 'true', [FLEET_GROUP_LABEL]: node.group.name },
    registerWithTaints: taints.join(','),
    // A simulated node has no cgroups, devices, CSI plugins or logind of its own; the fleet's identity is its kubeconfig's.
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    shutdownGracePeriodMs: 0,
    shutdownGracePeriodCriticalPodsMs: 0,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    bootstrapKubeconfig: undefined,
    staticPodPath: template.staticPodPath,
    runOnce: false,
  };
}

/**
 * N kubelets in one process (`kubelet fleet`). start() brings them all up; kill() and revive() stop a node's kubelet
 * at once and start it again on the same simulated runtime (which adopts its pods); stop() stops them all.
 */
export class Fleet {
  private readonly spec: FleetSpec;
  private readonly template: KubeletConfig;
  private readonly container: DependencyContainer;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly eventLoopMonitor: EventLoopMonitor;
  private readonly nodes = new Map<string, FleetNode>();
  private kubeConfig: KubeConfig | undefined;
  private podWatch: SharedPodWatch | undefined;
  private serviceLister: ServiceLister | undefined;
  private runtimeClasses: RuntimeClassManager | undefined;
  private servingCert: { certFile: string; keyFile: string } | undefined;
  /** The host's facts, read once for every node's simulated machine (revive included). */
  private hostMachine: ReturnType<typeof cachedMachineInfo> | undefined;
  private hostCapacity: ReturnType<typeof nodeCapacity> | undefined;
  private stopped = false;

  constructor(options: FleetOptions) {
    this.spec = options.spec;
    this.template = options.template;
    this.container = options.container;
    this.logger = options.logger;
    this.clock = options.clock ?? realClock;
    // The fleet's kubelets share the process's event loop: one monitor, running while any node runs.
    this.eventLoopMonitor = new EventLoopMonitor({ clock: this.clock, logger: this.logger.with({ component: 'eventloop' }) });
  }

  /** The nodes and their states, in fleet order. */
  list(): FleetNodeInfo[] {
    return [...this.nodes.values()].map((node) => ({ name: node.spec.name, state: node.state, port: node.config.port }));
  }

  /** Starts the shared parts, then every node's kubelet (a few at a time). Resolves when all have started. */
  async start(): Promise<void> {
    if (!this.template.kubeconfig) throw new ConfigError('kubelet fleet needs --kubeconfig: its nodes register with an API server');
    await mkdir(this.spec.rootDir, { recursive: true });
    await loadClientNode();
    const kubeConfig = newKeepAliveKubeConfig();
    try {
      kubeConfig.loadFromFile(this.template.kubeconfig);
    } catch (error) {
      throw new ConfigError(`failed to load kubeconfig ${this.template.kubeconfig}: ${(error as Error).message}`);
    }
    this.kubeConfig = kubeConfig;
    // One serving certificate for every node (all serve on 127.0.0.1): generating a key per node would cost seconds.
    if (!this.template.tlsCertFile) {
      const pair = loadOrCreateServingCert({ certDir: join(this.spec.rootDir, 'pki'), hostname: 'kubelet-fleet', alternateIPs: ['127.0.0.1'] });
      this.servingCert = { certFile: pair.certFile, keyFile: pair.keyFile };
    }
    // What every node reads from the API server alike: one pod watch (each node gets its own pods from it), one
    // Service cache and one RuntimeClass cache.
    this.podWatch = new SharedPodWatch({ kubeConfig, clock: this.clock, logger: this.logger.with({ component: 'fleet-pod-watch' }) });
    this.podWatch.start();
    this.serviceLister = new ServiceLister({ kubeConfig, clock: this.clock, logger: this.logger.with({ component: 'service-lister' }) });
    this.serviceLister.start();
    this.runtimeClasses = new RuntimeClassManager({ kubeConfig, clock: this.clock, logger: this.logger.with({ component: 'runtimeclass' }) });
    this.runtimeClasses.start();

    this.hostMachine = cachedMachineInfo(this.spec.rootDir);
    this.hostCapacity = nodeCapacity();
    for (const spec of this.spec.nodes) {
      const config = fleetNodeConfig(this.template, this.spec, spec, this.servingCert);
      // No base port: a free port, fixed for the node's lives (its Node object says where its server is).
      if (config.port === 0) config.port = await freeLoopbackPort();
      const logger = this.logger.with({ node: spec.name });
      const runtime = new LocalRuntime({
        mode: 'simulated',
        rootDir: join(config.rootDir, 'simulated-runtime'),
        clock: this.clock,
        logger: logger.with({ component: 'simulated-runtime' }),
        simulated: { startDelayMs: this.spec.simulatedStartDelayMs, imagePullBytesPerSecond: this.spec.simulatedPullBytesPerSecond, podCIDR: fleetPodCIDR(spec.index) },
      });
      const services = await runtime.startInProcess();
      this.nodes.set(spec.name, { spec, config, runtime, services, state: 'dead' });
    }
    const queue = [...this.nodes.values()];
    const worker = async () => {
      for (let node = queue.shift(); node && !this.stopped; node = queue.shift()) await this.startNode(node);
    };
    await Promise.all(Array.from({ length: Math.min(START_CONCURRENCY, queue.length) }, worker));
  }

  /** The node "dies": its kubelet stops at once (no lease renewals, no status); its containers stay as they are. */
  async kill(name: string): Promise<void> {
    const node = this.node(name);
    if (node.state !== 'running' || !node.running) throw new FleetNodeStateError(`node ${name} is ${node.state}, not running`);
    node.state = 'stopping';
    node.running.controller.abort();
    await node.running.done;
    node.running = undefined;
    node.state = 'dead';
    this.logger.info('Fleet node killed', { node: name });
  }

  /** A dead node's kubelet starts again on the same runtime and adopts what it finds. */
  async revive(name: string): Promise<void> {
    const node = this.node(name);
    if (node.state !== 'dead') throw new FleetNodeStateError(`node ${name} is ${node.state}, not dead`);
    await this.startNode(node);
    this.logger.info('Fleet node revived', { node: name });
  }

  /** Stops every node's kubelet, the shared parts and the runtimes. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      [...this.nodes.values()].map(async (node) => {
        node.running?.controller.abort();
        await node.running?.done;
        node.running = undefined;
        node.state = 'dead';
      }),
    );
    await Promise.all([this.podWatch?.stop(), this.serviceLister?.stop(), this.runtimeClasses?.stop()]);
    await Promise.all([...this.nodes.values()].map((node) => node.runtime.stop()));
  }

  private node(name: string): FleetNode {
    const node = this.nodes.get(name);
    if (!node) throw new FleetNodeNotFoundError(`no fleet node ${JSON.stringify(name)}`);
    return node;
  }

  private async startNode(node: FleetNode): Promise<void> {
    node.state = 'starting';
    const c = this.nodeContainer(node);
    const controller = new AbortController();
    let resolveDone!: () => void;
    const done = new Promise<void>((resolve) => (resolveDone = resolve));
    node.running = { controller, kubelet: undefined, done };
    try {
      const kubelet = await startKubelet(c, controller.signal);
      node.running.kubelet = kubelet;
      node.state = controller.signal.aborted ? node.state : 'running';
      void kubelet.done.then(
        () => resolveDone(),
        (error: unknown) => {
          this.logger.error('Fleet node stopped with an error', error, { node: node.spec.name });
          resolveDone();
        },
      );
    } catch (error) {
      // One node that cannot start does not stop the others: it is reported and left dead (revive retries it).
      this.logger.error('Fleet node failed to start', error, { node: node.spec.name });
      node.running = undefined;
      node.state = 'dead';
      resolveDone();
    }
  }

  /** The node's child container: the kubelet's registrations, then the fleet's shared parts and simulated machine. */
  private nodeContainer(node: FleetNode): DependencyContainer {
    const { config, runtime } = node;
    const kubeConfig = this.kubeConfig!;
    const c = this.container.createChildContainer();
    registerKubeletDeps(c, config);
    const logger = this.logger.with({ node: config.nodeName });
    c.register(Tokens.Clock, { useValue: this.clock });
    c.register(Tokens.Logger, { useValue: logger });
    c.register(Tokens.KubeConfig, { useValue: kubeConfig });
    c.register(Tokens.LocalRuntime, { useFactory: () => undefined });
    c.register(Tokens.CriRuntimeService, { useValue: withoutClose(node.services.runtimeService) });
    c.register(Tokens.CriImageService, { useValue: withoutClose(node.services.imageService) });
    // The node's own metrics; the process's requests to the API server are the fleet's, not one node's.
    c.register(Tokens.EventLoopMonitor, { useValue: this.eventLoopMonitor });
    c.register(Tokens.Metrics, { useValue: createKubeletMetrics(config.nodeName, undefined, this.eventLoopMonitor) });
    c.register(Tokens.MachineInfo, { useValue: simulatedMachineInfo(node.spec, this.hostMachine!) });
    c.register(Tokens.NodeCapacity, { useValue: simulatedNodeCapacity(node.spec, this.hostCapacity!) });
    c.register(Tokens.NodeStatusOptions, { useValue: { internalIPs: ['127.0.0.1'] } });
    c.register(Tokens.CgroupReader, { useValue: new SimulatedCgroupReader(runtime, this.clock.now()) });
    c.register(Tokens.Mounter, { useValue: new SimulatedMounter() });
    c.register(Tokens.ContainerProber, {
      useFactory: (c) =>
        new Prober({
          simulate: simulatedProbe(runtime),
          recorder: c.resolve(Tokens.EventRecorder),
          clock: this.clock,
          logger: logger.with({ component: 'prober' }),
        }),
    });
    c.register(Tokens.DeviceManager, { useFactory: () => undefined });
    c.register(Tokens.PluginWatcher, { useFactory: () => undefined });
    c.register(Tokens.ServiceLister, { useValue: sharedPart(this.serviceLister!) });
    c.register(Tokens.RuntimeClassManager, { useValue: sharedPart(this.runtimeClasses!) });
    c.register(Tokens.PodSourceConfig, {
      useFactory: (c) =>
        makePodSourceConfig({
          nodeName: config.nodeName,
          staticPodPath: config.staticPodPath,
          fileCheckFrequencyMs: config.fileCheckFrequencyMs,
          sharedPodWatch: this.podWatch,
          nodeHasSynced: () => c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus)?.isRegistered() ?? false,
          recorder: c.resolve(Tokens.EventRecorder),
          clock: this.clock,
          logger,
        }),
    });
    return c;
  }
}

export class FleetNodeNotFoundError extends Error {
  override readonly name = 'FleetNodeNotFoundError';
}

export class FleetNodeStateError extends Error {
  override readonly name = 'FleetNodeStateError';
}
