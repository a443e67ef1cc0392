export {
  GenericRuntimeManager,
  KUBE_RUNTIME_API_VERSION,
  convertPodStatusToRunningPod,
  determinePodSandboxIPs,
  toCoreSandboxStatus,
  type GenericRuntimeManagerOptions,
  type DeviceRunContainerOptions,
} from './runtime-manager.js';
export {
  computePodActions,
  podSandboxChanged,
  networkNamespaceForPod,
  ipcNamespaceForPod,
  pidNamespaceForPod,
  type PodActions,
  type ContainerToKillInfo,
  type ContainerKillReason,
  type ComputePodActionsOptions,
  type CriSandboxStatus,
  type NamespaceMode,
  type ProbeResult,
  type ProbeResultLookup,
} from './pod-actions.js';
export {
  ImageManager,
  imagePullBackoff,
  applyDefaultImageTag,
  defaultPullPolicy,
  shouldPullImage,
  registryOf,
  authsForImage,
  type EnsureImageResult,
  type ImageManagerOptions,
} from './image-manager.js';
export {
  HandlerRunner,
  HttpGetError,
  httpGetActionUrl,
  lifecycleRequestHeaders,
  lifecycleUserAgent,
  DEFAULT_LIFECYCLE_USER_AGENT,
  MAX_LIFECYCLE_RESPONSE_BODY_BYTES,
  type HandlerRunnerOptions,
} from './lifecycle.js';
export { TerminationOrdering } from './termination-order.js';
export {
  generatePodSandboxConfig,
  containerSecurityContext,
  linuxContainerResources,
  makeEnvironmentVariables,
  containerOomScoreAdjust,
  podHostname,
  sysctlToDotsSeparator,
  ContainerConfigError,
  type ConfigMapAndSecretSource,
  type EnvContext,
  type NodeInfoForPods,
  type SandboxConfigOptions,
} from './container-config.js';
export {
  DnsConfigurer,
  DnsEventReason,
  parseResolvConf,
  mergeDnsOptions,
  omitDuplicates,
  MAX_DNS_NAMESERVERS,
  MAX_DNS_SEARCH_PATHS,
  MAX_DNS_SEARCH_LIST_CHARS,
  MAX_RESOLV_CONF_LENGTH,
  DEFAULT_DNS_OPTIONS,
  type DnsConfigurerOptions,
  type ReadFileAtMost,
  type ResolvConf,
} from './dns.js';
export {
  ETC_HOSTS_PATH,
  MANAGED_HOSTS_HEADER,
  MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK,
  isDns1123Label,
  truncatePodHostnameIfNeeded,
  podHostnameAndDomain,
  nodenameForKernel,
  podSandboxHostname,
  hostsEntriesFromHostAliases,
  managedHostsFileContent,
  nodeHostsFileContent,
  shouldMountHostsFile,
  etcHostsPath,
  makeHostsMount,
  type PodHostnameAndDomain,
  type HostsFileParams,
} from './hosts.js';
export {
  envVarsFromServices,
  serviceEnvVarMap,
  isServiceIPSet,
  MASTER_SERVICES,
  NAMESPACE_DEFAULT,
  SERVICES_NOT_SYNCED_MESSAGE,
  type ServiceSource,
} from './service-env.js';
export { hashContainer, fnv32a } from './hash.js';
export * from './labels.js';
export {
  MINIMUM_GRACE_PERIOD_SECONDS,
  buildContainerLogsPath,
  getContainerSpec,
  formatPod,
  getStableKey,
  isInitContainerFailed,
} from './helpers.js';
export { nodeFs, type RuntimeFs } from './fs.js';
export {
  RuntimeClassManager,
  RuntimeClassNotFoundError,
  RuntimeClassUnavailableError,
  RUNTIME_CLASS_GROUP_RESOURCE,
  createRuntimeClassListerWatcher,
  standaloneRuntimeHandler,
  type RuntimeClass,
  type RuntimeClassManagerOptions,
  type RuntimeHandlerResolver,
} from './runtime-class.js';
