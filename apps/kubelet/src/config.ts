import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { getCiphers } from 'node:tls';
import { hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_POD_LOGS_ROOT_DIRECTORY, parseDuration, Quantity } from '@kubelet-ts/core';
import { validateImageGCPolicy } from '@kubelet-ts/image-gc';
import { validateShutdownGracePeriods } from '@kubelet-ts/node-shutdown';
import { DEFAULT_REMOTE_RUNTIME_ENDPOINT, LOCAL_RUNTIME_ENDPOINT, type KubeletFlags } from './flags.js';
import { checkKubeletConfigurationFields } from './config-schema.js';
import { FeatureGateError, resolveFeatureGates } from './feature-gates.js';

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
  /** The eviction manager's thresholds and tunables, as Go's maps (signal -> value). hard undefined: Go's defaults. */
  eviction: {
    hard?: Record<string, string>;
    soft: Record<string, string>;
    softGracePeriod: Record<string, string>;
    minimumReclaim: Record<string, string>;
    maxPodGracePeriodSeconds: number;
    pressureTransitionPeriodMs: number;
  };
  /** The container manager (Go: cm.NodeConfig). */
  cgroupsPerQOS: boolean;
  /** '/' when cgroupsPerQOS and none was given, as Go defaults it. */
  cgroupRoot: string;
  cgroupDriver: 'cgroupfs' | 'systemd';
  enforceNodeAllocatable: string[];
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodMs: number;
  /** Go --protect-kernel-defaults: fail when a kernel tunable differs from the kubelet's value rather than set it. */
  protectKernelDefaults: boolean;
  podPidsLimit: number;
  oomScoreAdj: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  /** Graceful node shutdown (config file only, as in Go): 0 disables it. */
  shutdownGracePeriodMs: number;
  shutdownGracePeriodCriticalPodsMs: number;
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
  /** The secure server's address (Go --address). */
  address: string;
  /** The read-only port (0: off). */
  readOnlyPort: number;
  /** The serving certificate: these files, or a self-signed pair under certDir. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir: string;
  /** --bootstrap-kubeconfig: TLS bootstrap of the client certificate when --kubeconfig is missing or expired. */
  bootstrapKubeconfig?: string;
  /** Renew the client certificate (rotateCertificates) and request and renew the serving one (serverTLSBootstrap). */
  rotateCertificates: boolean;
  serverTLSBootstrap: boolean;
  /** Node's TLS version name (TLSv1.2, ...), from Go's VersionTLS12 form. */
  tlsMinVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL cipher names, from Go's cipher suite names. */
  tlsCipherSuites: string[];
  authentication: { x509ClientCAFile?: string; webhookEnabled: boolean; webhookCacheTTLMs: number; anonymousEnabled: boolean };
  authorization: { mode: 'AlwaysAllow' | 'Webhook'; cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
  enableDebuggingHandlers: boolean;
  enableSystemLogHandler: boolean;
  /** Container log rotation: the size a log is rotated at (bytes) and how many files are kept per container. */
  containerLogMaxSizeBytes: number;
  containerLogMaxFiles: number;
  /** What resolving the configuration found worth a warning (unknown config fields, gates); the kubelet logs them as it starts. */
  warnings: ConfigWarning[];
}

/** A warning about the configuration, logged as the kubelet starts. */
export interface ConfigWarning {
  msg: string;
  kv?: Record<string, unknown>;
}

/** Go's TLS version names (--tls-min-version) as node:tls names them. */
const TLS_VERSIONS: Record<string, KubeletConfig['tlsMinVersion']> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/**
 * Go's cipher suite names (--tls-cipher-suites: crypto/tls CipherSuites() and InsecureCipherSuites(), and the two
 * older CHACHA20 names component-base keeps) as OpenSSL names them. TLS 1.3 suites are accepted and, as in Go, not
 * configurable (null); suites this Node.js's OpenSSL cannot do (RC4, 3DES) are accepted with a warning and skipped.
 */
const TLS_CIPHER_SUITES: Record<string, string | null> = {
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
};

/** Go's InsecureCipherSuites(): accepted with Go's warning "Use of insecure cipher '<name>' detected.". */
const INSECURE_TLS_CIPHER_SUITES: Record<string, string> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
};

/** Go's tls.VersionTLS12-style name to node's; errors name the field and carry Go's text. */
export function parseTLSVersion(value: string | undefined, field: string): KubeletConfig['tlsMinVersion'] {
  if (value === undefined || value === '') return undefined;
  const version = TLS_VERSIONS[value];
  if (!version) throw new ConfigError(`${field}: unknown tls version ${JSON.stringify(value)}: valid values are ${Object.keys(TLS_VERSIONS).join(', ')}`);
  return version;
}

/**
 * Go's cliflag.TLSCipherSuites: Go's cipher suite names to OpenSSL's. An unknown name is Go's error; an insecure
 * one Go's warning; TLS 1.3 suites are not configurable (as in Go) and one OpenSSL cannot do is skipped with a warning.
 */
export function parseCipherSuites(values: string[], field: string, warnings: ConfigWarning[] = []): string[] {
  const available = new Set(getCiphers().map((name) => name.toUpperCase()));
  const ciphers: string[] = [];
  for (const name of values) {
    const insecure = INSECURE_TLS_CIPHER_SUITES[name];
    const cipher = insecure ?? TLS_CIPHER_SUITES[name];
    if (cipher === undefined) throw new ConfigError(`${field}: Cipher suite ${name} not supported or doesn't exist`);
    if (insecure) warnings.push({ msg: `Use of insecure cipher '${name}' detected.` });
    if (cipher === null) continue;
    if (!available.has(cipher)) {
      warnings.push({ msg: `Cipher suite ${name} is not available in this Node.js's OpenSSL: skipped`, kv: { field, openssl: cipher } });
      continue;
    }
    if (!ciphers.includes(cipher)) ciphers.push(cipher);
  }
  if (values.some((name) => TLS_CIPHER_SUITES[name] !== null) && ciphers.length === 0) {
    throw new ConfigError(`${field}: none of the cipher suites ${values.join(', ')} is available in this Node.js's OpenSSL`);
  }
  return ciphers;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';

/** The KubeletConfiguration fields kubelet-ts reads, with their Go defaults. */
const durationFields = [
  'syncFrequency',
  'fileCheckFrequency',
  'httpCheckFrequency',
  'runtimeRequestTimeout',
  'imageMinimumGCAge',
  'imageMaximumGCAge',
  'nodeStatusUpdateFrequency',
  'nodeStatusReportFrequency',
  'evictionPressureTransitionPeriod',
  'cpuCFSQuotaPeriod',
  'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods',
] as const;

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
  shutdownGracePeriod?: number;
  shutdownGracePeriodCriticalPods?: number;
  registerNode?: boolean;
  registerWithTaints?: Array<{ key: string; value?: string; effect: string }>;
  kubeReserved?: Record<string, string>;
  systemReserved?: Record<string, string>;
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, string>;
  evictionMinimumReclaim?: Record<string, string>;
  evictionMaxPodGracePeriod?: number;
  evictionPressureTransitionPeriod?: number;
  cgroupsPerQOS?: boolean;
  cgroupRoot?: string;
  cgroupDriver?: string;
  enforceNodeAllocatable?: string[];
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriod?: number;
  protectKernelDefaults?: boolean;
  podPidsLimit?: number;
  oomScoreAdj?: number;
  eventRecordQPS?: number;
  eventBurst?: number;
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  port?: number;
  allowedUnsafeSysctls?: string[];
  clusterDNS?: string[];
  clusterDomain?: string;
  resolvConf?: string;
  address?: string;
  readOnlyPort?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  rotateCertificates?: boolean;
  serverTLSBootstrap?: boolean;
  tlsMinVersion?: string;
  tlsCipherSuites?: string[];
  authentication?: {
    x509?: { clientCAFile?: string };
    webhook?: { enabled?: boolean; cacheTTL?: number };
    anonymous?: { enabled?: boolean };
  };
  authorization?: { mode?: string; webhook?: { cacheAuthorizedTTL?: number; cacheUnauthorizedTTL?: number } };
  enableDebuggingHandlers?: boolean;
  enableSystemLogHandler?: boolean;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
}

/**
 * Reads and checks a KubeletConfiguration file; errors name the file and the field. Unknown fields are not errors
 * (Go decodes leniently when strict decoding fails): they are pushed to `warnings`, each named by its path.
 */
export function loadConfigFile(path: string, warnings: ConfigWarning[] = []): KubeletConfigurationFile {
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
  const fields = checkKubeletConfigurationFields(object);
  if (fields.typeErrors.length > 0) throw new ConfigError(`kubelet config file ${path}: ${fields.typeErrors.join('; ')}`);
  if (fields.unknown.length > 0) {
    // Go (v1.26+): the strict decoder's error names every unknown field; the lenient decoder then drops them.
    warnings.push({
      msg: 'Using lenient decoding as strict decoding failed',
      kv: { path, err: `strict decoding error: ${fields.unknown.map((field) => `unknown field ${JSON.stringify(field)}`).join(', ')}` },
    });
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
  const nestedDuration = (section: Record<string, unknown> | undefined, field: string, name: string) => {
    if (!section || section[field] === undefined) return;
    if (typeof section[field] !== 'string') throw new ConfigError(`kubelet config file ${path}: ${name}: must be a duration string such as "2m"`);
    try {
      section[field] = parseDuration(section[field] as string);
    } catch (error) {
      throw new ConfigError(`kubelet config file ${path}: ${name}: ${(error as Error).message}`);
    }
  };
  const authn = object.authentication as Record<string, Record<string, unknown> | undefined> | undefined;
  const authz = object.authorization as Record<string, Record<string, unknown> | undefined> | undefined;
  if (authn !== undefined || authz !== undefined) {
    result.authentication = authn && JSON.parse(JSON.stringify(authn));
    result.authorization = authz && JSON.parse(JSON.stringify(authz));
    const copiedAuthn = result.authentication as typeof authn;
    const copiedAuthz = result.authorization as typeof authz;
    nestedDuration(copiedAuthn?.webhook, 'cacheTTL', 'authentication.webhook.cacheTTL');
    nestedDuration(copiedAuthz?.webhook, 'cacheAuthorizedTTL', 'authorization.webhook.cacheAuthorizedTTL');
    nestedDuration(copiedAuthz?.webhook, 'cacheUnauthorizedTTL', 'authorization.webhook.cacheUnauthorizedTTL');
  }
  for (const field of ['healthzPort', 'maxPods', 'readOnlyPort', 'containerLogMaxFiles', 'imageGCHighThresholdPercent', 'imageGCLowThresholdPercent'] as const) {
    if (object[field] !== undefined && (!Number.isInteger(object[field]) || (object[field] as number) < 0)) {
      throw new ConfigError(`kubelet config file ${path}: ${field}: must be a non-negative integer`);
    }
  }
  for (const field of ['evictionMaxPodGracePeriod', 'podPidsLimit', 'oomScoreAdj'] as const) {
    if (object[field] !== undefined && !Number.isInteger(object[field])) throw new ConfigError(`kubelet config file ${path}: ${field}: must be an integer`);
  }
  for (const field of ['cgroupsPerQOS', 'cpuCFSQuota'] as const) {
    if (object[field] !== undefined && typeof object[field] !== 'boolean') throw new ConfigError(`kubelet config file ${path}: ${field}: must be true or false`);
  }
  for (const field of ['evictionHard', 'evictionSoft', 'evictionSoftGracePeriod', 'evictionMinimumReclaim'] as const) {
    const value = object[field];
    const valid = value === undefined || (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string'));
    if (!valid) throw new ConfigError(`kubelet config file ${path}: ${field}: must map eviction signals to strings`);
  }
  for (const field of ['allowedUnsafeSysctls', 'clusterDNS', 'enforceNodeAllocatable'] as const) {
    const value = object[field];
    if (value !== undefined && !(Array.isArray(value) && value.every((v) => typeof v === 'string'))) {
      throw new ConfigError(`kubelet config file ${path}: ${field}: must be a list of strings`);
    }
  }
  for (const field of ['clusterDomain', 'resolvConf', 'cgroupRoot', 'cgroupDriver', 'systemReservedCgroup', 'kubeReservedCgroup'] as const) {
    if (object[field] !== undefined && typeof object[field] !== 'string') throw new ConfigError(`kubelet config file ${path}: ${field}: must be a string`);
  }
  const headers = object.staticPodURLHeader;
  if (headers !== undefined) {
    const valid =
      headers && typeof headers === 'object' && !Array.isArray(headers) &&
      Object.values(headers).every((values) => Array.isArray(values) && values.every((v) => typeof v === 'string'));
    if (!valid) throw new ConfigError(`kubelet config file ${path}: staticPodURLHeader: must map header names to lists of strings`);
  }
  return unsetGoZeroValues(result as KubeletConfigurationFile);
}

/**
 * The fields Go's SetDefaults_KubeletConfiguration (v1beta1) defaults when they hold their zero value, not only when
 * they are missing: kubeadm writes every unset duration as `0s` (metav1.Duration is a struct, which omitempty keeps),
 * so `syncFrequency: 0s` means 1m, not zero. Pointer fields (healthzPort, eventRecordQPS, kubeAPIQPS, oomScoreAdj,
 * imageGC*ThresholdPercent, containerLogMaxFiles, cpuCFSQuotaPeriod, ...) keep an explicit 0, and so do the fields
 * Go does not default (readOnlyPort, shutdownGracePeriod*, evictionMaxPodGracePeriod, imageMaximumGCAge).
 */
const ZERO_MEANS_DEFAULT = [
  'syncFrequency',
  'fileCheckFrequency',
  'httpCheckFrequency',
  'runtimeRequestTimeout',
  'imageMinimumGCAge',
  'nodeStatusUpdateFrequency',
  'evictionPressureTransitionPeriod',
  'port',
  'maxPods',
  'eventBurst',
  'kubeAPIBurst',
] as const;
/** The string fields Go defaults when empty (a `resolvConf: ""` in the file is /etc/resolv.conf; only --resolv-conf= turns it off). */
const EMPTY_MEANS_DEFAULT = ['address', 'healthzBindAddress', 'cgroupDriver', 'resolvConf', 'containerLogMaxSize'] as const;

/** Drops the zero values Go treats as unset (see {@link ZERO_MEANS_DEFAULT}), so the defaults apply as in Go. */
function unsetGoZeroValues(file: KubeletConfigurationFile): KubeletConfigurationFile {
  const out: KubeletConfigurationFile = { ...file };
  // Go: "For backward compatibility, NodeStatusReportFrequency's default value is set to NodeStatusUpdateFrequency
  // if NodeStatusUpdateFrequency is set explicitly" (before the update frequency gets its own default).
  if (!out.nodeStatusReportFrequency) {
    if (out.nodeStatusUpdateFrequency) out.nodeStatusReportFrequency = out.nodeStatusUpdateFrequency;
    else delete out.nodeStatusReportFrequency;
  }
  for (const field of ZERO_MEANS_DEFAULT) if (out[field] === 0) delete out[field];
  for (const field of EMPTY_MEANS_DEFAULT) if (out[field] === '') delete out[field];
  // Go: nil or negative is -1 (the node allocatable's pid limit).
  if (out.podPidsLimit !== undefined && out.podPidsLimit !== null && out.podPidsLimit < 0) out.podPidsLimit = -1;
  if (out.authentication?.webhook?.cacheTTL === 0) out.authentication = { ...out.authentication, webhook: { ...out.authentication.webhook, cacheTTL: undefined } };
  if (out.authorization) {
    const webhook = out.authorization.webhook && { ...out.authorization.webhook };
    if (webhook?.cacheAuthorizedTTL === 0) webhook.cacheAuthorizedTTL = undefined;
    if (webhook?.cacheUnauthorizedTTL === 0) webhook.cacheUnauthorizedTTL = undefined;
    out.authorization = { ...out.authorization, mode: out.authorization.mode === '' ? undefined : out.authorization.mode, webhook };
  }
  return out;
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
  const warnings: ConfigWarning[] = [];
  checkContainerRuntime(flags.containerRuntime);
  const file = flags.config ? loadConfigFile(resolve(cwd, flags.config), warnings) : {};
  const gates = resolveGates(file.featureGates, flags.featureGates);
  warnings.push(...gates.warnings);
  const abs = (path: string | undefined) => (path === undefined || path === '' ? undefined : isAbsolute(path) ? path : resolve(cwd, path));
  const rootDir = abs(flags.rootDir) ?? '/var/lib/kubelet';
  // The embedded runtime isolates nothing: a node that joins a cluster uses it only when it is named.
  const endpoint =
    flags.containerRuntimeEndpoint ?? file.containerRuntimeEndpoint ?? (flags.kubeconfig !== undefined ? DEFAULT_REMOTE_RUNTIME_ENDPOINT : LOCAL_RUNTIME_ENDPOINT);
  // Go (parseEndpointWithFallbackProtocol): a bare socket path still works, with this warning; kubeadm 1.20 writes one
  // when it found containerd itself (its known sockets have no scheme).
  if (endpoint.startsWith('/')) {
    warnings.push({ msg: `Using ${JSON.stringify(endpoint)} as endpoint is deprecated, please consider using full url format ${JSON.stringify(`unix://${endpoint}`)}.` });
  }
  const format = flags.loggingFormat ?? file.logging?.format ?? 'text';
  if (format !== 'text' && format !== 'json') throw new ConfigError(`logging.format: must be text or json, got ${JSON.stringify(format)}`);
  const config: KubeletConfig = {
    nodeName: resolveNodeName(flags.hostnameOverride),
    rootDir,
    podLogsDir: abs(flags.podLogsDir) ?? abs(file.podLogsDir) ?? DEFAULT_POD_LOGS_ROOT_DIRECTORY,
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
    featureGates: gates.gates,
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
    bootstrapKubeconfig: abs(flags.bootstrapKubeconfig),
    rotateCertificates: flags.rotateCertificates ?? file.rotateCertificates ?? false,
    serverTLSBootstrap: flags.rotateServerCertificates ?? file.serverTLSBootstrap ?? false,
    nodeLabels: parseNodeLabels(flags.nodeLabels ?? []),
    registerWithTaints: flags.registerWithTaints?.join(',') ?? (file.registerWithTaints ?? []).map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(','),
    registerSchedulable: flags.registerSchedulable ?? true,
    registerNode: flags.registerNode ?? file.registerNode ?? true,
    nodeIP: flags.nodeIp,
    kubeReserved: flags.kubeReserved?.join(',') ?? mapToList(file.kubeReserved),
    systemReserved: flags.systemReserved?.join(',') ?? mapToList(file.systemReserved),
    evictionHard: flags.evictionHard?.join(',') ?? (file.evictionHard ? Object.entries(file.evictionHard).map(([k, v]) => `${k}<${v}`).join(',') : undefined),
    eviction: {
      hard: flags.evictionHard ? parseSignalMap(flags.evictionHard, '<', '--eviction-hard') : file.evictionHard,
      soft: flags.evictionSoft ? parseSignalMap(flags.evictionSoft, '<', '--eviction-soft') : (file.evictionSoft ?? {}),
      softGracePeriod: flags.evictionSoftGracePeriod ? parseSignalMap(flags.evictionSoftGracePeriod, '=', '--eviction-soft-grace-period') : (file.evictionSoftGracePeriod ?? {}),
      minimumReclaim: flags.evictionMinimumReclaim ? parseSignalMap(flags.evictionMinimumReclaim, '=', '--eviction-minimum-reclaim') : (file.evictionMinimumReclaim ?? {}),
      maxPodGracePeriodSeconds: flags.evictionMaxPodGracePeriod ?? file.evictionMaxPodGracePeriod ?? 0,
      pressureTransitionPeriodMs: flags.evictionPressureTransitionPeriodMs ?? file.evictionPressureTransitionPeriod ?? 300_000,
    },
    cgroupsPerQOS: flags.cgroupsPerQos ?? file.cgroupsPerQOS ?? endpoint !== LOCAL_RUNTIME_ENDPOINT,
    // Go's default is [pods], which needs cgroupsPerQOS: without it (the embedded runtime's default) nothing is enforced.
    cgroupRoot: flags.cgroupRoot ?? file.cgroupRoot ?? '',
    cgroupDriver: parseCgroupDriver(flags.cgroupDriver ?? file.cgroupDriver ?? 'cgroupfs'),
    enforceNodeAllocatable: flags.enforceNodeAllocatable ?? file.enforceNodeAllocatable ?? [],
    systemReservedCgroup: flags.systemReservedCgroup ?? file.systemReservedCgroup ?? '',
    kubeReservedCgroup: flags.kubeReservedCgroup ?? file.kubeReservedCgroup ?? '',
    cpuCFSQuota: flags.cpuCfsQuota ?? file.cpuCFSQuota ?? true,
    cpuCFSQuotaPeriodMs: flags.cpuCfsQuotaPeriodMs ?? file.cpuCFSQuotaPeriod ?? 100,
    protectKernelDefaults: flags.protectKernelDefaults ?? file.protectKernelDefaults ?? false,
    podPidsLimit: flags.podMaxPids ?? file.podPidsLimit ?? -1,
    oomScoreAdj: flags.oomScoreAdj ?? file.oomScoreAdj ?? -999,
    nodeStatusUpdateFrequencyMs: flags.nodeStatusUpdateFrequencyMs ?? file.nodeStatusUpdateFrequency ?? 10_000,
    nodeStatusReportFrequencyMs: flags.nodeStatusReportFrequencyMs ?? file.nodeStatusReportFrequency ?? 300_000,
    shutdownGracePeriodMs: file.shutdownGracePeriod ?? 0,
    shutdownGracePeriodCriticalPodsMs: file.shutdownGracePeriodCriticalPods ?? 0,
    port: flags.port ?? file.port ?? 10250,
    eventQps: flags.eventQps ?? file.eventRecordQPS ?? 50,
    eventBurst: flags.eventBurst ?? file.eventBurst ?? 100,
    kubeApiQps: flags.kubeApiQps ?? file.kubeAPIQPS ?? 50,
    kubeApiBurst: flags.kubeApiBurst ?? file.kubeAPIBurst ?? 100,
    allowedUnsafeSysctls: flags.allowedUnsafeSysctls ?? file.allowedUnsafeSysctls ?? [],
    clusterDNS: flags.clusterDns ?? file.clusterDNS ?? [],
    clusterDomain: flags.clusterDomain ?? file.clusterDomain ?? '',
    resolvConf: flags.resolvConf ?? file.resolvConf ?? '/etc/resolv.conf',
    address: flags.address ?? file.address ?? '0.0.0.0',
    readOnlyPort: flags.readOnlyPort ?? file.readOnlyPort ?? 0,
    tlsCertFile: abs(flags.tlsCertFile) ?? abs(file.tlsCertFile),
    tlsPrivateKeyFile: abs(flags.tlsPrivateKeyFile) ?? abs(file.tlsPrivateKeyFile),
    certDir: abs(flags.certDir) ?? join(rootDir, 'pki'),
    tlsMinVersion: parseTLSVersion(flags.tlsMinVersion ?? file.tlsMinVersion, flags.tlsMinVersion !== undefined ? '--tls-min-version' : 'tlsMinVersion'),
    tlsCipherSuites: parseCipherSuites(flags.tlsCipherSuites ?? file.tlsCipherSuites ?? [], flags.tlsCipherSuites !== undefined ? '--tls-cipher-suites' : 'tlsCipherSuites', warnings),
    authentication: {
      x509ClientCAFile: abs(flags.clientCaFile) ?? abs(file.authentication?.x509?.clientCAFile),
      // Go's KubeletConfiguration defaults: webhook on, anonymous off. Standalone there is no API server to ask.
      webhookEnabled: flags.authenticationTokenWebhook ?? file.authentication?.webhook?.enabled ?? flags.kubeconfig !== undefined,
      webhookCacheTTLMs: flags.authenticationTokenWebhookCacheTtlMs ?? file.authentication?.webhook?.cacheTTL ?? 120_000,
      anonymousEnabled: flags.anonymousAuth ?? file.authentication?.anonymous?.enabled ?? false,
    },
    authorization: {
      mode: parseAuthorizationMode(flags.authorizationMode ?? file.authorization?.mode ?? (flags.kubeconfig !== undefined ? 'Webhook' : 'AlwaysAllow')),
      cacheAuthorizedTTLMs: flags.authorizationWebhookCacheAuthorizedTtlMs ?? file.authorization?.webhook?.cacheAuthorizedTTL ?? 300_000,
      cacheUnauthorizedTTLMs: flags.authorizationWebhookCacheUnauthorizedTtlMs ?? file.authorization?.webhook?.cacheUnauthorizedTTL ?? 30_000,
    },
    enableDebuggingHandlers: flags.enableDebuggingHandlers ?? file.enableDebuggingHandlers ?? true,
    enableSystemLogHandler: file.enableSystemLogHandler ?? true,
    containerLogMaxSizeBytes: parseLogMaxSize(flags.containerLogMaxSize ?? file.containerLogMaxSize ?? '10Mi'),
    containerLogMaxFiles: flags.containerLogMaxFiles ?? file.containerLogMaxFiles ?? 5,
    warnings,
  };
  if (config.containerLogMaxFiles < 2) throw new ConfigError(`containerLogMaxFiles: Invalid value: ${config.containerLogMaxFiles}: must be greater than 1`);
  if (config.authentication.webhookEnabled && !config.kubeconfig) {
    throw new ConfigError('authentication.webhook.enabled: no API server (--kubeconfig) to send TokenReviews to: cannot use webhook authentication');
  }
  if (config.authorization.mode === 'Webhook' && !config.kubeconfig) {
    throw new ConfigError('authorization.mode: no API server (--kubeconfig) to send SubjectAccessReviews to: cannot use webhook authorization');
  }
  for (const ip of config.clusterDNS) {
    if (isIP(ip) === 0) throw new ConfigError(`clusterDNS: invalid IP address ${JSON.stringify(ip)}`);
  }
  try {
    validateImageGCPolicy(config.imageGC);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (config.syncFrequencyMs <= 0) throw new ConfigError('syncFrequency: must be greater than zero');
  if (config.bootstrapKubeconfig && !config.kubeconfig) {
    throw new ConfigError('--bootstrap-kubeconfig needs --kubeconfig: the path the bootstrapped kubeconfig is written to');
  }
  const shutdownErrors = validateShutdownGracePeriods(
    { shutdownGracePeriodMs: config.shutdownGracePeriodMs, shutdownGracePeriodCriticalPodsMs: config.shutdownGracePeriodCriticalPodsMs },
    config.featureGates.GracefulNodeShutdown,
  );
  if (shutdownErrors.length > 0) throw new ConfigError(shutdownErrors.join(', '));
  if (!flags.enforceNodeAllocatable && !file.enforceNodeAllocatable && config.cgroupsPerQOS) config.enforceNodeAllocatable = ['pods'];
  validateResourceManagement(config);
  return config;
}

/** Go: SetFromMap of the config file's featureGates with --feature-gates over them; errors name the field. */
function resolveGates(fromFile: Record<string, boolean> | undefined, fromFlags: Record<string, boolean> | undefined) {
  try {
    return resolveFeatureGates({ ...fromFile, ...fromFlags });
  } catch (error) {
    if (error instanceof FeatureGateError) throw new ConfigError(`featureGates: ${error.message}`);
    throw error;
  }
}

/** Go's mapStringString flags with a custom separator ('<' for thresholds, '=' for grace periods and reclaims). */
function parseSignalMap(values: string[], separator: '<' | '=', flag: string): Record<string, string> {
  const map: Record<string, string> = {};
  for (const pair of values) {
    const at = pair.indexOf(separator);
    if (at <= 0) throw new ConfigError(`${flag}: invalid entry ${JSON.stringify(pair)}: expected signal${separator}value`);
    map[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return map;
}

/**
 * Go v1.20's --container-runtime: 'docker' runs the built-in dockershim, 'remote' a CRI runtime, anything else is
 * "unsupported CRI runtime". kubelet-ts has no dockershim, so 'docker' is refused with the way out.
 */
function checkContainerRuntime(runtime: string | undefined): void {
  if (runtime === undefined || runtime === 'remote') return;
  if (runtime === 'docker') {
    throw new ConfigError(
      '--container-runtime=docker: kubelet-ts has no dockershim; run a CRI runtime (containerd, CRI-O, or cri-dockerd in front of Docker) and pass --container-runtime=remote --container-runtime-endpoint=<its socket>',
    );
  }
  throw new ConfigError(`--container-runtime: unsupported CRI runtime: ${JSON.stringify(runtime)}`);
}

function parseCgroupDriver(driver: string): KubeletConfig['cgroupDriver'] {
  if (driver !== 'cgroupfs' && driver !== 'systemd') throw new ConfigError(`cgroupDriver: invalid value ${JSON.stringify(driver)}: must be cgroupfs or systemd`);
  return driver;
}

/** Go: ValidateKubeletConfiguration's rules for the container manager and eviction. */
function validateResourceManagement(config: KubeletConfig): void {
  const levels = config.enforceNodeAllocatable;
  for (const level of levels) {
    if (!['pods', 'system-reserved', 'kube-reserved', 'none'].includes(level)) {
      throw new ConfigError(`invalid option ${JSON.stringify(level)} specified for enforceNodeAllocatable (--enforce-node-allocatable) setting. Valid options are "pods", "system-reserved", "kube-reserved", or "none"`);
    }
  }
  if (levels.includes('none') && levels.length > 1) {
    throw new ConfigError('invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified');
  }
  if (!config.cgroupsPerQOS && levels.some((level) => level !== 'none')) {
    throw new ConfigError('invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) is not supported unless cgroupsPerQOS (--cgroups-per-qos) feature is turned on');
  }
  if (levels.includes('system-reserved') && config.systemReservedCgroup === '') {
    throw new ConfigError('invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)');
  }
  if (levels.includes('kube-reserved') && config.kubeReservedCgroup === '') {
    throw new ConfigError('invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "kube-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)');
  }
  if (config.cgroupsPerQOS && config.cgroupRoot === '') config.cgroupRoot = '/';
  if (config.cgroupRoot !== '' && !config.cgroupRoot.startsWith('/')) throw new ConfigError(`cgroupRoot: invalid value ${JSON.stringify(config.cgroupRoot)}: must be an absolute cgroup name`);
  if (config.cpuCFSQuotaPeriodMs < 1 || config.cpuCFSQuotaPeriodMs > 1000) {
    throw new ConfigError(`invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) ${config.cpuCFSQuotaPeriodMs}ms must be between 1ms and 1sec, inclusive`);
  }
  if (config.oomScoreAdj < -1000 || config.oomScoreAdj > 1000) {
    throw new ConfigError(`invalid configuration: oomScoreAdj (--oom-score-adj) ${config.oomScoreAdj} must be between -1000 and 1000, inclusive`);
  }
  if (config.podPidsLimit < -1) throw new ConfigError(`invalid configuration: podPidsLimit (--pod-max-pids) ${config.podPidsLimit} must be -1 or greater`);
}

function parseAuthorizationMode(mode: string): KubeletConfig['authorization']['mode'] {
  if (mode !== 'AlwaysAllow' && mode !== 'Webhook') throw new ConfigError(`authorization.mode: invalid value ${JSON.stringify(mode)}: must be AlwaysAllow or Webhook`);
  return mode;
}

function parseLogMaxSize(value: string): number {
  let bytes: number;
  try {
    // Go: logs.NewContainerLogManager reads the size as Quantity.Value(), rounded up.
    bytes = Quantity.parse(value).value();
  } catch (error) {
    throw new ConfigError(`containerLogMaxSize: Invalid value: ${JSON.stringify(value)}: ${(error as Error).message}`);
  }
  if (!(bytes > 0)) throw new ConfigError(`containerLogMaxSize: Invalid value: ${JSON.stringify(value)}: must be greater than 0`);
  return bytes;
}

/** Where the embedded local runtime keeps its socket and state under the kubelet's root dir. */
export function localRuntimePaths(config: KubeletConfig): { socketPath: string; rootDir: string } {
  return { socketPath: join(config.rootDir, 'local-runtime', 'local-runtime.sock'), rootDir: join(config.rootDir, 'local-runtime') };
}
