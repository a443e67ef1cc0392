import { parseDuration } from '@kubelet-ts/core';

/**
 * The kubelet's command line, with the Go kubelet's flag names. Every flag has a KubeletConfiguration
 * field or is a process-level option; values given on the command line win over the config file.
 */
export interface KubeletFlags {
  config?: string;
  podManifestPath?: string;
  manifestUrl?: string;
  manifestUrlHeader?: string[];
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  hostnameOverride?: string;
  rootDir?: string;
  runonce?: boolean;
  syncFrequencyMs?: number;
  fileCheckFrequencyMs?: number;
  httpCheckFrequencyMs?: number;
  runtimeRequestTimeoutMs?: number;
  healthzPort?: number;
  healthzBindAddress?: string;
  podLogsDir?: string;
  verbosity?: number;
  loggingFormat?: 'text' | 'json';
  featureGates?: Record<string, boolean>;
  imageGcHighThreshold?: number;
  imageGcLowThreshold?: number;
  minimumImageTtlDurationMs?: number;
  minimumContainerTtlDurationMs?: number;
  maximumDeadContainersPerContainer?: number;
  maximumDeadContainers?: number;
  podInfraContainerImage?: string;
  kubeconfig?: string;
  nodeLabels?: string[];
  registerWithTaints?: string[];
  registerSchedulable?: boolean;
  registerNode?: boolean;
  nodeIp?: string;
  kubeReserved?: string[];
  systemReserved?: string[];
  evictionHard?: string[];
  nodeStatusUpdateFrequencyMs?: number;
  nodeStatusReportFrequencyMs?: number;
  maxPods?: number;
  port?: number;
  eventQps?: number;
  eventBurst?: number;
  kubeApiQps?: number;
  kubeApiBurst?: number;
  allowedUnsafeSysctls?: string[];
  clusterDns?: string[];
  clusterDomain?: string;
  resolvConf?: string;
  address?: string;
  readOnlyPort?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir?: string;
  tlsMinVersion?: string;
  tlsCipherSuites?: string[];
  clientCaFile?: string;
  anonymousAuth?: boolean;
  authenticationTokenWebhook?: boolean;
  authenticationTokenWebhookCacheTtlMs?: number;
  authorizationMode?: string;
  authorizationWebhookCacheAuthorizedTtlMs?: number;
  authorizationWebhookCacheUnauthorizedTtlMs?: number;
  enableDebuggingHandlers?: boolean;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  help?: boolean;
  version?: boolean;
}

type FlagKind = 'string' | 'strings' | 'bool' | 'duration' | 'int' | 'port' | 'gates';

interface FlagSpec {
  key: keyof KubeletFlags;
  kind: FlagKind;
  usage: string;
  defaultText?: string;
}

export const LOCAL_RUNTIME_ENDPOINT = 'local';

/** The feature gates kubelet-ts knows, with their defaults (as in the Go kubelet). */
export const KNOWN_FEATURE_GATES: Record<string, boolean> = {
  EventedPLEG: false,
};

const specs: Record<string, FlagSpec> = {
  config: { key: 'config', kind: 'string', usage: 'The kubelet will load its initial configuration from this file (a KubeletConfiguration, YAML or JSON). Command-line flags override it.' },
  'pod-manifest-path': { key: 'podManifestPath', kind: 'string', usage: 'Path to the directory (or file) of static pod manifests to run.' },
  'manifest-url': { key: 'manifestUrl', kind: 'string', usage: 'URL for accessing additional pod specifications to run.' },
  'manifest-url-header': { key: 'manifestUrlHeader', kind: 'strings', usage: "HTTP header for --manifest-url as 'key:value'; may be repeated or comma-separated." },
  'container-runtime-endpoint': { key: 'containerRuntimeEndpoint', kind: 'string', usage: `The CRI endpoint, e.g. unix:///run/containerd/containerd.sock. "${LOCAL_RUNTIME_ENDPOINT}" starts the embedded local runtime (no isolation).`, defaultText: LOCAL_RUNTIME_ENDPOINT },
  'image-service-endpoint': { key: 'imageServiceEndpoint', kind: 'string', usage: 'The CRI image service endpoint; defaults to --container-runtime-endpoint.' },
  'hostname-override': { key: 'hostnameOverride', kind: 'string', usage: 'If non-empty, use this string as the node name instead of the hostname.' },
  'root-dir': { key: 'rootDir', kind: 'string', usage: 'Directory path for managing kubelet files.', defaultText: '/var/lib/kubelet' },
  runonce: { key: 'runonce', kind: 'bool', usage: 'Run the pods from the static sources once, report their results and exit.' },
  'sync-frequency': { key: 'syncFrequencyMs', kind: 'duration', usage: 'Max period between synchronizing running containers and config.', defaultText: '1m0s' },
  'file-check-frequency': { key: 'fileCheckFrequencyMs', kind: 'duration', usage: 'Duration between checking config files for new data.', defaultText: '20s' },
  'http-check-frequency': { key: 'httpCheckFrequencyMs', kind: 'duration', usage: 'Duration between checking http for new data.', defaultText: '20s' },
  'runtime-request-timeout': { key: 'runtimeRequestTimeoutMs', kind: 'duration', usage: 'Timeout of all runtime requests except long running ones (pull, exec, logs).', defaultText: '2m0s' },
  'healthz-port': { key: 'healthzPort', kind: 'port', usage: 'The port of the localhost healthz endpoint (0 disables it).', defaultText: '10248' },
  'healthz-bind-address': { key: 'healthzBindAddress', kind: 'string', usage: 'The IP address for the healthz server to serve on.', defaultText: '127.0.0.1' },
  'pod-logs-dir': { key: 'podLogsDir', kind: 'string', usage: 'Directory for container logs (KubeletConfiguration podLogsDir).', defaultText: '/var/log/pods' },
  v: { key: 'verbosity', kind: 'int', usage: 'Number for the log level verbosity.', defaultText: '0' },
  'image-gc-high-threshold': { key: 'imageGcHighThreshold', kind: 'int', usage: 'The percent of disk usage after which image garbage collection is always run. Values must be within the range [0, 100].', defaultText: '85' },
  'image-gc-low-threshold': { key: 'imageGcLowThreshold', kind: 'int', usage: 'The percent of disk usage before which image garbage collection is never run. Lowest disk usage to garbage collect to.', defaultText: '80' },
  'minimum-image-ttl-duration': { key: 'minimumImageTtlDurationMs', kind: 'duration', usage: 'Minimum age for an unused image before it is garbage collected.', defaultText: '2m0s' },
  'minimum-container-ttl-duration': { key: 'minimumContainerTtlDurationMs', kind: 'duration', usage: 'Minimum age for a finished container before it is garbage collected.', defaultText: '0s' },
  'maximum-dead-containers-per-container': { key: 'maximumDeadContainersPerContainer', kind: 'int', usage: 'Maximum number of old instances to retain per container.', defaultText: '1' },
  'maximum-dead-containers': { key: 'maximumDeadContainers', kind: 'int', usage: 'Maximum number of old instances of containers to retain globally; -1 means no limit.', defaultText: '-1' },
  'pod-infra-container-image': { key: 'podInfraContainerImage', kind: 'string', usage: 'The sandbox (pause) image, never garbage collected.', defaultText: 'registry.k8s.io/pause:3.10' },
  kubeconfig: { key: 'kubeconfig', kind: 'string', usage: 'Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting it enables standalone mode.' },
  'node-labels': { key: 'nodeLabels', kind: 'strings', usage: 'Labels to add when registering the node in the cluster (key=value pairs separated by commas).' },
  'register-with-taints': { key: 'registerWithTaints', kind: 'strings', usage: 'Register the node with the given list of taints (comma separated "<key>=<value>:<effect>").' },
  'register-schedulable': { key: 'registerSchedulable', kind: 'bool', usage: 'Register the node as schedulable.', defaultText: 'true' },
  'register-node': { key: 'registerNode', kind: 'bool', usage: 'Register the node with the API server.', defaultText: 'true' },
  'node-ip': { key: 'nodeIp', kind: 'string', usage: 'IP address (or comma-separated dual-stack IP addresses) of the node.' },
  'kube-reserved': { key: 'kubeReserved', kind: 'strings', usage: 'A set of ResourceName=ResourceQuantity pairs reserved for kubernetes system components.' },
  'system-reserved': { key: 'systemReserved', kind: 'strings', usage: 'A set of ResourceName=ResourceQuantity pairs reserved for non-kubernetes components.' },
  'eviction-hard': { key: 'evictionHard', kind: 'strings', usage: 'A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction.', defaultText: 'imagefs.available<15%,memory.available<100Mi,nodefs.available<10%' },
  'node-status-update-frequency': { key: 'nodeStatusUpdateFrequencyMs', kind: 'duration', usage: 'How often the kubelet posts node status to the master.', defaultText: '10s' },
  'node-status-report-frequency': { key: 'nodeStatusReportFrequencyMs', kind: 'duration', usage: 'How often the kubelet posts node status when nothing changed.', defaultText: '5m0s' },
  'max-pods': { key: 'maxPods', kind: 'int', usage: 'Number of Pods that can run on this Kubelet.', defaultText: '110' },
  port: { key: 'port', kind: 'port', usage: 'The port for the Kubelet to serve on (reported as the node daemon endpoint).', defaultText: '10250' },
  'event-qps': { key: 'eventQps', kind: 'int', usage: 'Limit event creations per second (0 = unlimited).', defaultText: '50' },
  'event-burst': { key: 'eventBurst', kind: 'int', usage: 'Maximum size of a bursty event records.', defaultText: '100' },
  'kube-api-qps': { key: 'kubeApiQps', kind: 'int', usage: 'QPS to use while talking with kubernetes apiserver.', defaultText: '50' },
  'kube-api-burst': { key: 'kubeApiBurst', kind: 'int', usage: 'Burst to use while talking with kubernetes apiserver.', defaultText: '100' },
  'allowed-unsafe-sysctls': { key: 'allowedUnsafeSysctls', kind: 'strings', usage: 'Comma-separated whitelist of unsafe sysctls or unsafe sysctl patterns (ending in *). Use these at your own risk.' },
  'cluster-dns': { key: 'clusterDns', kind: 'strings', usage: 'Comma-separated list of DNS server IP address. This value is used for containers DNS server in case of Pods with "dnsPolicy=ClusterFirst".' },
  'cluster-domain': { key: 'clusterDomain', kind: 'string', usage: 'Domain for this cluster. If set, kubelet will configure all containers to search this domain in addition to the host\'s search domains.' },
  'resolv-conf': { key: 'resolvConf', kind: 'string', usage: 'Resolver configuration file used as the basis for the container DNS resolution configuration.', defaultText: '/etc/resolv.conf' },
  address: { key: 'address', kind: 'string', usage: 'The IP address for the Kubelet to serve on (set to 0.0.0.0 or :: for listening in all interfaces and IP families).', defaultText: '0.0.0.0' },
  'read-only-port': { key: 'readOnlyPort', kind: 'port', usage: 'The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable).', defaultText: '0' },
  'tls-cert-file': { key: 'tlsCertFile', kind: 'string', usage: 'File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated after server cert). If not set, a self-signed certificate and key are generated for the public address and saved to --cert-dir.' },
  'tls-private-key-file': { key: 'tlsPrivateKeyFile', kind: 'string', usage: 'File containing x509 private key matching --tls-cert-file.' },
  'cert-dir': { key: 'certDir', kind: 'string', usage: 'The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.', defaultText: '/var/lib/kubelet/pki' },
  'tls-min-version': { key: 'tlsMinVersion', kind: 'string', usage: 'Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13.' },
  'tls-cipher-suites': { key: 'tlsCipherSuites', kind: 'strings', usage: 'Comma-separated list of cipher suites for the server (Go names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256). If omitted, the default cipher suites will be used.' },
  'client-ca-file': { key: 'clientCaFile', kind: 'string', usage: 'If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.' },
  'anonymous-auth': { key: 'anonymousAuth', kind: 'bool', usage: 'Enables anonymous requests to the Kubelet server. Requests that are not rejected by another authentication method are treated as anonymous requests (username system:anonymous, group system:unauthenticated).', defaultText: 'false' },
  'authentication-token-webhook': { key: 'authenticationTokenWebhook', kind: 'bool', usage: 'Use the TokenReview API to determine authentication for bearer tokens (default true with --kubeconfig).' },
  'authentication-token-webhook-cache-ttl': { key: 'authenticationTokenWebhookCacheTtlMs', kind: 'duration', usage: 'The duration to cache responses from the webhook token authenticator.', defaultText: '2m0s' },
  'authorization-mode': { key: 'authorizationMode', kind: 'string', usage: 'Authorization mode for Kubelet server. Valid options are AlwaysAllow or Webhook. Webhook mode uses the SubjectAccessReview API to determine authorization (default Webhook with --kubeconfig, AlwaysAllow without).' },
  'authorization-webhook-cache-authorized-ttl': { key: 'authorizationWebhookCacheAuthorizedTtlMs', kind: 'duration', usage: "The duration to cache 'authorized' responses from the webhook authorizer.", defaultText: '5m0s' },
  'authorization-webhook-cache-unauthorized-ttl': { key: 'authorizationWebhookCacheUnauthorizedTtlMs', kind: 'duration', usage: "The duration to cache 'unauthorized' responses from the webhook authorizer.", defaultText: '30s' },
  'enable-debugging-handlers': { key: 'enableDebuggingHandlers', kind: 'bool', usage: 'Enables server endpoints for log collection and local running of containers and commands.', defaultText: 'true' },
  'container-log-max-size': { key: 'containerLogMaxSize', kind: 'string', usage: 'Set the maximum size (e.g. 10Mi) of container log file before it is rotated.', defaultText: '10Mi' },
  'container-log-max-files': { key: 'containerLogMaxFiles', kind: 'int', usage: 'Set the maximum number of container log files that can be present for a container. The number must be >= 2.', defaultText: '5' },
  'feature-gates': { key: 'featureGates', kind: 'gates', usage: `A set of key=value pairs that describe feature gates for alpha/experimental features. Known: ${Object.keys(KNOWN_FEATURE_GATES).join(', ')}.` },
  'logging-format': { key: 'loggingFormat', kind: 'string', usage: 'Log format: text or json.', defaultText: 'text' },
  help: { key: 'help', kind: 'bool', usage: 'Help for kubelet.' },
  version: { key: 'version', kind: 'bool', usage: 'Print version information and quit.' },
};

export class FlagError extends Error {
  override name = 'FlagError';
}

function convert(name: string, spec: FlagSpec, raw: string): unknown {
  switch (spec.kind) {
    case 'string':
      return raw;
    case 'strings':
      return raw.split(',').filter((part) => part !== '');
    case 'bool':
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: parse error: not a boolean`);
    case 'duration':
      try {
        const ms = parseDuration(raw);
        if (ms < 0) throw new Error('must not be negative');
        return ms;
      } catch (error) {
        throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: ${(error as Error).message}`);
      }
    case 'gates': {
      const gates: Record<string, boolean> = {};
      for (const pair of raw.split(',').filter((p) => p.trim() !== '')) {
        const [key, value, ...rest] = pair.split('=').map((part) => part.trim());
        if (rest.length > 0 || value === undefined) throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: missing bool value for ${key}`);
        if (!(key in KNOWN_FEATURE_GATES)) throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: unrecognized feature gate: ${key}`);
        if (value !== 'true' && value !== 'false') throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: invalid value of ${key}=${value}, err: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
        gates[key] = value === 'true';
      }
      return gates;
    }
    case 'int':
    case 'port': {
      if (!/^-?\d+$/.test(raw)) throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: strconv.ParseInt: parsing ${JSON.stringify(raw)}: invalid syntax`);
      const value = Number(raw);
      if (spec.kind === 'port' && (value < 0 || value > 65535)) throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: port must be between 0 and 65535`);
      return value;
    }
  }
}

/** Parses argv (without node and the script). Accepts --flag=value, --flag value, -flag and -v=N. */
export function parseFlags(argv: string[]): KubeletFlags {
  const flags: KubeletFlags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-' || arg === '--') {
      throw new FlagError(`unexpected argument ${JSON.stringify(arg)}: the kubelet takes flags only (see --help)`);
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const spec = specs[name];
    if (!spec) throw new FlagError(`unknown flag: ${arg.slice(0, arg.length - (eq >= 0 ? body.length - eq : 0))}`);
    let raw: string;
    if (eq >= 0) raw = body.slice(eq + 1);
    else if (spec.kind === 'bool') raw = 'true';
    else {
      if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: --${name}`);
      raw = argv[++i];
    }
    const value = convert(name, spec, raw);
    if (spec.kind === 'gates') {
      flags.featureGates = { ...flags.featureGates, ...(value as Record<string, boolean>) };
    } else if (spec.kind === 'strings') {
      (flags as Record<string, unknown>)[spec.key] = [...((flags[spec.key] as string[] | undefined) ?? []), ...(value as string[])];
    } else {
      (flags as Record<string, unknown>)[spec.key] = value;
    }
  }
  if (flags.loggingFormat !== undefined && flags.loggingFormat !== 'text' && flags.loggingFormat !== 'json') {
    throw new FlagError(`invalid argument ${JSON.stringify(flags.loggingFormat)} for "--logging-format" flag: must be text or json`);
  }
  return flags;
}

export function usage(): string {
  const lines = ['Usage:', '  kubelet [flags]', '', 'Flags:'];
  for (const [name, spec] of Object.entries(specs)) {
    const type = spec.kind === 'bool' ? '' : ` ${spec.kind === 'strings' ? 'strings' : spec.kind === 'port' ? 'int32' : spec.kind === 'gates' ? 'mapStringBool' : spec.kind}`;
    const def = spec.defaultText ? ` (default ${JSON.stringify(spec.defaultText)})` : '';
    lines.push(`      --${name}${type}`.padEnd(44) + spec.usage + def);
  }
  return lines.join('\n');
}
