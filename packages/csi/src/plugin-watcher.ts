// PluginWatcher (Go: pkg/kubelet/pluginmanager, v1.20: pluginwatcher + reconciler + operationexecutor): finds the
// registration sockets plugins open under <root-dir>/plugins_registry, asks each for its PluginInfo (GetInfo),
// hands it to the handler of its type (validate, register), tells the plugin the outcome
// (NotifyRegistrationStatus), and deregisters a plugin whose socket goes away or is replaced.
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { Backoff, defaultLogger, errorText, realClock, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';
import { toCsiCallError } from './errors.js';
import { grpcJs, loadPluginRegistrationPackage, unixTarget, type PluginInfo, type RegistrationStatus } from './proto.js';

/** What a plugin type (CSIPlugin, DevicePlugin) does with the plugins of its type (Go: cache.PluginHandler). */
export interface PluginHandler {
  /** Refuses a plugin by throwing; the message goes back to the plugin. */
  validatePlugin(name: string, endpoint: string, versions: string[]): void | Promise<void>;
  /** Registers a validated plugin; a throw is reported to the plugin as a failed registration. */
  registerPlugin(name: string, endpoint: string, versions: string[]): void | Promise<void>;
  /** The plugin's socket went away (or was replaced). */
  deRegisterPlugin(name: string): void | Promise<void>;
}

/** The directory plugins put their registration sockets in: `<root-dir>/plugins_registry`. */
export function pluginsRegistryDir(rootDir: string): string {
  return join(rootDir, 'plugins_registry');
}

/** reconciler loopSleepDuration: how often the watcher rescans and reconciles. */
export const PLUGIN_RECONCILE_PERIOD_MS = 1000;
/** dialTimeoutDuration. */
export const PLUGIN_DIAL_TIMEOUT_MS = 10_000;
/** GetInfo's deadline (1 s). */
export const PLUGIN_GET_INFO_TIMEOUT_MS = 1000;
/** notifyTimeoutDuration. */
export const PLUGIN_NOTIFY_TIMEOUT_MS = 5000;
/** nestedpendingoperations' exponential backoff: 500 ms doubling to 2m2s. */
export const PLUGIN_RETRY_INITIAL_MS = 500;
export const PLUGIN_RETRY_MAX_MS = 2 * 60_000 + 2_000;

export interface PluginWatcherOptions {
  /** The kubelet's root directory; the watcher watches `<rootDir>/plugins_registry`. Default /var/lib/kubelet. */
  rootDir?: string;
  /** The directory to watch instead of `<rootDir>/plugins_registry`. */
  dir?: string;
  /** Handlers by plugin type ('CSIPlugin', 'DevicePlugin'); more can be added with addHandler. */
  handlers?: Record<string, PluginHandler>;
  clock?: Clock;
  /** Where its messages go (default: @kubelet-ts/core's defaultLogger, warnings and errors to stderr). */
  logger?: Logger;
  /** The rescan/reconcile period (Go's reconciler loop, 1 s). */
  periodMs?: number;
  /** Use fs.watch to notice sockets sooner than the next rescan. Default true. */
  watch?: boolean;
  dialTimeoutMs?: number;
  getInfoTimeoutMs?: number;
  notifyTimeoutMs?: number;
  /** The retry backoff of a socket whose registration failed (first step, cap). */
  retryInitialMs?: number;
  retryMaxMs?: number;
}

/** A socket in the registry directory as last seen (Go: the desired state of world's PluginInfo). */
interface DesiredPlugin {
  socketPath: string;
  /** Distinguishes a replaced socket: a new one gets a new generation (Go: the timestamp of its create event). */
  generation: number;
  /** The identity of the file the generation belongs to (device, inode, change time). */
  identity: string;
  timestamp: number;
}

/** A registered plugin (Go: the actual state of world's PluginInfo). */
export interface RegisteredPlugin {
  socketPath: string;
  name: string;
  type: string;
  endpoint: string;
  /** When the watcher first saw this socket (clock ms). */
  timestamp: number;
  generation: number;
}

interface RegisteredEntry extends RegisteredPlugin {
  handler: PluginHandler;
}

type Unary = (req: unknown, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => grpc.ClientUnaryCall;
type RegistrationClient = grpc.Client & { GetInfo: Unary; NotifyRegistrationStatus: Unary };

/**
 * Watches the plugin registry directory and keeps the registered plugins in step with the sockets in it. start()
 * creates the directory (0750), registers the sockets already there (so registrations survive a kubelet restart),
 * then rescans every periodMs and on fs.watch events. Failures are logged and retried with backoff per socket,
 * never thrown out of the loop. stop() ends the loop and waits for operations in flight.
 */
export class PluginWatcher {
  readonly dir: string;
  private readonly handlers = new Map<string, PluginHandler>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly periodMs: number;
  private readonly useWatch: boolean;
  private readonly dialTimeoutMs: number;
  private readonly getInfoTimeoutMs: number;
  private readonly notifyTimeoutMs: number;
  private readonly backoff: Backoff;
  private readonly desired = new Map<string, DesiredPlugin>();
  private readonly registered = new Map<string, RegisteredEntry>();
  /** Sockets with an operation in flight (Go: one operation per socket path at a time). */
  private readonly pending = new Map<string, Promise<void>>();
  /** When each failed socket may be retried. */
  private readonly retryAt = new Map<string, number>();
  private nextGeneration = 1;
  private timer?: TimerHandle;
  private watcher?: FSWatcher;
  private abort?: AbortController;
  private running?: Promise<void>;
  private rerun = false;
  private started = false;

  constructor(opts: PluginWatcherOptions = {}) {
    this.dir = opts.dir ?? pluginsRegistryDir(opts.rootDir ?? '/var/lib/kubelet');
    for (const [type, handler] of Object.entries(opts.handlers ?? {})) this.handlers.set(type, handler);
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.periodMs = opts.periodMs ?? PLUGIN_RECONCILE_PERIOD_MS;
    this.useWatch = opts.watch ?? true;
    this.dialTimeoutMs = opts.dialTimeoutMs ?? PLUGIN_DIAL_TIMEOUT_MS;
    this.getInfoTimeoutMs = opts.getInfoTimeoutMs ?? PLUGIN_GET_INFO_TIMEOUT_MS;
    this.notifyTimeoutMs = opts.notifyTimeoutMs ?? PLUGIN_NOTIFY_TIMEOUT_MS;
    this.backoff = new Backoff({ initialMs: opts.retryInitialMs ?? PLUGIN_RETRY_INITIAL_MS, maxMs: opts.retryMaxMs ?? PLUGIN_RETRY_MAX_MS, clock: this.clock });
  }

  /** AddHandler: the handler for plugins of this type (replacing any earlier one). */
  addHandler(pluginType: string, handler: PluginHandler): void {
    this.handlers.set(pluginType, handler);
  }

  /**
   * Creates the directory, registers the sockets in it (resolving once that first pass is done), and keeps
   * watching until stop() or signal aborts.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.abort = new AbortController();
    signal?.addEventListener('abort', () => void this.stop(), { once: true });
    this.logger.info('Plugin Watcher Start', { path: this.dir });
    await mkdir(this.dir, { recursive: true, mode: 0o750 });
    if (this.useWatch) {
      try {
        this.watcher = watch(this.dir, { persistent: false }, () => this.kick());
        this.watcher.on('error', (err) => this.logger.error('Plugin watcher error', err, { path: this.dir }));
      } catch (err) {
        this.logger.error('Failed to watch the plugin registry directory; rescanning it periodically', err, { path: this.dir });
      }
    }
    await this.sync();
    if (this.abort.signal.aborted) return;
    this.timer = this.clock.setInterval(() => this.kick(), this.periodMs);
  }

  /** Stops watching; waits for registrations in flight. Registered plugins stay registered (as in Go). */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.abort?.abort();
    this.timer?.cancel();
    this.timer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
    await this.running;
    await Promise.allSettled([...this.pending.values()]);
  }

  /** The registered plugins, by socket path. */
  registeredPlugins(): RegisteredPlugin[] {
    return [...this.registered.values()]
      .map(({ handler: _handler, ...rest }) => rest)
      .sort((a, b) => a.socketPath.localeCompare(b.socketPath));
  }

  /**
   * One rescan and reconcile, resolving once the operations it started have finished (for tests and for callers
   * that want registration done before going on). Runs after the pass in progress, if any.
   */
  async sync(): Promise<void> {
    while (this.running) await this.running;
    this.running = this.pass().finally(() => this.passDone());
    await this.running;
  }

  private passDone(): void {
    this.running = undefined;
    if (this.rerun && this.started) this.kick();
  }

  /** A rescan soon, without waiting: a timer tick or an fs.watch event. */
  private kick(): void {
    if (!this.started) return;
    if (this.running) {
      this.rerun = true;
      return;
    }
    this.rerun = false;
    this.running = this.pass(false).finally(() => this.passDone());
  }

  private async pass(waitForOperations = true): Promise<void> {
    try {
      await this.scan();
    } catch (err) {
      this.logger.error('Failed to scan the plugin registry directory', err, { path: this.dir });
    }
    this.reconcile();
    if (waitForOperations) await Promise.allSettled([...this.pending.values()]);
  }

  /** The desired state of world: every socket under the directory (names starting with '.' skipped). */
  private async scan(): Promise<void> {
    const found = new Map<string, { identity: string }>();
    await this.walk(this.dir, found, 0);
    for (const socketPath of [...this.desired.keys()]) {
      if (!found.has(socketPath)) {
        this.logger.v(2).info('Removing socket path from desired state cache', { path: socketPath });
        this.desired.delete(socketPath);
        this.backoff.delete(socketPath);
        this.retryAt.delete(socketPath);
      }
    }
    for (const [socketPath, { identity }] of found) {
      const existing = this.desired.get(socketPath);
      if (existing && existing.identity === identity) continue;
      this.logger.v(2).info('Adding socket path or updating timestamp to desired state cache', { path: socketPath });
      this.desired.set(socketPath, { socketPath, identity, generation: this.nextGeneration++, timestamp: this.clock.now() });
      this.backoff.delete(socketPath);
      this.retryAt.delete(socketPath);
    }
  }

  private async walk(dir: string, found: Map<string, { identity: string }>, depth: number): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (depth === 0) throw err;
      return; // a subdirectory that went away between readdir and here
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) {
        this.logger.v(5).info("Ignoring file (starts with '.')", { path: join(dir, entry.name) });
        continue;
      }
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (depth < 8) await this.walk(path, found, depth + 1);
        continue;
      }
      if (!entry.isSocket()) {
        this.logger.v(5).info('Ignoring non socket file', { path: entry.name });
        continue;
      }
      try {
        const st = await lstat(path, { bigint: true });
        found.set(path, { identity: `${st.dev}:${st.ino}:${st.ctimeNs}` });
      } catch {
        // removed meanwhile
      }
    }
  }

  /** reconciler.reconcile: deregistrations first, then registrations; returns the operations started. */
  private reconcile(): Promise<void>[] {
    const started: Promise<void>[] = [];
    for (const plugin of [...this.registered.values()]) {
      const desired = this.desired.get(plugin.socketPath);
      if (desired && desired.generation === plugin.generation) continue;
      if (this.pending.has(plugin.socketPath)) continue;
      if (desired) this.logger.v(5).info('An updated version of plugin has been found, unregistering the plugin first before reregistering', { path: plugin.socketPath, name: plugin.name });
      started.push(this.run(plugin.socketPath, 'OperationExecutor.UnregisterPlugin failed', () => this.unregister(plugin)));
    }
    for (const desired of this.desired.values()) {
      const registered = this.registered.get(desired.socketPath);
      if (registered && registered.generation === desired.generation) continue;
      if (this.pending.has(desired.socketPath)) continue;
      const retryAt = this.retryAt.get(desired.socketPath);
      if (retryAt !== undefined && this.clock.now() < retryAt) continue;
      started.push(this.run(desired.socketPath, 'OperationExecutor.RegisterPlugin failed', () => this.register(desired)));
    }
    return started;
  }

  /** One operation on a socket; a failure is logged and the socket waits out its backoff before the next try. */
  private run(socketPath: string, failure: string, op: () => Promise<void>): Promise<void> {
    const promise = (async () => {
      try {
        await op();
        this.backoff.reset(socketPath);
        this.retryAt.delete(socketPath);
      } catch (err) {
        this.backoff.next(socketPath);
        const delay = this.backoff.get(socketPath);
        this.retryAt.set(socketPath, this.clock.now() + delay);
        this.logger.error(failure, err, { path: socketPath, retryAfterMs: delay });
      }
    })().finally(() => this.pending.delete(socketPath));
    this.pending.set(socketPath, promise);
    return promise;
  }

  private async unregister(plugin: RegisteredEntry): Promise<void> {
    // As Go: out of the actual state first, so a new socket at the path registers afresh.
    this.registered.delete(plugin.socketPath);
    await plugin.handler.deRegisterPlugin(plugin.name);
    this.logger.v(4).info('DeRegisterPlugin called', { pluginName: plugin.name, pluginType: plugin.type });
  }

  /** GenerateRegisterPluginFunc. */
  private async register(desired: DesiredPlugin): Promise<void> {
    const socketPath = desired.socketPath;
    const stillDesired = (): boolean => this.desired.get(socketPath)?.generation === desired.generation;
    this.logger.v(1).info('OperationExecutor.RegisterPlugin started', { path: socketPath });
    let client: RegistrationClient;
    try {
      client = await this.dial(socketPath);
    } catch (err) {
      throw new Error(`RegisterPlugin error -- dial failed at socket ${socketPath}, err: ${errorText(err)}`, { cause: err });
    }
    try {
      let info: PluginInfo;
      try {
        info = (await this.unary(client, 'GetInfo', {}, this.getInfoTimeoutMs, socketPath)) as PluginInfo;
      } catch (err) {
        throw new Error(`RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ${socketPath}, err: ${errorText(err)}`, { cause: err });
      }
      const handler = this.handlers.get(info.type);
      if (!handler) {
        const msg = `RegisterPlugin error -- no handler registered for plugin type: ${info.type} at socket ${socketPath}`;
        await this.notify(client, socketPath, false, msg);
        throw new Error(msg);
      }
      const endpoint = info.endpoint === '' ? socketPath : info.endpoint;
      const versions = info.supportedVersions ?? [];
      try {
        await handler.validatePlugin(info.name, endpoint, versions);
      } catch (err) {
        await this.notify(client, socketPath, false, `RegisterPlugin error -- plugin validation failed with err: ${errorText(err)}`);
        throw new Error('RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed', { cause: err });
      }
      if (!stillDesired() || !this.started) return; // the socket went or changed meanwhile: the next pass decides
      // Into the actual state before the handler's RegisterPlugin, as Go: a socket removed meanwhile deregisters.
      this.registered.set(socketPath, { socketPath, name: info.name, type: info.type, endpoint, timestamp: desired.timestamp, generation: desired.generation, handler });
      try {
        await handler.registerPlugin(info.name, endpoint, versions);
      } catch (err) {
        await this.notify(client, socketPath, false, `RegisterPlugin error -- plugin registration failed with err: ${errorText(err)}`);
        throw new Error(`RegisterPlugin error -- plugin registration failed with err: ${errorText(err)}`, { cause: err });
      }
      try {
        await this.notify(client, socketPath, true, '');
      } catch (err) {
        throw new Error(`RegisterPlugin error -- failed to send registration status at socket ${socketPath}, err: ${errorText(err)}`, { cause: err });
      }
      this.logger.info('Registered plugin', { pluginName: info.name, pluginType: info.type, path: socketPath, endpoint });
    } finally {
      client.close();
    }
  }

  /** notifyPlugin: NotifyRegistrationStatus; a failed call reads `<errStr>: <err>` (Go wraps it). */
  private async notify(client: RegistrationClient, socketPath: string, registered: boolean, errStr: string): Promise<void> {
    const status: RegistrationStatus = { pluginRegistered: registered, error: errStr };
    try {
      await this.unary(client, 'NotifyRegistrationStatus', status, this.notifyTimeoutMs, socketPath);
    } catch (err) {
      if (errStr === '') throw err;
      throw new Error(`RegisterPlugin error -- failed to send error at socket ${socketPath}, err: ${errStr}: ${errorText(err)}`, { cause: err });
    }
  }

  private async dial(socketPath: string): Promise<RegistrationClient> {
    const { Registration } = loadPluginRegistrationPackage();
    const client = new Registration(unixTarget(socketPath), grpcJs().credentials.createInsecure(), { 'grpc.enable_retries': 0 }) as RegistrationClient;
    const signal = this.abort?.signal;
    try {
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(new Error('context canceled'));
        signal?.addEventListener('abort', onAbort, { once: true });
        client.waitForReady(Date.now() + this.dialTimeoutMs, (err) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) reject(new Error(`failed to dial socket ${socketPath}, err: context deadline exceeded`, { cause: err }));
          else resolve();
        });
      });
    } catch (err) {
      client.close();
      throw err;
    }
    return client;
  }

  private unary(client: RegistrationClient, method: 'GetInfo' | 'NotifyRegistrationStatus', req: unknown, timeoutMs: number, socketPath: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      client[method].call(client, req, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(toCsiCallError(err, socketPath)) : resolve(res)));
    });
  }
}
