import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseDuration } from '@kubelet-ts/core';
import { validateImageGCPolicy } from '@kubelet-ts/image-gc';
import { KNOWN_FEATURE_GATES, LOCAL_RUNTIME_ENDPOINT, type KubeletFlags } from './flags.js';

/** The kubelet's resolved configuration: the config file, then flags over it, then defaults. */
export interface KubeletConfig {
  nodeName: string;
  rootDir: string;
  podLogsDir: string;
  staticPodPath?: string;
  staticPodURL?: string;
  staticPodURLHeader: Record<string, string[]>;
  syncFrequencyMs: number;
  fileCheckFrequencyMs: number;
  httpCheckFrequencyMs: number;
  runtimeRequestTimeoutMs: number;
  /** A CRI endpoint, or LOCAL_RUNTIME_ENDPOINT for the embedded runtime. */
  containerRuntimeEndpoint: string;
  imageServiceEndpoint: string;
  healthzPort: number;
  healthzBindAddress: string;
  runOnce: boolean;
  maxPods: number;
  verbosity: number;
  loggingFormat: 'text' | 'json';
  featureGates: Record<string, boolean>;
  imageGC: { highThresholdPercent: number; lowThresholdPercent: number; minAgeMs: number; maxAgeMs: number };
  containerGC: { minAgeMs: number; maxPerPodContainer: number; maxContainers: number };
  podInfraContainerImage: string;
  /** API server mode when set. */
  kubeconfig?: string;
  nodeLabels: Record<string, string>;
  registerWithTaints: string;
  registerSchedulable: boolean;
  registerNode: boolean;
  nodeIP?: string;
  kubeReserved: string;
  systemReserved: string;
  evictionHard?: string;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  port: number;
  eventQps: number;
  eventBurst: number;
  kubeApiQps: number;
  kubeApiBurst: number;
  /** Unsafe sysctls (or patterns ending in *) pods may set. */
  allowedUnsafeSysctls: string[];
  /** DNS servers of ClusterFirst pods; empty: pods fall back to the node's resolv.conf. */
  clusterDNS: string[];
  clusterDomain: string;
  /** The node's resolver configuration ('' for none). */
  resolvConf: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';

/** The KubeletConfiguration fields kubelet-ts reads, with their Go defaults. */
const durationFields = ['syncFrequency', 'fileCheckFrequency', 'httpCheckFrequency', 'runtimeRequestTimeout', 'imageMinimumGCAge', 'imageMaximumGCAge', 'nodeStatusUpdateFrequency', 'nodeStatusReportFrequency'] as const;

interface KubeletConfigurationFile {
  staticPodPath?: string;
  staticPodURL?: string;
  staticPodURLHeader?: Record<string, string[]>;
  syncFrequency?: number;
  fileCheckFrequency?: number;
  httpCheckFrequency?: number;
  runtimeRequestTimeout?: number;
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  healthzPort?: number;
  healthzBindAddress?: string;
  podLogsDir?: string;
  maxPods?: number;
  logging?: { format?: string; verbosity?: number };
  featureGates?: Record<string, boolean>;
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  imageMinimumGCAge?: number;
  imageMaximumGCAge?: number;
  nodeStatusUpdateFrequency?: number;
  nodeStatusReportFrequency?: number;
  registerNode?: boolean;
  registerWithTaints?: Array<{ key: string; value?: string; effect: string }>;
  kubeReserved?: Record<string, string>;
  systemReserved?: Record<string, string>;
  evictionHard?: Record<string, string>;
  eventRecordQPS?: number;
  eventBurst?: number;
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  port?: number;
  allowedUnsafeSysctls?: string[];
  clusterDNS?: string[];
  clusterDomain?: string;
  resolvConf?: string;
}

/** Reads and checks a KubeletConfiguration file; errors name the file and the field. */
export function loadConfigFile(path: string): KubeletConfigurationFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`failed to load kubelet config file ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`failed to decode kubelet config file ${path}: ${(error as Error).message}`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`kubelet config file ${path}: expected a KubeletConfiguration object`);
  const object = raw as Record<string, unknown>;
  if (object.kind !== 'KubeletConfiguration') throw new ConfigError(`kubelet config file ${path}: kind is ${JSON.stringify(object.kind)}, expected "KubeletConfiguration"`);
  if (object.apiVersion !== KUBELET_CONFIG_API_VERSION) {
    throw new ConfigError(`kubelet config file ${path}: apiVersion is ${JSON.stringify(object.apiVersion)}, expected ${JSON.stringify(KUBELET_CONFIG_API_VERSION)}`);
  }
  const result: Record<string, unknown> = { ...object };
  for (const field of durationFields) {
    if (object[field] === undefined) continue;
    if (typeof object[field] !== 'string') throw new ConfigError(`kubelet config file ${path}: ${field}: must be a duration string such as "20s"`);
    try {
      result[field] = parseDuration(object[field] as string);
    } catch (error) {
      throw new ConfigError(`kubelet config file ${path}: ${field}: ${(error as Error).message}`);
    }
  }
  for (const field of ['healthzPort', 'maxPods', 'imageGCHighThresholdPercent', 'imageGCLowThresholdPercent'] as const) {
    if (object[field] !== undefined && (!Number.isInteger(object[field]) || (object[field] as number) < 0)) {
      throw new ConfigError(`kubelet config file ${path}: ${field}: must be a non-negative integer`);
    }
  }
  for (const field of ['allowedUnsafeSysctls', 'clusterDNS'] as const) {
    const value = object[field];
    if (value !== undefined && !(Array.isArray(value) && value.every((v) => typeof v === 'string'))) {
      throw new ConfigError(`kubelet config file ${path}: ${field}: must be a list of strings`);
    }
  }
  for (const field of ['clusterDomain', 'resolvConf'] as const) {
    if (object[field] !== undefined && typeof object[field] !== 'string') throw new ConfigError(`kubelet config file ${path}: ${field}: must be a string`);
  }
  const headers = object.staticPodURLHeader;
  if (headers !== undefined) {
    const valid =
      headers && typeof headers === 'object' && !Array.isArray(headers) &&
      Object.values(headers).every((values) => Array.isArray(values) && values.every((v) => typeof v === 'string'));
    if (!valid) throw new ConfigError(`kubelet config file ${path}: staticPodURLHeader: must map header names to lists of strings`);
  }
  return result as KubeletConfigurationFile;
}

const mapToList = (map: Record<string, string> | undefined) => Object.entries(map ?? {}).map(([k, v]) => `${k}=${v}`).join(',');

/** Parses --node-labels as Go does: key=value pairs; errors name the bad pair. */
export function parseNodeLabels(values: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of values) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new ConfigError(`invalid --node-labels entry ${JSON.stringify(pair)}: expected key=value`);
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}

/** Parses --manifest-url-header values as the Go kubelet does: exactly one ':' per 'key:value'. */
export function parseManifestUrlHeaders(values: string[]): Record<string, string[]> {
  const headers: Record<string, string[]> = {};
  for (const value of values) {
    const pieces = value.split(':');
    if (pieces.length !== 2) {
      throw new ConfigError(`manifest-url-header must have a single ':' key-value separator, got ${JSON.stringify(value)}`);
    }
    (headers[pieces[0]] ??= []).push(pieces[1]);
  }
  return headers;
}

/** Go's nodeutil.GetHostname: the override or the hostname, trimmed and lower-cased, never empty. */
export function resolveNodeName(override?: string): string {
  const name = (override ?? hostname()).trim().toLowerCase();
  if (name === '') throw new ConfigError('empty node name: set --hostname-override');
  return name;
}

export function resolveConfig(flags: KubeletFlags, cwd = process.cwd()): KubeletConfig {
  const file = flags.config ? loadConfigFile(resolve(cwd, flags.config)) : {};
  const abs = (path: string | undefined) => (path === undefined || path === '' ? undefined : isAbsolute(path) ? path : resolve(cwd, path));
  const rootDir = abs(flags.rootDir) ?? '/var/lib/kubelet';
  const endpoint = flags.containerRuntimeEndpoint ?? file.containerRuntimeEndpoint ?? LOCAL_RUNTIME_ENDPOINT;
  const format = flags.loggingFormat ?? file.logging?.format ?? 'text';
  if (format !== 'text' && format !== 'json') throw new ConfigError(`logging.format: must be text or json, got ${JSON.stringify(format)}`);
  const config: KubeletConfig = {
    nodeName: resolveNodeName(flags.hostnameOverride),
    rootDir,
    podLogsDir: abs(flags.podLogsDir) ?? abs(file.podLogsDir) ?? '/var/log/pods',
    staticPodPath: abs(flags.podManifestPath) ?? abs(file.staticPodPath),
    staticPodURL: flags.manifestUrl ?? file.staticPodURL,
    staticPodURLHeader: flags.manifestUrlHeader ? parseManifestUrlHeaders(flags.manifestUrlHeader) : (file.staticPodURLHeader ?? {}),
    syncFrequencyMs: flags.syncFrequencyMs ?? file.syncFrequency ?? 60_000,
    fileCheckFrequencyMs: flags.fileCheckFrequencyMs ?? file.fileCheckFrequency ?? 20_000,
    httpCheckFrequencyMs: flags.httpCheckFrequencyMs ?? file.httpCheckFrequency ?? 20_000,
    runtimeRequestTimeoutMs: flags.runtimeRequestTimeoutMs ?? file.runtimeRequestTimeout ?? 120_000,
    containerRuntimeEndpoint: endpoint,
    imageServiceEndpoint: flags.imageServiceEndpoint ?? file.imageServiceEndpoint ?? endpoint,
    healthzPort: flags.healthzPort ?? file.healthzPort ?? 10248,
    healthzBindAddress: flags.healthzBindAddress ?? file.healthzBindAddress ?? '127.0.0.1',
    runOnce: flags.runonce ?? false,
    maxPods: flags.maxPods ?? file.maxPods ?? 110,
    verbosity: flags.verbosity ?? file.logging?.verbosity ?? 0,
    loggingFormat: format,
    featureGates: { ...KNOWN_FEATURE_GATES, ...file.featureGates, ...flags.featureGates },
    imageGC: {
      highThresholdPercent: flags.imageGcHighThreshold ?? file.imageGCHighThresholdPercent ?? 85,
      lowThresholdPercent: flags.imageGcLowThreshold ?? file.imageGCLowThresholdPercent ?? 80,
      minAgeMs: flags.minimumImageTtlDurationMs ?? file.imageMinimumGCAge ?? 120_000,
      maxAgeMs: file.imageMaximumGCAge ?? 0,
    },
    // Go keeps these as (deprecated) flags only, with no KubeletConfiguration fields.
    containerGC: {
      minAgeMs: flags.minimumContainerTtlDurationMs ?? 0,
      maxPerPodContainer: flags.maximumDeadContainersPerContainer ?? 1,
      maxContainers: flags.maximumDeadContainers ?? -1,
    },
    podInfraContainerImage: flags.podInfraContainerImage ?? 'registry.k8s.io/pause:3.10',
    kubeconfig: abs(flags.kubeconfig),
    nodeLabels: parseNodeLabels(flags.nodeLabels ?? []),
    registerWithTaints: flags.registerWithTaints?.join(',') ?? (file.registerWithTaints ?? []).map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(','),
    registerSchedulable: flags.registerSchedulable ?? true,
    registerNode: flags.registerNode ?? file.registerNode ?? true,
    nodeIP: flags.nodeIp,
    kubeReserved: flags.kubeReserved?.join(',') ?? mapToList(file.kubeReserved),
    systemReserved: flags.systemReserved?.join(',') ?? mapToList(file.systemReserved),
    evictionHard: flags.evictionHard?.join(',') ?? (file.evictionHard ? Object.entries(file.evictionHard).map(([k, v]) => `${k}<${v}`).join(',') : undefined),
    nodeStatusUpdateFrequencyMs: flags.nodeStatusUpdateFrequencyMs ?? file.nodeStatusUpdateFrequency ?? 10_000,
    nodeStatusReportFrequencyMs: flags.nodeStatusReportFrequencyMs ?? file.nodeStatusReportFrequency ?? 300_000,
    port: flags.port ?? file.port ?? 10250,
    eventQps: flags.eventQps ?? file.eventRecordQPS ?? 50,
    eventBurst: flags.eventBurst ?? file.eventBurst ?? 100,
    kubeApiQps: flags.kubeApiQps ?? file.kubeAPIQPS ?? 50,
    kubeApiBurst: flags.kubeApiBurst ?? file.kubeAPIBurst ?? 100,
    allowedUnsafeSysctls: flags.allowedUnsafeSysctls ?? file.allowedUnsafeSysctls ?? [],
    clusterDNS: flags.clusterDns ?? file.clusterDNS ?? [],
    clusterDomain: flags.clusterDomain ?? file.clusterDomain ?? '',
    resolvConf: flags.resolvConf ?? file.resolvConf ?? '/etc/resolv.conf',
  };
  for (const ip of config.clusterDNS) {
    if (isIP(ip) === 0) throw new ConfigError(`clusterDNS: invalid IP address ${JSON.stringify(ip)}`);
  }
  try {
    validateImageGCPolicy(config.imageGC);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  for (const [gate, value] of Object.entries(config.featureGates)) {
    if (!(gate in KNOWN_FEATURE_GATES)) throw new ConfigError(`featureGates: unrecognized feature gate: ${gate}`);
    if (typeof value !== 'boolean') throw new ConfigError(`featureGates: ${gate}: must be true or false`);
  }
  if (config.syncFrequencyMs <= 0) throw new ConfigError('syncFrequency: must be greater than zero');
  return config;
}

/** Where the embedded local runtime keeps its socket and state under the kubelet's root dir. */
export function localRuntimePaths(config: KubeletConfig): { socketPath: string; rootDir: string } {
  return { socketPath: join(config.rootDir, 'local-runtime', 'local-runtime.sock'), rootDir: join(config.rootDir, 'local-runtime') };
}
