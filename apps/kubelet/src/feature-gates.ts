// Feature gates as the Go kubelet v1.20 knows them (component-base featuregate): every gate of k8s v1.20.2's
// pkg/features/kube_features.go and the generic API server's gates it registers, with their stage and default,
// plus the newer gates kubelet-ts implements. The ALPHA and BETA gates are the ones `kubelet --help` of the Go
// kubelet v1.20.2 lists; the GA and deprecated ones were each checked against that binary (a locked gate set
// to the other value fails with "cannot set feature gate X to false, feature is locked to true").

/** A gate's maturity, as Go's featuregate.prerelease prints it. */
export type FeatureStage = 'ALPHA' | 'BETA' | 'GA' | 'DEPRECATED';

/** Go's featuregate.FeatureSpec. */
export interface FeatureSpec {
  readonly default: boolean;
  readonly preRelease: FeatureStage;
  /** The gate cannot be set to anything but its default. */
  readonly lockToDefault?: boolean;
}

/** Go's special gates: setting one sets every ALPHA (BETA) gate that is not set explicitly. */
export const ALL_ALPHA_GATE = 'AllAlpha';
export const ALL_BETA_GATE = 'AllBeta';

const locked = { default: true, preRelease: 'GA', lockToDefault: true } as const;
const ga = { default: true, preRelease: 'GA' } as const;

/** Every feature gate the Go kubelet v1.20.2 accepts. */
export const GO_KUBELET_1_20_FEATURE_GATES: Readonly<Record<string, FeatureSpec>> = {
  [ALL_ALPHA_GATE]: { default: false, preRelease: 'ALPHA' },
  [ALL_BETA_GATE]: { default: false, preRelease: 'BETA' },
  APIListChunking: { default: true, preRelease: 'BETA' },
  APIPriorityAndFairness: { default: true, preRelease: 'BETA' },
  APIResponseCompression: { default: true, preRelease: 'BETA' },
  APIServerIdentity: { default: false, preRelease: 'ALPHA' },
  AllowInsecureBackendProxy: { default: true, preRelease: 'BETA' },
  AnyVolumeDataSource: { default: false, preRelease: 'ALPHA' },
  AppArmor: { default: true, preRelease: 'BETA' },
  BalanceAttachedNodeVolumes: { default: false, preRelease: 'ALPHA' },
  BoundServiceAccountTokenVolume: { default: false, preRelease: 'ALPHA' },
  CPUManager: { default: true, preRelease: 'BETA' },
  CRIContainerLogRotation: { default: true, preRelease: 'BETA' },
  CSIInlineVolume: { default: true, preRelease: 'BETA' },
  CSIMigration: { default: true, preRelease: 'BETA' },
  CSIMigrationAWS: { default: false, preRelease: 'BETA' },
  CSIMigrationAWSComplete: { default: false, preRelease: 'ALPHA' },
  CSIMigrationAzureDisk: { default: false, preRelease: 'BETA' },
  CSIMigrationAzureDiskComplete: { default: false, preRelease: 'ALPHA' },
  CSIMigrationAzureFile: { default: false, preRelease: 'ALPHA' },
  CSIMigrationAzureFileComplete: { default: false, preRelease: 'ALPHA' },
  CSIMigrationGCE: { default: false, preRelease: 'BETA' },
  CSIMigrationGCEComplete: { default: false, preRelease: 'ALPHA' },
  CSIMigrationOpenStack: { default: false, preRelease: 'BETA' },
  CSIMigrationOpenStackComplete: { default: false, preRelease: 'ALPHA' },
  CSIMigrationvSphere: { default: false, preRelease: 'BETA' },
  CSIMigrationvSphereComplete: { default: false, preRelease: 'BETA' },
  CSIServiceAccountToken: { default: false, preRelease: 'ALPHA' },
  CSIStorageCapacity: { default: false, preRelease: 'ALPHA' },
  CSIVolumeFSGroupPolicy: { default: true, preRelease: 'BETA' },
  ConfigurableFSGroupPolicy: { default: true, preRelease: 'BETA' },
  CronJobControllerV2: { default: false, preRelease: 'ALPHA' },
  CustomCPUCFSQuotaPeriod: { default: false, preRelease: 'ALPHA' },
  DefaultPodTopologySpread: { default: true, preRelease: 'BETA' },
  DevicePlugins: { default: true, preRelease: 'BETA' },
  DisableAcceleratorUsageMetrics: { default: true, preRelease: 'BETA' },
  DownwardAPIHugePages: { default: false, preRelease: 'ALPHA' },
  DynamicKubeletConfig: { default: true, preRelease: 'BETA' },
  EfficientWatchResumption: { default: false, preRelease: 'ALPHA' },
  EndpointSlice: { default: true, preRelease: 'BETA' },
  EndpointSliceNodeName: { default: false, preRelease: 'ALPHA' },
  EndpointSliceProxying: { default: true, preRelease: 'BETA' },
  EndpointSliceTerminatingCondition: { default: false, preRelease: 'ALPHA' },
  EphemeralContainers: { default: false, preRelease: 'ALPHA' },
  ExpandCSIVolumes: { default: true, preRelease: 'BETA' },
  ExpandInUsePersistentVolumes: { default: true, preRelease: 'BETA' },
  ExpandPersistentVolumes: { default: true, preRelease: 'BETA' },
  ExperimentalHostUserNamespaceDefaulting: { default: false, preRelease: 'BETA' },
  GenericEphemeralVolume: { default: false, preRelease: 'ALPHA' },
  GracefulNodeShutdown: { default: false, preRelease: 'ALPHA' },
  HPAContainerMetrics: { default: false, preRelease: 'ALPHA' },
  HPAScaleToZero: { default: false, preRelease: 'ALPHA' },
  HugePageStorageMediumSize: { default: true, preRelease: 'BETA' },
  IPv6DualStack: { default: false, preRelease: 'ALPHA' },
  ImmutableEphemeralVolumes: { default: true, preRelease: 'BETA' },
  KubeletCredentialProviders: { default: false, preRelease: 'ALPHA' },
  KubeletPodResources: { default: true, preRelease: 'BETA' },
  LegacyNodeRoleBehavior: { default: true, preRelease: 'BETA' },
  LocalStorageCapacityIsolation: { default: true, preRelease: 'BETA' },
  LocalStorageCapacityIsolationFSQuotaMonitoring: { default: false, preRelease: 'ALPHA' },
  MixedProtocolLBService: { default: false, preRelease: 'ALPHA' },
  NodeDisruptionExclusion: { default: true, preRelease: 'BETA' },
  NonPreemptingPriority: { default: true, preRelease: 'BETA' },
  PodDisruptionBudget: { default: true, preRelease: 'BETA' },
  PodOverhead: { default: true, preRelease: 'BETA' },
  ProcMountType: { default: false, preRelease: 'ALPHA' },
  QOSReserved: { default: false, preRelease: 'ALPHA' },
  RemainingItemCount: { default: true, preRelease: 'BETA' },
  RemoveSelfLink: { default: true, preRelease: 'BETA' },
  RootCAConfigMap: { default: true, preRelease: 'BETA' },
  RotateKubeletServerCertificate: { default: true, preRelease: 'BETA' },
  RunAsGroup: { default: true, preRelease: 'BETA' },
  ServerSideApply: { default: true, preRelease: 'BETA' },
  ServiceAccountIssuerDiscovery: { default: true, preRelease: 'BETA' },
  ServiceLBNodePortControl: { default: false, preRelease: 'ALPHA' },
  ServiceNodeExclusion: { default: true, preRelease: 'BETA' },
  ServiceTopology: { default: false, preRelease: 'ALPHA' },
  SetHostnameAsFQDN: { default: true, preRelease: 'BETA' },
  SizeMemoryBackedVolumes: { default: false, preRelease: 'ALPHA' },
  StorageVersionAPI: { default: false, preRelease: 'ALPHA' },
  StorageVersionHash: { default: true, preRelease: 'BETA' },
  Sysctls: { default: true, preRelease: 'BETA' },
  TTLAfterFinished: { default: false, preRelease: 'ALPHA' },
  TopologyManager: { default: true, preRelease: 'BETA' },
  ValidateProxyRedirects: { default: true, preRelease: 'BETA' },
  WarningHeaders: { default: true, preRelease: 'BETA' },
  WinDSR: { default: false, preRelease: 'ALPHA' },
  WinOverlay: { default: true, preRelease: 'BETA' },
  WindowsEndpointSliceProxying: { default: false, preRelease: 'ALPHA' },
  AdvancedAuditing: ga,
  DryRun: ga,
  ExecProbeTimeout: ga,
  StorageObjectInUseProtection: ga,
  VolumeSubpath: ga,
  AttachVolumeLimit: locked,
  BlockVolume: locked,
  CSIBlockVolume: locked,
  CSIDriverRegistry: locked,
  CSINodeInfo: locked,
  EvenPodsSpread: locked,
  ExternalPolicyForExternalIP: locked,
  NodeLease: locked,
  RotateKubeletClientCertificate: locked,
  RuntimeClass: locked,
  SCTPSupport: locked,
  SelectorIndex: locked,
  ServiceAppProtocol: locked,
  StartupProbe: locked,
  SupportNodePidsLimit: locked,
  SupportPodPidsLimit: locked,
  TokenRequest: locked,
  TokenRequestProjection: locked,
  VolumePVCDataSource: locked,
  VolumeSnapshotDataSource: locked,
  WatchBookmark: locked,
  WindowsGMSA: locked,
  WindowsRunAsUserName: locked,
  HyperVContainer: { default: false, preRelease: 'DEPRECATED' },
  StreamingProxyRedirects: { default: true, preRelease: 'DEPRECATED' },
};

/**
 * The gates kubelet-ts acts on, with its defaults: newer than v1.20 where kubelet-ts follows a newer Go kubelet
 * (GracefulNodeShutdown and GenericEphemeralVolume are beta and on since v1.21; the others arrived after v1.20).
 */
export const IMPLEMENTED_FEATURE_GATES: Readonly<Record<string, FeatureSpec>> = {
  CSIInlineVolume: { default: true, preRelease: 'BETA' },
  EventedPLEG: { default: false, preRelease: 'ALPHA' },
  // Beta and on since v1.21 (GA in v1.23); the control plane must allow the field too.
  GenericEphemeralVolume: { default: true, preRelease: 'BETA' },
  GracefulNodeShutdown: { default: true, preRelease: 'BETA' },
  KubeletPodResourcesGet: { default: false, preRelease: 'ALPHA' },
  KubeletPodResourcesGetAllocatable: { default: true, preRelease: 'BETA' },
};

/** Every gate kubelet-ts accepts: the Go kubelet v1.20's and the ones it implements. */
export const FEATURE_GATES: Readonly<Record<string, FeatureSpec>> = { ...GO_KUBELET_1_20_FEATURE_GATES, ...IMPLEMENTED_FEATURE_GATES };

/** A gate setting Go refuses: unknown, or locked to its default. */
export class FeatureGateError extends Error {
  override name = 'FeatureGateError';
}

/** Something worth a warning in the log when the gates are set (Go: klog.Warningf in SetFromMap). */
export interface FeatureGateWarning {
  msg: string;
  kv: Record<string, unknown>;
}

/**
 * Go's featureGate.SetFromMap check of one gate: unknown gates and locked gates set to the other value are
 * errors with Go's text.
 */
export function checkFeatureGate(name: string, value: boolean): void {
  const spec = FEATURE_GATES[name];
  if (!spec) throw new FeatureGateError(`unrecognized feature gate: ${name}`);
  if (spec.lockToDefault && spec.default !== value) throw new FeatureGateError(`cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`);
}

/** The gates' values after setting `explicit` over the defaults, and the warnings Go (and kubelet-ts) give. */
export interface ResolvedFeatureGates {
  /** Every implemented gate's value, and every explicitly set gate's. */
  gates: Record<string, boolean>;
  warnings: FeatureGateWarning[];
}

/**
 * Sets the explicitly given gates over the defaults as Go's SetFromMap does: each is checked
 * ({@link checkFeatureGate}); GA and deprecated gates are warned about with Go's text; AllAlpha/AllBeta set the
 * alpha/beta gates not set explicitly. A gate Go knows that kubelet-ts does not act on is accepted with a
 * warning that it has no effect.
 */
export function resolveFeatureGates(explicit: Record<string, boolean>): ResolvedFeatureGates {
  const warnings: FeatureGateWarning[] = [];
  for (const [name, value] of Object.entries(explicit)) {
    if (typeof value !== 'boolean') throw new FeatureGateError(`invalid value of ${name}: ${JSON.stringify(value)}: must be true or false`);
    checkFeatureGate(name, value);
  }
  const gates: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(IMPLEMENTED_FEATURE_GATES)) {
    const all = spec.preRelease === 'ALPHA' ? explicit[ALL_ALPHA_GATE] : spec.preRelease === 'BETA' ? explicit[ALL_BETA_GATE] : undefined;
    gates[name] = all ?? spec.default;
  }
  for (const name of Object.keys(explicit).sort()) {
    const value = explicit[name]!;
    gates[name] = value;
    const spec = FEATURE_GATES[name]!;
    if (spec.preRelease === 'DEPRECATED') {
      warnings.push({ msg: `Setting deprecated feature gate ${name}=${value}. It will be removed in a future release.`, kv: {} });
    } else if (spec.preRelease === 'GA') {
      warnings.push({ msg: `Setting GA feature gate ${name}=${value}. It will be removed in a future release.`, kv: {} });
    } else if (!(name in IMPLEMENTED_FEATURE_GATES) && name !== ALL_ALPHA_GATE && name !== ALL_BETA_GATE) {
      warnings.push({
        msg: `Feature gate ${name} is known to the Go kubelet v1.20 but not implemented by kubelet-ts: setting it has no effect`,
        kv: { gate: name, value, stage: spec.preRelease, default: spec.default },
      });
    }
  }
  return { gates, warnings };
}

/** The gates `--feature-gates` lists in help, as Go's KnownFeatures: neither GA nor deprecated, sorted. */
export function knownFeatureHelp(): string[] {
  return Object.entries(FEATURE_GATES)
    .filter(([, spec]) => spec.preRelease !== 'GA' && spec.preRelease !== 'DEPRECATED')
    .map(([name, spec]) => `${name}=true|false (${spec.preRelease} - default=${spec.default})`)
    .sort();
}
