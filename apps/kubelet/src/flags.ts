import { isIP } from 'node:net';
import { parseDuration } from '@kubelet-ts/core';
import { FeatureGateError, IMPLEMENTED_FEATURE_GATES, checkFeatureGate, knownFeatureHelp } from './feature-gates.js';

/**
 * The kubelet's command line, with the Go kubelet's flag names. Every flag has a KubeletConfiguration
 * field or is a process-level option; values given on the command line win over the config file.
 */
export interface KubeletFlags {
  config?: string;
  /** Go --container-runtime: 'remote' (a CRI runtime) is the only one kubelet-ts has. */
  containerRuntime?: string;
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
  bootstrapKubeconfig?: string;
  rotateCertificates?: boolean;
  rotateServerCertificates?: boolean;
  nodeLabels?: string[];
  registerWithTaints?: string[];
  registerSchedulable?: boolean;
  registerNode?: boolean;
  nodeIp?: string;
  kubeReserved?: string[];
  systemReserved?: string[];
  evictionHard?: string[];
  evictionSoft?: string[];
  evictionSoftGracePeriod?: string[];
  evictionMaxPodGracePeriod?: number;
  evictionMinimumReclaim?: string[];
  evictionPressureTransitionPeriodMs?: number;
  cgroupsPerQos?: boolean;
  cgroupRoot?: string;
  cgroupDriver?: string;
  enforceNodeAllocatable?: string[];
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  cpuCfsQuota?: boolean;
  protectKernelDefaults?: boolean;
  cpuCfsQuotaPeriodMs?: number;
  podMaxPids?: number;
  oomScoreAdj?: number;
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
  /** Go's verflag: true prints `Kubernetes <version>`, 'raw' the whole version info. */
  version?: boolean | 'raw';
}

/** How a flag's value parses. */
export type FlagKind = 'string' | 'strings' | 'bool' | 'duration' | 'int32' | 'port' | 'ip' | 'gates' | 'version';

/** One flag, as the parser, --help and the README see it. */
export interface FlagSpec {
  readonly name: string;
  /** The one-letter form (`-h`, `-v`), as pflag prints it before the name. */
  readonly shorthand?: string;
  readonly key: keyof KubeletFlags;
  readonly kind: FlagKind;
  /** The value's type as pflag names it in help (string, strings, int32, Level, mapStringString, ...); '' for bools. */
  readonly type: string;
  readonly usage: string;
  /** pflag's DefValue. Left out for zero values and for defaults that depend on other flags, as pflag shows none then. */
  readonly default?: string;
  /** What the flag alone means (pflag's NoOptDefVal); a value then needs `--flag=value`. */
  readonly noOptDefault?: string;
  /** pflag's Deprecated: why the Go kubelet v1.20 deprecates the flag; giving it warns (see {@link parseFlags}). */
  readonly deprecated?: string;
}

export interface FlagSection {
  /** Printed as `<name> flags:`, as cliflag.PrintSections does. */
  readonly name: string;
  readonly flags: readonly FlagSpec[];
}

export const LOCAL_RUNTIME_ENDPOINT = 'local';
/** Go's default CRI endpoint (since 1.24): a node that joins a cluster never silently runs pods without isolation. */
export const DEFAULT_REMOTE_RUNTIME_ENDPOINT = 'unix:///run/containerd/containerd.sock';
/** The taint a node on the embedded runtime registers with, so that only pods that tolerate host processes land there. */
export const EMBEDDED_RUNTIME_TAINT = 'kubelet-ts.io/embedded-runtime=true:NoSchedule';

/** The feature gates kubelet-ts acts on, with their defaults (every other gate the Go kubelet v1.20 knows is accepted with a warning). */
export const KNOWN_FEATURE_GATES: Record<string, boolean> = Object.fromEntries(Object.entries(IMPLEMENTED_FEATURE_GATES).map(([gate, spec]) => [gate, spec.default]));

const TYPE_OF_KIND: Record<FlagKind, string> = {
  string: 'string',
  strings: 'strings',
  bool: '',
  duration: 'duration',
  int32: 'int32',
  port: 'int32',
  ip: 'ip',
  gates: 'mapStringBool',
  version: 'version',
};

/** Go v1.20's reason for deprecating the flags that have a KubeletConfiguration field. */
export const CONFIG_FILE_FLAG_DEPRECATION =
  "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";

/** The flags the Go kubelet v1.20 marks deprecated and why (its --help's "(DEPRECATED: ...)"); the rest of ours are not. */
const GO_DEPRECATED_FLAGS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    [
      'address', 'allowed-unsafe-sysctls', 'anonymous-auth', 'authentication-token-webhook', 'authentication-token-webhook-cache-ttl',
      'authorization-mode', 'authorization-webhook-cache-authorized-ttl', 'authorization-webhook-cache-unauthorized-ttl', 'cgroup-driver',
      'cgroup-root', 'cgroups-per-qos', 'client-ca-file', 'cluster-dns', 'cluster-domain', 'container-log-max-files', 'container-log-max-size',
      'cpu-cfs-quota', 'cpu-cfs-quota-period', 'enable-debugging-handlers', 'enforce-node-allocatable', 'event-burst', 'event-qps',
      'eviction-hard', 'eviction-max-pod-grace-period', 'eviction-minimum-reclaim', 'eviction-pressure-transition-period', 'eviction-soft',
      'eviction-soft-grace-period', 'feature-gates', 'file-check-frequency', 'healthz-bind-address', 'healthz-port', 'http-check-frequency',
      'image-gc-high-threshold', 'image-gc-low-threshold', 'kube-api-burst', 'kube-api-qps', 'kube-reserved', 'kube-reserved-cgroup',
      'logging-format', 'manifest-url', 'manifest-url-header', 'max-pods', 'minimum-image-ttl-duration', 'node-status-update-frequency',
      'oom-score-adj', 'pod-manifest-path', 'pod-max-pids', 'port', 'protect-kernel-defaults', 'read-only-port', 'resolv-conf',
      'rotate-certificates', 'rotate-server-certificates', 'runonce', 'runtime-request-timeout', 'sync-frequency', 'system-reserved',
      'system-reserved-cgroup', 'tls-cert-file', 'tls-cipher-suites', 'tls-min-version', 'tls-private-key-file',
    ].map((name) => [name, CONFIG_FILE_FLAG_DEPRECATION]),
  ),
  'maximum-dead-containers': 'Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
  'maximum-dead-containers-per-container': 'Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
  'minimum-container-ttl-duration': 'Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
  'register-schedulable': 'will be removed in a future version',
};

function flag(
  name: string,
  key: keyof KubeletFlags,
  kind: FlagKind,
  usage: string,
  extra: { default?: string; type?: string; shorthand?: string; noOptDefault?: string } = {},
): FlagSpec {
  return {
    name,
    key,
    kind,
    usage,
    type: extra.type ?? TYPE_OF_KIND[kind],
    default: extra.default,
    shorthand: extra.shorthand,
    noOptDefault: extra.noOptDefault ?? (kind === 'bool' ? 'true' : undefined),
    deprecated: GO_DEPRECATED_FLAGS[name],
  };
}

/**
 * Every flag the kubelet accepts, in the sections --help prints. The usage texts are the Go kubelet
 * v1.20's wherever the flag exists there and behaves the same; where kubelet-ts differs, the text says how.
 */
export const FLAG_SECTIONS: readonly FlagSection[] = [
  {
    name: 'Runtime',
    flags: [
      flag(
        'container-runtime',
        'containerRuntime',
        'string',
        "The container runtime to use. Possible values: 'docker', 'remote'. kubelet-ts has no dockershim: 'remote' (a CRI runtime at --container-runtime-endpoint) is the only one it runs, and its default (the Go kubelet's since 1.24); 'docker' is refused.",
        { default: 'remote' },
      ),
      flag(
        'container-runtime-endpoint',
        'containerRuntimeEndpoint',
        'string',
        `The endpoint of remote runtime service. Currently unix socket endpoint is supported on Linux. Examples: 'unix:///run/containerd/containerd.sock'. "${LOCAL_RUNTIME_ENDPOINT}" starts the embedded local runtime in the kubelet's process (state under --root-dir): its containers are host processes without isolation that stop with the kubelet. Default: "${DEFAULT_REMOTE_RUNTIME_ENDPOINT}" with --kubeconfig (as the Go kubelet since 1.24), "${LOCAL_RUNTIME_ENDPOINT}" standalone. A node on the embedded runtime registers with the taint ${EMBEDDED_RUNTIME_TAINT}.`,
        { default: `${DEFAULT_REMOTE_RUNTIME_ENDPOINT} (standalone: ${LOCAL_RUNTIME_ENDPOINT})` },
      ),
      flag(
        'image-service-endpoint',
        'imageServiceEndpoint',
        'string',
        `The endpoint of remote image service. If not specified, it will be the same with container-runtime-endpoint by default. Currently unix socket endpoint is supported on Linux.`,
      ),
      flag(
        'runtime-request-timeout',
        'runtimeRequestTimeoutMs',
        'duration',
        'Timeout of all runtime requests except long running request - pull, logs, exec and attach. When timeout exceeded, kubelet will cancel the request, throw out an error and retry later.',
        { default: '2m0s' },
      ),
      flag(
        'pod-infra-container-image',
        'podInfraContainerImage',
        'string',
        "The image whose network/ipc namespaces containers in each pod will use. kubelet-ts does not pass it to the runtime, which picks the sandbox image itself (containerd: sandbox_image); it only keeps image garbage collection from removing this image.",
        { default: 'registry.k8s.io/pause:3.10' },
      ),
      flag('root-dir', 'rootDir', 'string', 'Directory path for managing kubelet files (volume mounts,etc).', { default: '/var/lib/kubelet' }),
      flag(
        'pod-logs-dir',
        'podLogsDir',
        'string',
        "Directory in which the containers' log files are kept. kubelet-ts only: newer Go kubelets set it with the KubeletConfiguration field podLogsDir and have no flag for it.",
        { default: '/var/log/pods' },
      ),
      flag('container-log-max-size', 'containerLogMaxSize', 'string', 'Set the maximum size (e.g. 10Mi) of container log file before it is rotated.', { default: '10Mi' }),
      flag(
        'container-log-max-files',
        'containerLogMaxFiles',
        'int32',
        'Set the maximum number of container log files that can be present for a container. The number must be >= 2.',
        { default: '5' },
      ),
    ],
  },
  {
    name: 'Pod sources',
    flags: [
      flag(
        'pod-manifest-path',
        'podManifestPath',
        'string',
        'Path to the directory containing static pod files to run, or the path to a single static pod file. Files starting with dots will be ignored.',
      ),
      flag('file-check-frequency', 'fileCheckFrequencyMs', 'duration', 'Duration between checking config files for new data', { default: '20s' }),
      flag('manifest-url', 'manifestUrl', 'string', 'URL for accessing additional Pod specifications to run'),
      flag(
        'manifest-url-header',
        'manifestUrlHeader',
        'strings',
        "Comma-separated list of HTTP headers to use when accessing the url provided to --manifest-url. Multiple headers with the same name will be added in the same order provided. This flag can be repeatedly invoked. For example: --manifest-url-header 'a:hello,b:again,c:world' --manifest-url-header 'b:beautiful'",
        { type: 'colonSeparatedMultimapStringString' },
      ),
      flag('http-check-frequency', 'httpCheckFrequencyMs', 'duration', 'Duration between checking http for new data', { default: '20s' }),
      flag('sync-frequency', 'syncFrequencyMs', 'duration', 'Max period between synchronizing running containers and config', { default: '1m0s' }),
      flag(
        'runonce',
        'runonce',
        'bool',
        'If true, exit after spawning pods from static pod files or remote urls: once every pod runs or has finished, each result is reported and the kubelet exits (non-zero if a pod failed). The healthz and kubelet servers are not started.',
      ),
    ],
  },
  {
    name: 'Node registration and status',
    flags: [
      flag('hostname-override', 'hostnameOverride', 'string', 'If non-empty, will use this string as identification instead of the actual hostname.'),
      flag(
        'node-ip',
        'nodeIp',
        'string',
        "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, kubelet will use the node's default IPv4 address, if any, or its default IPv6 address if it has no IPv4 addresses. You can pass '::' to make it prefer the default IPv6 address rather than the default IPv4 address.",
      ),
      flag(
        'node-labels',
        'nodeLabels',
        'strings',
        "Labels to add when registering the node in the cluster. Labels must be key=value pairs separated by ','. Unlike the Go kubelet, kubelet-ts does not restrict labels in the 'kubernetes.io' namespace.",
        { type: 'mapStringString' },
      ),
      flag(
        'register-node',
        'registerNode',
        'bool',
        "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the Kubelet won't have an apiserver to register with.",
        { default: 'true' },
      ),
      flag('register-schedulable', 'registerSchedulable', 'bool', "Register the node as schedulable. Won't have any effect if register-node is false.", { default: 'true' }),
      flag(
        'register-with-taints',
        'registerWithTaints',
        'strings',
        'Register the node with the given list of taints (comma separated "<key>=<value>:<effect>"). No-op if register-node is false.',
        { type: '[]api.Taint' },
      ),
      flag(
        'node-status-update-frequency',
        'nodeStatusUpdateFrequencyMs',
        'duration',
        'Specifies how often kubelet posts node status to master. Note: be cautious when changing the constant, it must work with nodeMonitorGracePeriod in nodecontroller.',
        { default: '10s' },
      ),
      flag(
        'node-status-report-frequency',
        'nodeStatusReportFrequencyMs',
        'duration',
        'How often kubelet posts node status to master when nothing changed; a change is posted at once. kubelet-ts only: the Go kubelet sets it with the KubeletConfiguration field nodeStatusReportFrequency and has no flag for it.',
        { default: '5m0s' },
      ),
      flag('max-pods', 'maxPods', 'int32', 'Number of Pods that can run on this Kubelet.', { default: '110' }),
    ],
  },
  {
    name: 'API server client',
    flags: [
      flag(
        'kubeconfig',
        'kubeconfig',
        'string',
        'Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting --kubeconfig enables standalone mode.',
      ),
      flag(
        'bootstrap-kubeconfig',
        'bootstrapKubeconfig',
        'string',
        'Path to a kubeconfig file that will be used to get client certificate for kubelet. If the file specified by --kubeconfig does not exist, the bootstrap kubeconfig is used to request a client certificate from the API server. On success, a kubeconfig file referencing the generated client certificate and key is written to the path specified by --kubeconfig. The client certificate and key file will be stored in the directory pointed by --cert-dir.',
      ),
      flag(
        'rotate-certificates',
        'rotateCertificates',
        'bool',
        'Auto rotate the kubelet client certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches.',
      ),
      flag(
        'rotate-server-certificates',
        'rotateServerCertificates',
        'bool',
        'Auto-request and rotate the kubelet serving certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches. Requires approval of the submitted CertificateSigningRequest objects.',
      ),
      flag(
        'kube-api-qps',
        'kubeApiQps',
        'int32',
        'QPS to use while talking with kubernetes apiserver. kubelet-ts applies it to pod status updates only; events have --event-qps.',
        { default: '50' },
      ),
      flag(
        'kube-api-burst',
        'kubeApiBurst',
        'int32',
        'Burst to use while talking with kubernetes apiserver. kubelet-ts applies it to pod status updates only; events have --event-burst.',
        { default: '100' },
      ),
      flag('event-qps', 'eventQps', 'int32', 'Limit event creations per second to this value.', { default: '50' }),
      flag(
        'event-burst',
        'eventBurst',
        'int32',
        'Maximum size of a bursty event records, temporarily allows event records to burst to this number, while still not exceeding event-qps.',
        { default: '100' },
      ),
    ],
  },
  {
    name: 'Server',
    flags: [
      flag('address', 'address', 'ip', "The IP address for the Kubelet to serve on (set to '0.0.0.0' for all IPv4 interfaces and '::' for all IPv6 interfaces)", { default: '0.0.0.0' }),
      flag(
        'port',
        'port',
        'port',
        'The port for the Kubelet to serve on. The server starts only when requests can be authenticated: with --kubeconfig (webhook token authentication), --client-ca-file or --anonymous-auth.',
        { default: '10250' },
      ),
      flag('read-only-port', 'readOnlyPort', 'port', 'The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable)'),
      flag('healthz-port', 'healthzPort', 'port', 'The port of the localhost healthz endpoint (set to 0 to disable)', { default: '10248' }),
      flag(
        'healthz-bind-address',
        'healthzBindAddress',
        'ip',
        "The IP address for the healthz server to serve on (set to '0.0.0.0' for all IPv4 interfaces and '::' for all IPv6 interfaces)",
        { default: '127.0.0.1' },
      ),
      flag('enable-debugging-handlers', 'enableDebuggingHandlers', 'bool', 'Enables server endpoints for log collection and local running of containers and commands', { default: 'true' }),
      flag(
        'tls-cert-file',
        'tlsCertFile',
        'string',
        'File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated after server cert). If --tls-cert-file and --tls-private-key-file are not provided, a self-signed certificate and key are generated for the public address and saved to the directory passed to --cert-dir.',
      ),
      flag('tls-private-key-file', 'tlsPrivateKeyFile', 'string', 'File containing x509 private key matching --tls-cert-file.'),
      flag(
        'cert-dir',
        'certDir',
        'string',
        'The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored. Default: the pki directory under --root-dir.',
      ),
      flag('tls-min-version', 'tlsMinVersion', 'string', 'Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13'),
      flag(
        'tls-cipher-suites',
        'tlsCipherSuites',
        'strings',
        "Comma-separated list of cipher suites for the server, by their Go names (e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256). If omitted, Node.js's default cipher suites will be used. TLS 1.3 suites are not configurable.",
      ),
    ],
  },
  {
    name: 'Authentication and authorization',
    flags: [
      flag(
        'client-ca-file',
        'clientCaFile',
        'string',
        'If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.',
      ),
      flag(
        'anonymous-auth',
        'anonymousAuth',
        'bool',
        'Enables anonymous requests to the Kubelet server. Requests that are not rejected by another authentication method are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated.',
      ),
      flag(
        'authentication-token-webhook',
        'authenticationTokenWebhook',
        'bool',
        'Use the TokenReview API to determine authentication for bearer tokens. Defaults to true with --kubeconfig, which it needs.',
      ),
      flag('authentication-token-webhook-cache-ttl', 'authenticationTokenWebhookCacheTtlMs', 'duration', 'The duration to cache responses from the webhook token authenticator.', { default: '2m0s' }),
      flag(
        'authorization-mode',
        'authorizationMode',
        'string',
        'Authorization mode for Kubelet server. Valid options are AlwaysAllow or Webhook. Webhook mode uses the SubjectAccessReview API to determine authorization. Defaults to Webhook with --kubeconfig, which it needs, and to AlwaysAllow without.',
      ),
      flag(
        'authorization-webhook-cache-authorized-ttl',
        'authorizationWebhookCacheAuthorizedTtlMs',
        'duration',
        "The duration to cache 'authorized' responses from the webhook authorizer.",
        { default: '5m0s' },
      ),
      flag(
        'authorization-webhook-cache-unauthorized-ttl',
        'authorizationWebhookCacheUnauthorizedTtlMs',
        'duration',
        "The duration to cache 'unauthorized' responses from the webhook authorizer.",
        { default: '30s' },
      ),
    ],
  },
  {
    name: 'Pod DNS and sysctls',
    flags: [
      flag(
        'cluster-dns',
        'clusterDns',
        'strings',
        'Comma-separated list of DNS server IP address. This value is used for containers DNS server in case of Pods with "dnsPolicy=ClusterFirst". Note: all DNS servers appearing in the list MUST serve the same set of records otherwise name resolution within the cluster may not work correctly. There is no guarantee as to which DNS server may be contacted for name resolution.',
      ),
      flag(
        'cluster-domain',
        'clusterDomain',
        'string',
        "Domain for this cluster. If set, kubelet will configure all containers to search this domain in addition to the host's search domains",
      ),
      flag('resolv-conf', 'resolvConf', 'string', 'Resolver configuration file used as the basis for the container DNS resolution configuration.', { default: '/etc/resolv.conf' }),
      flag('allowed-unsafe-sysctls', 'allowedUnsafeSysctls', 'strings', 'Comma-separated whitelist of unsafe sysctls or unsafe sysctl patterns (ending in *). Use these at your own risk.'),
    ],
  },
  {
    name: 'Resource management',
    flags: [
      flag(
        'cgroups-per-qos',
        'cgroupsPerQos',
        'bool',
        `Enable creation of QoS cgroup hierarchy, if true top level QoS and pod cgroups are created. kubelet-ts: defaults to false with the embedded local runtime ("${LOCAL_RUNTIME_ENDPOINT}"), whose containers are host processes that no pod cgroup holds.`,
        { default: 'true' },
      ),
      flag(
        'cgroup-root',
        'cgroupRoot',
        'string',
        "Optional root cgroup to use for pods. This is handled by the container runtime on a best effort basis. Default: '', which means use the container runtime default.",
      ),
      flag('cgroup-driver', 'cgroupDriver', 'string', "Driver that the kubelet uses to manipulate cgroups on the host.  Possible values: 'cgroupfs', 'systemd'.", {
        default: 'cgroupfs',
      }),
      flag(
        'enforce-node-allocatable',
        'enforceNodeAllocatable',
        'strings',
        "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet. Acceptable options are 'none', 'pods', 'system-reserved', and 'kube-reserved'. If the latter two options are specified, '--system-reserved-cgroup' and '--kube-reserved-cgroup' must also be set, respectively. If 'none' is specified, no additional options should be set.",
        { default: '[pods]' },
      ),
      flag(
        'system-reserved-cgroup',
        'systemReservedCgroup',
        'string',
        "Absolute name of the top level cgroup that is used to manage non-kubernetes components for which compute resources were reserved via '--system-reserved' flag. Ex. '/system-reserved'. [default='']",
      ),
      flag(
        'kube-reserved-cgroup',
        'kubeReservedCgroup',
        'string',
        "Absolute name of the top level cgroup that is used to manage kubernetes components for which compute resources were reserved via '--kube-reserved' flag. Ex. '/kube-reserved'. [default='']",
      ),
      flag(
        'kube-reserved',
        'kubeReserved',
        'strings',
        'A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi) pairs that describe resources reserved for kubernetes system components. Currently only cpu, memory, ephemeral-storage and pid are supported.',
        { type: 'mapStringString' },
      ),
      flag(
        'system-reserved',
        'systemReserved',
        'strings',
        'A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi) pairs that describe resources reserved for non-kubernetes components. Currently only cpu, memory, ephemeral-storage and pid are supported.',
        { type: 'mapStringString' },
      ),
      flag(
        'protect-kernel-defaults',
        'protectKernelDefaults',
        'bool',
        'Default kubelet behaviour for kernel tuning. If set, kubelet errors if any of kernel tunables is different than kubelet defaults.',
      ),
      flag('cpu-cfs-quota', 'cpuCfsQuota', 'bool', 'Enable CPU CFS quota enforcement for containers that specify CPU limits', { default: 'true' }),
      flag('cpu-cfs-quota-period', 'cpuCfsQuotaPeriodMs', 'duration', 'Sets CPU CFS quota period value, cpu.cfs_period_us, defaults to Linux Kernel default', { default: '100ms' }),
      flag('pod-max-pids', 'podMaxPids', 'int32', 'Set the maximum number of processes per pod.  If -1, the kubelet defaults to the node allocatable pid capacity.', {
        default: '-1',
        type: 'int',
      }),
      flag(
        'oom-score-adj',
        'oomScoreAdj',
        'int32',
        "The oom-score-adj value for kubelet process. Values must be within the range [-1000, 1000]. kubelet-ts logs a warning and goes on when the kernel refuses it.",
        { default: '-999' },
      ),
    ],
  },
  {
    name: 'Eviction',
    flags: [
      flag(
        'eviction-hard',
        'evictionHard',
        'strings',
        'A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction.',
        { type: 'mapStringString', default: 'imagefs.available<15%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%' },
      ),
      flag(
        'eviction-soft',
        'evictionSoft',
        'strings',
        'A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction.',
        { type: 'mapStringString' },
      ),
      flag(
        'eviction-soft-grace-period',
        'evictionSoftGracePeriod',
        'strings',
        'A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction.',
        { type: 'mapStringString' },
      ),
      flag(
        'eviction-max-pod-grace-period',
        'evictionMaxPodGracePeriod',
        'int32',
        'Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met.  If negative, defer to pod specified value.',
      ),
      flag(
        'eviction-minimum-reclaim',
        'evictionMinimumReclaim',
        'strings',
        'A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource the kubelet will reclaim when performing a pod eviction if that resource is under pressure.',
        { type: 'mapStringString' },
      ),
      flag(
        'eviction-pressure-transition-period',
        'evictionPressureTransitionPeriodMs',
        'duration',
        'Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition.',
        { default: '5m0s' },
      ),
    ],
  },
  {
    name: 'Garbage collection',
    flags: [
      flag(
        'image-gc-high-threshold',
        'imageGcHighThreshold',
        'int32',
        'The percent of disk usage after which image garbage collection is always run. Values must be within the range [0, 100], To disable image garbage collection, set to 100.',
        { default: '85' },
      ),
      flag(
        'image-gc-low-threshold',
        'imageGcLowThreshold',
        'int32',
        'The percent of disk usage before which image garbage collection is never run. Lowest disk usage to garbage collect to. Values must be within the range [0, 100] and should not be larger than that of --image-gc-high-threshold.',
        { default: '80' },
      ),
      flag('minimum-image-ttl-duration', 'minimumImageTtlDurationMs', 'duration', "Minimum age for an unused image before it is garbage collected. Examples: '300ms', '10s' or '2h45m'.", { default: '2m0s' }),
      flag('minimum-container-ttl-duration', 'minimumContainerTtlDurationMs', 'duration', "Minimum age for a finished container before it is garbage collected. Examples: '300ms', '10s' or '2h45m'"),
      flag(
        'maximum-dead-containers-per-container',
        'maximumDeadContainersPerContainer',
        'int32',
        'Maximum number of old instances to retain per container. Each container takes up some disk space.',
        { default: '1' },
      ),
      flag(
        'maximum-dead-containers',
        'maximumDeadContainers',
        'int32',
        'Maximum number of old instances of containers to retain globally. Each container takes up some disk space. To disable, set to a negative number.',
        { default: '-1' },
      ),
    ],
  },
  {
    name: 'Logging',
    flags: [
      flag('v', 'verbosity', 'int32', 'number for the log level verbosity', { type: 'Level', shorthand: 'v' }),
      flag('logging-format', 'loggingFormat', 'string', 'Sets the log format. Permitted formats: "text", "json".', { default: 'text' }),
    ],
  },
  {
    name: 'Global',
    flags: [
      flag(
        'config',
        'config',
        'string',
        "The Kubelet will load its initial configuration from this file. The path may be absolute or relative; relative paths start at the Kubelet's current working directory. Omit this flag to use the built-in default configuration values. Command-line flags override configuration from this file.",
      ),
      flag(
        'feature-gates',
        'featureGates',
        'gates',
        `A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n${knownFeatureHelp().join('\n')}`,
      ),
      flag('help', 'help', 'bool', 'help for kubelet', { shorthand: 'h' }),
      flag('version', 'version', 'version', 'Print version information and quit; --version=raw prints all of it as JSON', { noOptDefault: 'true' }),
    ],
  },
];

const specs = new Map<string, FlagSpec>(FLAG_SECTIONS.flatMap((section) => section.flags.map((spec) => [spec.name, spec] as const)));
const shorthands = new Map<string, FlagSpec>([...specs.values()].filter((spec) => spec.shorthand).map((spec) => [spec.shorthand!, spec] as const));

export class FlagError extends Error {
  override name = 'FlagError';
}

/** pflag's output for deprecation notices: stderr, one line each. */
function writeStderrLine(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Go's strconv.ParseBool. */
function parseBool(raw: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  return undefined;
}

function convert(name: string, spec: FlagSpec, raw: string): unknown {
  const invalid = (why: string) => new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag: ${why}`);
  switch (spec.kind) {
    case 'string':
      return raw;
    case 'strings':
      return raw.split(',').filter((part) => part !== '');
    case 'ip':
      if (isIP(raw) === 0) throw invalid(`${JSON.stringify(raw)} is not a valid IP address`);
      return raw;
    case 'bool': {
      const value = parseBool(raw);
      if (value === undefined) throw invalid('parse error: not a boolean');
      return value;
    }
    case 'version': {
      if (raw === 'raw') return 'raw';
      const value = parseBool(raw);
      if (value === undefined) throw invalid('must be true, false or raw');
      return value;
    }
    case 'duration':
      try {
        const ms = parseDuration(raw);
        if (ms < 0) throw new Error('must not be negative');
        return ms;
      } catch (error) {
        throw invalid((error as Error).message);
      }
    case 'gates': {
      const gates: Record<string, boolean> = {};
      for (const pair of raw.split(',').filter((p) => p.trim() !== '')) {
        const [key, value, ...rest] = pair.split('=').map((part) => part.trim());
        if (rest.length > 0 || value === undefined) throw invalid(`missing bool value for ${key}`);
        if (value !== 'true' && value !== 'false') throw invalid(`invalid value of ${key}=${value}, err: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
        try {
          checkFeatureGate(key, value === 'true');
        } catch (error) {
          if (error instanceof FeatureGateError) throw invalid(error.message);
          throw error;
        }
        gates[key] = value === 'true';
      }
      return gates;
    }
    case 'int32':
    case 'port': {
      if (!/^[-+]?\d+$/.test(raw)) throw invalid(`strconv.ParseInt: parsing ${JSON.stringify(raw)}: invalid syntax`);
      const value = Number(raw);
      if (value < -(2 ** 31) || value >= 2 ** 31) throw invalid(`strconv.ParseInt: parsing ${JSON.stringify(raw)}: value out of range`);
      if (spec.kind === 'port' && (value < 0 || value > 65535)) throw invalid('port must be between 0 and 65535');
      return value;
    }
  }
}

/**
 * Parses argv (without node and the script) as pflag does: --flag=value and --flag value (bools and --version
 * take a value only after '='), shorthands (-h, -v 2, -v=2, -v2); and, as Go's flag package did, -flag.
 * Underscores in names are hyphens (cliflag.WordSepNormalizeFunc). A flag the Go kubelet v1.20 deprecates works and,
 * as pflag does, `warn`s `Flag --<name> has been deprecated, <why>` (by default a line on stderr) each time it is given.
 */
export function parseFlags(argv: string[], warn: (message: string) => void = writeStderrLine): KubeletFlags {
  const flags: KubeletFlags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-' || arg === '--') {
      throw new FlagError(`unexpected argument ${JSON.stringify(arg)}: the kubelet takes flags only`);
    }
    const single = !arg.startsWith('--');
    const body = arg.slice(single ? 1 : 2);
    const eq = body.indexOf('=');
    const written = eq >= 0 ? body.slice(0, eq) : body;
    const name = written.replace(/_/g, '-');
    let spec = specs.get(name);
    let raw: string | undefined = eq >= 0 ? body.slice(eq + 1) : undefined;
    if (!spec && single && shorthands.has(body[0])) {
      // A shorthand with its value attached: -v2 or -v=2.
      spec = shorthands.get(body[0])!;
      raw = body.length > 1 ? body.slice(body[1] === '=' ? 2 : 1) : undefined;
    }
    if (!spec) throw new FlagError(`unknown flag: ${single ? '-' : '--'}${written}`);
    if (raw === undefined) {
      if (spec.noOptDefault !== undefined) raw = spec.noOptDefault;
      else if (i + 1 < argv.length) raw = argv[++i];
      else throw new FlagError(`flag needs an argument: --${spec.name}`);
    }
    const value = convert(spec.name, spec, raw);
    // pflag (FlagSet.Set): a deprecated flag still works; once its value is taken, the notice, each time it is given.
    if (spec.deprecated !== undefined) warn(`Flag --${spec.name} has been deprecated, ${spec.deprecated}`);
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

/** The width --help wraps at when it cannot ask a terminal. */
export const HELP_WIDTH = 120;

/** The kubelet's description, before the usage (Go: the cobra command's Long text, told as kubelet-ts does it). */
export const KUBELET_DESCRIPTION = `The kubelet is the primary "node agent" that runs on each node. This is kubelet-ts, the
kubelet rebuilt in TypeScript. With --kubeconfig it registers the node with the apiserver,
named by the hostname or by --hostname-override; without --kubeconfig it runs standalone.

The kubelet works in terms of a PodSpec. A PodSpec is a YAML or JSON object that describes
a pod. The kubelet takes a set of PodSpecs that are provided through various mechanisms and
ensures that the containers described in those PodSpecs are running and healthy, through a
CRI container runtime (--container-runtime-endpoint: containerd's socket by default with
--kubeconfig; standalone, "local", an embedded runtime whose containers are host processes
without isolation, which a registered node only uses when named, and then taints itself
NoSchedule). The kubelet doesn't manage
containers which were not created by Kubernetes.

PodSpecs are provided to the kubelet in three ways:

API server: with --kubeconfig, the pods bound to this node (their spec.nodeName).

File: Path passed as a flag on the command line (--pod-manifest-path). Files under this path
will be monitored periodically for updates. The monitoring period is 20s by default and is
configurable via a flag (--file-check-frequency).

HTTP endpoint: HTTP endpoint passed as a parameter on the command line (--manifest-url).
This endpoint is checked every 20 seconds (also configurable with a flag).

Pods from a file or an HTTP endpoint are static pods: with --kubeconfig, each is shown in the
API server as a mirror pod. Flags with a KubeletConfiguration field can also be set in the
file given with --config; the command line wins.`;

/** pflag's wrapN: the first line of s, at most i characters (or i+slop if that ends it), and the rest. */
function wrapN(i: number, slop: number, s: string): [string, string] {
  if (i + slop > s.length) return [s, ''];
  const head = s.slice(0, i);
  const w = Math.max(head.lastIndexOf(' '), head.lastIndexOf('\t'), head.lastIndexOf('\n'));
  if (w <= 0) return [s, ''];
  const nl = head.lastIndexOf('\n');
  if (nl > 0 && nl < w) return [s.slice(0, nl), s.slice(nl + 1)];
  return [s.slice(0, w), s.slice(w + 1)];
}

/** pflag's wrap: s wrapped to width w, continuation lines indented by i (the caller indents the first). */
function wrap(i: number, w: number, s: string): string {
  if (w === 0) return s.replaceAll('\n', `\n${' '.repeat(i)}`);
  let room = w - i;
  let out = '';
  // Not enough room beside the names: the text goes below them as a block.
  if (room < 24) {
    i = 16;
    room = w - i;
    out += `\n${' '.repeat(i)}`;
  }
  if (room < 24) return s.replaceAll('\n', out);
  const slop = 5;
  room -= slop;
  const indent = ' '.repeat(i);
  let line: string;
  [line, s] = wrapN(room, slop, s);
  out += line.replaceAll('\n', `\n${indent}`);
  while (s !== '') {
    [line, s] = wrapN(room, slop, s);
    out += `\n${indent}${line.replaceAll('\n', `\n${indent}`)}`;
  }
  return out;
}

/** The flag's name column, as pflag prints it: `  -v, --v Level`, `      --version version[=true]`. */
function flagHeading(spec: FlagSpec): string {
  let line = spec.shorthand ? `  -${spec.shorthand}, --${spec.name}` : `      --${spec.name}`;
  if (spec.type) line += ` ${spec.type}`;
  if (spec.noOptDefault !== undefined && !(spec.kind === 'bool' && spec.noOptDefault === 'true')) {
    line += spec.type === 'string' ? `[="${spec.noOptDefault}"]` : `[=${spec.noOptDefault}]`;
  }
  return line;
}

/** The usage with pflag's default suffix: quoted for strings, bare otherwise. */
export function flagUsageText(spec: FlagSpec): string {
  if (spec.default === undefined) return spec.usage;
  return `${spec.usage} (default ${spec.type === 'string' ? JSON.stringify(spec.default) : spec.default})`;
}

/** pflag's FlagUsagesWrapped for one section: sorted by name, the texts in one column. */
function flagUsages(flags: readonly FlagSpec[], cols: number): string {
  const rows = [...flags].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((spec) => ({ heading: flagHeading(spec), text: flagUsageText(spec) }));
  const maxlen = Math.max(...rows.map((row) => row.heading.length + 1));
  return rows.map(({ heading, text }) => `${heading} ${' '.repeat(maxlen - heading.length)} ${wrap(maxlen + 2, cols, text)}\n`).join('');
}

/** `Usage:` and every flag by section, as cliflag.PrintSections lays them out, wrapped at cols (0: no wrapping). */
export function usage(cols = HELP_WIDTH): string {
  let out = 'Usage:\n  kubelet [flags]\n';
  for (const section of FLAG_SECTIONS) out += `\n${section.name} flags:\n\n${flagUsages(section.flags, cols)}`;
  return out;
}

/** What `kubelet --help` prints. */
export function helpText(cols = HELP_WIDTH): string {
  return `${KUBELET_DESCRIPTION}\n\n${usage(cols)}`;
}
