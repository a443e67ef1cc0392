// The fields of KubeletConfiguration (kubelet.config.k8s.io/v1beta1) and their JSON types: the Go kubelet
// v1.20's, and the newer Go kubelets' (kubelet-ts reads some of those, and a config written for a newer kubelet
// should not be called unknown). Go decodes the file strictly first and, when that fails only on unknown fields,
// leniently with a warning; a field of the wrong type is an error.

/** A field's JSON type. */
export type FieldType =
  | 'string'
  | 'int'
  | 'number'
  | 'bool'
  /** A Go metav1.Duration: a string such as "20s". */
  | 'duration'
  | 'strings'
  | 'ints'
  | 'stringMap'
  | 'boolMap'
  | 'stringsMap'
  /** Anything: the field is known, its content is not checked here. */
  | 'any'
  | { readonly object: Readonly<Record<string, FieldType>> }
  | { readonly list: FieldType };

const object = (fields: Record<string, FieldType>): FieldType => ({ object: fields });
const list = (item: FieldType): FieldType => ({ list: item });

/** Every KubeletConfiguration field, as in the Go kubelet's v1beta1 types (v1.20 and newer). */
export const KUBELET_CONFIGURATION_FIELDS: Readonly<Record<string, FieldType>> = {
  apiVersion: 'string',
  kind: 'string',
  enableServer: 'bool',
  staticPodPath: 'string',
  podLogsDir: 'string',
  syncFrequency: 'duration',
  fileCheckFrequency: 'duration',
  httpCheckFrequency: 'duration',
  staticPodURL: 'string',
  staticPodURLHeader: 'stringsMap',
  address: 'string',
  port: 'int',
  readOnlyPort: 'int',
  tlsCertFile: 'string',
  tlsPrivateKeyFile: 'string',
  tlsCipherSuites: 'strings',
  tlsCurvePreferences: 'ints',
  tlsMinVersion: 'string',
  rotateCertificates: 'bool',
  serverTLSBootstrap: 'bool',
  authentication: object({
    x509: object({ clientCAFile: 'string' }),
    webhook: object({ enabled: 'bool', cacheTTL: 'duration' }),
    anonymous: object({ enabled: 'bool' }),
  }),
  authorization: object({
    mode: 'string',
    webhook: object({ cacheAuthorizedTTL: 'duration', cacheUnauthorizedTTL: 'duration' }),
  }),
  registryPullQPS: 'int',
  registryBurst: 'int',
  imagePullCredentialsVerificationPolicy: 'string',
  preloadedImagesVerificationAllowlist: 'strings',
  eventRecordQPS: 'int',
  eventBurst: 'int',
  enableDebuggingHandlers: 'bool',
  enableContentionProfiling: 'bool',
  healthzPort: 'int',
  healthzBindAddress: 'string',
  oomScoreAdj: 'int',
  clusterDomain: 'string',
  clusterDNS: 'strings',
  streamingConnectionIdleTimeout: 'duration',
  nodeStatusUpdateFrequency: 'duration',
  nodeStatusReportFrequency: 'duration',
  nodeLeaseDurationSeconds: 'int',
  imageMinimumGCAge: 'duration',
  imageMaximumGCAge: 'duration',
  imageGCHighThresholdPercent: 'int',
  imageGCLowThresholdPercent: 'int',
  volumeStatsAggPeriod: 'duration',
  kubeletCgroups: 'string',
  systemCgroups: 'string',
  cgroupRoot: 'string',
  cgroupsPerQOS: 'bool',
  cgroupDriver: 'string',
  cpuManagerPolicy: 'string',
  singleProcessOOMKill: 'bool',
  cpuManagerPolicyOptions: 'stringMap',
  cpuManagerReconcilePeriod: 'duration',
  draManagerReconcilePeriod: 'duration',
  memoryManagerPolicy: 'string',
  topologyManagerPolicy: 'string',
  topologyManagerScope: 'string',
  topologyManagerPolicyOptions: 'stringMap',
  qosReserved: 'stringMap',
  runtimeRequestTimeout: 'duration',
  hairpinMode: 'string',
  maxPods: 'int',
  podCIDR: 'string',
  podPidsLimit: 'int',
  resolvConf: 'string',
  runOnce: 'bool',
  cpuCFSQuota: 'bool',
  cpuCFSQuotaPeriod: 'duration',
  nodeStatusMaxImages: 'int',
  maxOpenFiles: 'int',
  contentType: 'string',
  kubeAPIQPS: 'int',
  kubeAPIBurst: 'int',
  serializeImagePulls: 'bool',
  maxParallelImagePulls: 'int',
  evictionHard: 'stringMap',
  evictionSoft: 'stringMap',
  evictionSoftGracePeriod: 'stringMap',
  evictionPressureTransitionPeriod: 'duration',
  evictionMaxPodGracePeriod: 'int',
  evictionMinimumReclaim: 'stringMap',
  mergeDefaultEvictionSettings: 'bool',
  podsPerCore: 'int',
  enableControllerAttachDetach: 'bool',
  protectKernelDefaults: 'bool',
  makeIPTablesUtilChains: 'bool',
  iptablesMasqueradeBit: 'int',
  iptablesDropBit: 'int',
  featureGates: 'boolMap',
  failSwapOn: 'bool',
  memorySwap: object({ swapBehavior: 'string' }),
  containerLogMaxSize: 'string',
  containerLogMaxFiles: 'int',
  containerLogMaxWorkers: 'int',
  containerLogMonitorInterval: 'duration',
  configMapAndSecretChangeDetectionStrategy: 'string',
  systemReserved: 'stringMap',
  kubeReserved: 'stringMap',
  reservedSystemCPUs: 'string',
  showHiddenMetricsForVersion: 'string',
  systemReservedCgroup: 'string',
  kubeReservedCgroup: 'string',
  enforceNodeAllocatable: 'strings',
  allowedUnsafeSysctls: 'strings',
  volumePluginDir: 'string',
  providerID: 'string',
  kernelMemcgNotification: 'bool',
  logging: 'any',
  enableSystemLogHandler: 'bool',
  enableSystemLogQuery: 'bool',
  shutdownGracePeriod: 'duration',
  shutdownGracePeriodCriticalPods: 'duration',
  shutdownGracePeriodByPodPriority: list(object({ priority: 'int', shutdownGracePeriodSeconds: 'int' })),
  crashLoopBackOff: object({ maxContainerRestartPeriod: 'duration' }),
  reservedMemory: list(object({ numaNode: 'int', limits: 'stringMap' })),
  enableProfilingHandler: 'bool',
  enableDebugFlagsHandler: 'bool',
  seccompDefault: 'bool',
  memoryThrottlingFactor: 'number',
  memoryReservationPolicy: 'string',
  registerWithTaints: list(object({ key: 'string', value: 'string', effect: 'string', timeAdded: 'string' })),
  registerNode: 'bool',
  tracing: 'any',
  localStorageCapacityIsolation: 'bool',
  containerRuntimeEndpoint: 'string',
  imageServiceEndpoint: 'string',
  failCgroupV1: 'bool',
  userNamespaces: object({ idsPerPod: 'int' }),
};

/** What checking a decoded file found: unknown fields (as JSON paths) and fields of the wrong type. */
export interface FieldCheck {
  /** e.g. `fooBar`, `authentication.x509.bogus`, `registerWithTaints[0].colour`. */
  unknown: string[];
  /** e.g. `maxPods: must be an integer, got "abc"`. */
  typeErrors: string[];
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return JSON.stringify(value);
}

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function checkValue(value: unknown, type: FieldType, path: string, out: FieldCheck): void {
  // Go: a JSON null leaves the field at its zero value.
  if (value === null || value === undefined || type === 'any') return;
  const wrong = (expected: string): void => {
    out.typeErrors.push(`${path}: must be ${expected}, got ${describe(value)}`);
  };
  if (typeof type === 'object') {
    if ('object' in type) {
      if (!isMap(value)) return wrong('an object');
      for (const [key, child] of Object.entries(value)) {
        const childType = type.object[key];
        const childPath = `${path}.${key}`;
        if (childType === undefined) out.unknown.push(childPath);
        else checkValue(child, childType, childPath, out);
      }
      return;
    }
    if (!Array.isArray(value)) return wrong('a list');
    value.forEach((item, index) => checkValue(item, type.list, `${path}[${index}]`, out));
    return;
  }
  switch (type) {
    case 'string':
    case 'duration':
      if (typeof value !== 'string') wrong(type === 'duration' ? 'a duration string such as "20s"' : 'a string');
      return;
    case 'int':
      if (!Number.isInteger(value)) wrong('an integer');
      return;
    case 'number':
      if (typeof value !== 'number') wrong('a number');
      return;
    case 'bool':
      if (typeof value !== 'boolean') wrong('true or false');
      return;
    case 'strings':
    case 'ints':
      if (!Array.isArray(value) || !value.every((item) => (type === 'ints' ? Number.isInteger(item) : typeof item === 'string'))) {
        wrong(type === 'ints' ? 'a list of integers' : 'a list of strings');
      }
      return;
    case 'stringMap':
    case 'boolMap':
    case 'stringsMap': {
      if (!isMap(value)) return wrong('an object');
      for (const [key, item] of Object.entries(value)) {
        const ok =
          type === 'stringMap' ? typeof item === 'string' : type === 'boolMap' ? typeof item === 'boolean' : Array.isArray(item) && item.every((v) => typeof v === 'string');
        if (!ok) out.typeErrors.push(`${path}.${key}: must be ${type === 'stringMap' ? 'a string' : type === 'boolMap' ? 'true or false' : 'a list of strings'}, got ${describe(item)}`);
      }
      return;
    }
  }
}

/** Checks a decoded KubeletConfiguration object against {@link KUBELET_CONFIGURATION_FIELDS}. */
export function checkKubeletConfigurationFields(config: Record<string, unknown>): FieldCheck {
  const out: FieldCheck = { unknown: [], typeErrors: [] };
  checkValue(config, { object: KUBELET_CONFIGURATION_FIELDS }, '', out);
  // The root's paths start with '.': drop it.
  out.unknown = out.unknown.map((path) => path.slice(1));
  out.typeErrors = out.typeErrors.map((error) => error.slice(1));
  return out;
}
