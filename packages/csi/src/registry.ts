// The CSI drivers the plugin watcher registered (Go: csiDrivers, a DriversStore) and the CSI plugin type's
// registration handler (Go: pkg/volume/csi/csi_plugin.go's RegistrationHandler, v1.20).
import { defaultLogger, errorText, type Logger } from '@kubelet-ts/core';
import { createCsiNodeClient, CSI_TIMEOUT_MS } from './node-client.js';
import type { PluginHandler } from './plugin-watcher.js';
import type { CsiDriverLookup, CsiNodeClient, NodeGetInfoResponse, RegisteredCsiDriver } from './types.js';

/** Go's log(): every message of the CSI plugin starts with its name. */
export function csiLog(msg: string): string {
  return `kubernetes.io/csi: ${msg}`;
}

/** The error CsiDriverLookup.client throws for a driver that is not registered (Go: newCsiDriverClient). */
export function driverNotFoundError(driverName: string): Error {
  return new Error(`driver name ${driverName} not found in the list of registered CSI drivers`);
}

export interface CsiDriverRegistryOptions {
  /** Makes the client of a driver's endpoint; default a GrpcCsiNodeClient over the socket. */
  clientFactory?: (endpoint: string, driverName: string) => CsiNodeClient;
}

interface DriverEntry extends RegisteredCsiDriver {
  client?: CsiNodeClient;
}

/**
 * The registered CSI drivers by name: the endpoint and highest supported version each registered with, and its
 * node client, made on first use and reused until the driver is removed (which closes it).
 */
export class CsiDriverRegistry implements CsiDriverLookup {
  private readonly drivers = new Map<string, DriverEntry>();
  private readonly clientFactory: (endpoint: string, driverName: string) => CsiNodeClient;

  constructor(opts: CsiDriverRegistryOptions = {}) {
    this.clientFactory = opts.clientFactory ?? ((endpoint) => createCsiNodeClient(endpoint));
  }

  /** Adds or replaces a driver (a replaced driver's client is closed). */
  set(driver: RegisteredCsiDriver): void {
    this.closeClient(driver.name);
    this.drivers.set(driver.name, { name: driver.name, endpoint: driver.endpoint, highestSupportedVersion: driver.highestSupportedVersion });
  }

  get(driverName: string): RegisteredCsiDriver | undefined {
    const entry = this.drivers.get(driverName);
    return entry && { name: entry.name, endpoint: entry.endpoint, highestSupportedVersion: entry.highestSupportedVersion };
  }

  has(driverName: string): boolean {
    return this.drivers.has(driverName);
  }

  client(driverName: string): CsiNodeClient {
    const entry = this.drivers.get(driverName);
    if (!entry) throw driverNotFoundError(driverName);
    entry.client ??= this.clientFactory(entry.endpoint, entry.name);
    return entry.client;
  }

  /** Removes a driver and closes its client; false when it was not registered. */
  delete(driverName: string): boolean {
    this.closeClient(driverName);
    return this.drivers.delete(driverName);
  }

  /** The registered drivers, sorted by name. */
  list(): RegisteredCsiDriver[] {
    return [...this.drivers.keys()].sort().map((name) => this.get(name) as RegisteredCsiDriver);
  }

  /** Closes every client (the drivers stay registered). */
  closeAll(): void {
    for (const name of this.drivers.keys()) this.closeClient(name);
  }

  private closeClient(driverName: string): void {
    const entry = this.drivers.get(driverName);
    if (!entry?.client) return;
    try {
      entry.client.close();
    } finally {
      entry.client = undefined;
    }
  }
}

/** A parsed generic version: its numeric components (utilversion.ParseGeneric). */
interface Version {
  text: string;
  parts: number[];
}

/**
 * utilversion.ParseGeneric: two or more dot-separated numbers (an optional leading `v`; the first without a leading
 * zero), then anything (ignored).
 */
function parseGenericVersion(text: string): Version {
  const match = /^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$/.exec(text);
  if (!match) throw new Error(`could not parse ${JSON.stringify(text)} as version`);
  const numbers = (match[1] as string).split('.');
  if (numbers.length < 2) throw new Error(`illegal version string ${JSON.stringify(text)}`);
  const first = numbers[0] as string;
  if (first.length > 1 && first.startsWith('0')) throw new Error(`illegal zero-prefixed version component ${JSON.stringify(first)} in ${JSON.stringify(text)}`);
  const parts = numbers.map(Number);
  return { text: parts.join('.'), parts };
}

function lessThan(a: Version, b: Version): boolean {
  const n = Math.max(a.parts.length, b.parts.length);
  for (let i = 0; i < n; i++) {
    const x = a.parts[i] ?? 0;
    const y = b.parts[i] ?? 0;
    if (x !== y) return x < y;
  }
  return false;
}

/** Go's `%v` of a []string: `[a b c]`. */
function goList(values: string[]): string {
  return `[${values.join(' ')}]`;
}

/** Go's `%q` of a []string: `["a" "b"]`. */
function goQuotedList(values: string[]): string {
  return `[${values.map((v) => JSON.stringify(v)).join(' ')}]`;
}

/**
 * highestSupportedVersion (csi_plugin.go, v1.20): the highest of the versions below 2.0; a driver whose highest
 * is not 1.x is refused (CSI 0.x is no longer supported since Kubernetes v1.17).
 */
export function highestSupportedVersion(versions: string[]): string {
  if (versions.length === 0) throw new Error(csiLog('CSI driver reporting empty array for supported versions'));
  let highest: Version | undefined;
  let lastErr: unknown;
  for (let i = versions.length - 1; i >= 0; i--) {
    let current: Version;
    try {
      current = parseGenericVersion(versions[i] as string);
    } catch (err) {
      lastErr = err;
      continue;
    }
    if ((current.parts[0] ?? 0) > 1) continue;
    if (!highest || lessThan(highest, current)) highest = current;
  }
  if (!highest) {
    throw new Error(`could not find a highest supported version from versions (${goList(versions)}) reported by this driver: ${lastErr === undefined ? '<nil>' : errorText(lastErr)}`);
  }
  if (highest.parts[0] !== 1) throw new Error(`highest supported version reported by driver is ${highest.text}, must be v1.x`);
  return highest.text;
}

/** The kubelet's CSINode/Node bookkeeping of drivers (Go: nodeinfomanager.Interface); see NodeInfoManager. */
export interface CsiNodeInfoUpdater {
  installCsiDriver(driverName: string, driverNodeId: string, maxVolumes: number, topology: Record<string, string> | undefined): Promise<void>;
  uninstallCsiDriver(driverName: string): Promise<void>;
}

export interface CsiRegistrationHandlerOptions {
  registry: CsiDriverRegistry;
  /** Absent in standalone mode (no API server): drivers register without CSINode bookkeeping. */
  nodeInfo?: CsiNodeInfoUpdater;
  /** Where its messages go (default: @kubelet-ts/core's defaultLogger, warnings and errors to stderr). */
  logger?: Logger;
  /** NodeGetInfo's deadline (csiTimeout). */
  timeoutMs?: number;
}

/**
 * The CSI plugin type's handler for the plugin watcher ('CSIPlugin'): validates the versions a driver offers,
 * records the driver in the registry, asks it for NodeGetInfo and installs it on the node's CSINode (and Node
 * labels/annotation); a driver whose socket goes away is uninstalled and removed.
 */
export class CsiRegistrationHandler implements PluginHandler {
  private readonly registry: CsiDriverRegistry;
  private readonly nodeInfo?: CsiNodeInfoUpdater;
  private readonly logger: Logger;
  private readonly timeoutMs: number;

  constructor(opts: CsiRegistrationHandlerOptions) {
    this.registry = opts.registry;
    this.nodeInfo = opts.nodeInfo;
    this.logger = opts.logger ?? defaultLogger;
    this.timeoutMs = opts.timeoutMs ?? CSI_TIMEOUT_MS;
  }

  validatePlugin(pluginName: string, endpoint: string, versions: string[]): void {
    this.logger.info(csiLog(`Trying to validate a new CSI Driver with name: ${pluginName} endpoint: ${endpoint} versions: ${versions.join(',')}`));
    try {
      this.validateVersions('ValidatePlugin', pluginName, versions);
    } catch (err) {
      throw new Error(`validation failed for CSI Driver ${pluginName} at endpoint ${endpoint}: ${errorText(err)}`, { cause: err });
    }
  }

  async registerPlugin(pluginName: string, endpoint: string, versions: string[]): Promise<void> {
    this.logger.info(csiLog(`Register new plugin with name: ${pluginName} at endpoint: ${endpoint}`));
    const highest = this.validateVersions('RegisterPlugin', pluginName, versions);
    this.registry.set({ name: pluginName, endpoint, highestSupportedVersion: highest });

    let info: NodeGetInfoResponse;
    try {
      info = await this.registry.client(pluginName).nodeGetInfo(AbortSignal.timeout(this.timeoutMs));
    } catch (err) {
      await this.unregisterAfterFailure(pluginName);
      throw err;
    }
    if (!this.nodeInfo) return;
    try {
      await this.nodeInfo.installCsiDriver(pluginName, info.nodeId, info.maxVolumesPerNode, info.accessibleTopology?.segments);
    } catch (err) {
      await this.unregisterAfterFailure(pluginName);
      throw err;
    }
  }

  async deRegisterPlugin(pluginName: string): Promise<void> {
    this.logger.info(csiLog(`registrationHandler.DeRegisterPlugin request for plugin ${pluginName}`));
    try {
      await this.unregisterDriver(pluginName);
    } catch (err) {
      this.logger.error(csiLog(`registrationHandler.DeRegisterPlugin failed: ${errorText(err)}`), err);
    }
  }

  /** validateVersions: the highest supported version, refusing one not above an already registered driver's. */
  private validateVersions(callerName: string, pluginName: string, versions: string[]): string {
    if (versions.length === 0) {
      throw new Error(csiLog(`${callerName} for CSI driver ${JSON.stringify(pluginName)} failed. Plugin returned an empty list for supported versions`));
    }
    let highest: string;
    try {
      highest = highestSupportedVersion(versions);
    } catch (err) {
      throw new Error(
        csiLog(`${callerName} for CSI driver ${JSON.stringify(pluginName)} failed. None of the versions specified ${goQuotedList(versions)} are supported. err=${errorText(err)}`),
        { cause: err },
      );
    }
    const existing = this.registry.get(pluginName);
    if (existing && !lessThan(parseGenericVersion(existing.highestSupportedVersion), parseGenericVersion(highest))) {
      throw new Error(
        csiLog(
          `${callerName} for CSI driver ${JSON.stringify(pluginName)} failed. Another driver with the same name is already registered with a higher supported version: ${JSON.stringify(existing.highestSupportedVersion)}`,
        ),
      );
    }
    return highest;
  }

  private async unregisterAfterFailure(pluginName: string): Promise<void> {
    try {
      await this.unregisterDriver(pluginName);
    } catch (err) {
      this.logger.error(csiLog(`registrationHandler.RegisterPlugin failed to unregister plugin due to previous error: ${errorText(err)}`), err);
    }
  }

  /** unregisterDriver: out of the registry, then off the CSINode and Node. */
  private async unregisterDriver(pluginName: string): Promise<void> {
    this.registry.delete(pluginName);
    if (!this.nodeInfo) return;
    try {
      await this.nodeInfo.uninstallCsiDriver(pluginName);
    } catch (err) {
      throw new Error(csiLog(`Error uninstalling CSI driver: ${errorText(err)}`), { cause: err });
    }
  }
}
