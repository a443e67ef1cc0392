// Building the CRI PodSandboxConfig and ContainerConfig from a pod (Go: kuberuntime_sandbox.go
// generatePodSandboxConfig, kuberuntime_container.go generateContainerConfig,
// kuberuntime_container_linux.go, security_context.go, kubelet_pods.go makeEnvironmentVariables).
import type {
  V1Container,
  V1EnvVarSource,
  V1Pod,
  V1SeccompProfile,
  V1SecurityContext,
} from '@kubernetes/client-node';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { expand } from '@kubelet-ts/core';
import { buildPodLogsDirectory } from '@kubelet-ts/core';
import {
  extractContainerResourceValue,
  extractFieldPathAsString,
  extractResourceValueByContainerName,
  isStaticPod,
  type EventRecorder,
  CPU_QUOTA_PERIOD_US,
  getPodQOS,
  milliCpuToQuota,
  milliCpuToShares,
  quantityMilliValue,
  quantityValue,
} from '@kubelet-ts/core';
import { podHostnameAndDomain, podSandboxHostname } from './hosts.js';
import { newPodAnnotations, newPodLabels } from './labels.js';
import { ipcNamespaceForPod, networkNamespaceForPod, pidNamespaceForPod } from './pod-actions.js';
import { SERVICES_NOT_SYNCED_MESSAGE, serviceEnvVarMap, type ServiceSource } from './service-env.js';
import { appArmorProfileFor, criAppArmorProfile } from './security-context.js';

/** Where configMapKeyRef/secretKeyRef/envFrom values come from; the kubelet app wires the API. */
export interface ConfigMapAndSecretSource {
  getConfigMap(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** Secret data decoded to strings. */
  getSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

export interface NodeInfoForPods {
  /** status.hostIP(s) for the downward API; defaults to pod.status.hostIP(s). */
  hostIPs?: () => string[];
  /** Node allocatable for resourceFieldRef without a limit. */
  allocatableMilliCpu: number;
  allocatableMemoryBytes: number;
  /** Node memory capacity for the OOM score of burstable containers. */
  memoryCapacityBytes: number;
}

/** Raised when the container config cannot be built (Go: ErrCreateContainerConfig). */
export class ContainerConfigError extends Error {
  override name = 'ContainerConfigError';
}

const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;

const defaultMaskedPaths = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/interrupts',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
const defaultReadonlyPaths = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

/** Go: GetContainerOOMScoreAdjust. */
export function containerOomScoreAdjust(pod: V1Pod, container: V1Container, memoryCapacity: number): number {
  if (pod.spec?.priorityClassName === 'system-node-critical') return GUARANTEED_OOM_SCORE_ADJ;
  const qos = getPodQOS(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  const memoryRequest = quantityValue(container.resources?.requests?.['memory']);
  const adjust = 1000 - Math.floor((1000 * memoryRequest) / Math.max(memoryCapacity, 1));
  if (adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (adjust === BESTEFFORT_OOM_SCORE_ADJ) return adjust - 1;
  return adjust;
}

/** cpu/memory to CRI linux resources (Go: generateLinuxContainerResources with CFS quota on). */
export function linuxContainerResources(pod: V1Pod, container: V1Container, node: NodeInfoForPods): runtimeapi.LinuxContainerResourcesInit {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const cpuLimitMilli = quantityMilliValue(limits['cpu']);
  const cpuRequestMilli = quantityMilliValue(requests['cpu']);
  const memoryLimit = quantityValue(limits['memory']);
  const cpuShares = cpuRequestMilli === 0 && cpuLimitMilli !== 0 ? milliCpuToShares(cpuLimitMilli) : milliCpuToShares(cpuRequestMilli);
  return {
    cpuShares,
    cpuPeriod: CPU_QUOTA_PERIOD_US,
    cpuQuota: milliCpuToQuota(cpuLimitMilli, CPU_QUOTA_PERIOD_US),
    memoryLimitInBytes: memoryLimit,
    oomScoreAdj: containerOomScoreAdjust(pod, container, node.memoryCapacityBytes),
  };
}

function seccompProfile(profile: V1SeccompProfile | undefined): runtimeapi.SecurityProfileInit {
  if (profile?.type === 'RuntimeDefault') return { profileType: 'RuntimeDefault' };
  if (profile?.type === 'Localhost') return { profileType: 'Localhost', localhostRef: profile.localhostProfile ?? '' };
  return { profileType: 'Unconfined' };
}

function namespaceOptions(pod: V1Pod): runtimeapi.NamespaceOptionInit {
  return { network: networkNamespaceForPod(pod), pid: pidNamespaceForPod(pod), ipc: ipcNamespaceForPod(pod) };
}

/**
 * The container's effective security context as CRI wants it (Go: determineEffectiveSecurityContext +
 * convert), with its AppArmor profile (field, annotation, then the pod's field) as the `apparmor`
 * SecurityProfile and the deprecated `apparmorProfile` string. The image's user is added by the
 * runtime manager (applyImageUser). Throws for a Localhost AppArmor profile without a name.
 */
export function containerSecurityContext(pod: V1Pod, container: V1Container): runtimeapi.LinuxContainerSecurityContextInit {
  const podSc = pod.spec?.securityContext ?? {};
  const sc: V1SecurityContext = container.securityContext ?? {};
  const runAsUser = sc.runAsUser ?? podSc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? podSc.runAsGroup;
  const supplementalGroups = [...(podSc.supplementalGroups ?? [])];
  if (podSc.fsGroup !== undefined && podSc.fsGroup !== null) supplementalGroups.push(podSc.fsGroup);
  const privileged = sc.privileged === true;
  const seLinux = sc.seLinuxOptions ?? podSc.seLinuxOptions;
  const result: runtimeapi.LinuxContainerSecurityContextInit = {
    privileged,
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    namespaceOptions: namespaceOptions(pod),
    supplementalGroups,
    seccomp: seccompProfile(sc.seccompProfile ?? podSc.seccompProfile),
  };
  if (runAsUser !== undefined && runAsUser !== null) result.runAsUser = { value: runAsUser };
  if (runAsGroup !== undefined && runAsGroup !== null) result.runAsGroup = { value: runAsGroup };
  if (seLinux) result.selinuxOptions = { user: seLinux.user ?? '', role: seLinux.role ?? '', type: seLinux.type ?? '', level: seLinux.level ?? '' };
  if (sc.capabilities) {
    result.capabilities = { addCapabilities: [...(sc.capabilities.add ?? [])], dropCapabilities: [...(sc.capabilities.drop ?? [])] };
  }
  if (sc.allowPrivilegeEscalation === false) result.noNewPrivs = true;
  const appArmor = appArmorProfileFor(pod, container);
  if (appArmor) Object.assign(result, criAppArmorProfile(appArmor));
  if (!privileged) {
    const unmasked = sc.procMount === 'Unmasked';
    result.maskedPaths = unmasked ? [] : [...defaultMaskedPaths];
    result.readonlyPaths = unmasked ? [] : [...defaultReadonlyPaths];
  }
  return result;
}

/**
 * The pod's hostname: spec.hostname or the name, at most 63 characters (Go: GeneratePodHostNameAndDomain).
 * Throws when spec.hostname is not a DNS label.
 */
export function podHostname(pod: V1Pod): string {
  return podHostnameAndDomain(pod, '').hostname;
}

/** Pod-level DNS settings for dnsPolicy None, or extra ones from spec.dnsConfig (Go: GetPodDNS, simplified). */
export function defaultPodDnsConfig(pod: V1Pod): runtimeapi.DNSConfigInit | undefined {
  const dns = pod.spec?.dnsConfig;
  if (!dns && pod.spec?.dnsPolicy !== 'None') return undefined;
  return {
    servers: [...(dns?.nameservers ?? [])],
    searches: [...(dns?.searches ?? [])],
    options: (dns?.options ?? []).map((o) => (o.value !== undefined && o.value !== null ? `${o.name}:${o.value}` : (o.name ?? ''))),
  };
}

/** Go: ConvertPodSysctlsVariableToDotsSeparator for one name. */
export function sysctlToDotsSeparator(name: string): string {
  const first = name.search(/[./]/);
  if (first < 0 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

export interface SandboxConfigOptions {
  podLogsRootDirectory: string;
  cgroupParent?: string;
  dnsConfig?: runtimeapi.DNSConfigInit;
  /** The cluster domain for the pod's FQDN (setHostnameAsFQDN). Default ''. */
  clusterDomain?: string;
}

/** The CRI PodSandboxConfig for a pod (Go: generatePodSandboxConfig + generatePodSandboxLinuxConfig). */
export function generatePodSandboxConfig(pod: V1Pod, attempt: number, opts: SandboxConfigOptions): runtimeapi.PodSandboxConfigInit {
  const meta = pod.metadata ?? {};
  const config: runtimeapi.PodSandboxConfigInit = {
    metadata: { name: meta.name ?? '', namespace: meta.namespace ?? '', uid: meta.uid ?? '', attempt },
    labels: newPodLabels(pod),
    annotations: newPodAnnotations(pod),
    logDirectory: buildPodLogsDirectory(opts.podLogsRootDirectory, meta.namespace ?? '', meta.name ?? '', meta.uid ?? ''),
    // A host-network pod has no UTS namespace of its own: the runtime refuses a hostname for it.
    hostname: podSandboxHostname(pod, opts.clusterDomain ?? ''),
  };
  if (opts.dnsConfig) config.dnsConfig = opts.dnsConfig;

  const portMappings: runtimeapi.PortMappingInit[] = [];
  for (const container of pod.spec?.containers ?? []) {
    for (const port of container.ports ?? []) {
      portMappings.push({
        protocol: (port.protocol ?? 'TCP') as runtimeapi.Protocol,
        containerPort: port.containerPort,
        hostPort: port.hostPort ?? 0,
        hostIp: port.hostIP ?? '',
      });
    }
  }
  if (portMappings.length > 0) config.portMappings = portMappings;

  const podSc = pod.spec?.securityContext ?? {};
  const securityContext: runtimeapi.LinuxSandboxSecurityContextInit = {
    namespaceOptions: namespaceOptions(pod),
    privileged: allContainers(pod).some((c) => c.securityContext?.privileged === true),
    seccomp: seccompProfile(podSc.seccompProfile),
  };
  if (podSc.appArmorProfile) securityContext.apparmor = criAppArmorProfile(podSc.appArmorProfile).apparmor;
  if (podSc.runAsUser !== undefined && podSc.runAsUser !== null) securityContext.runAsUser = { value: podSc.runAsUser };
  if (podSc.runAsGroup !== undefined && podSc.runAsGroup !== null) securityContext.runAsGroup = { value: podSc.runAsGroup };
  const groups = [...(podSc.supplementalGroups ?? [])];
  if (podSc.fsGroup !== undefined && podSc.fsGroup !== null) groups.push(podSc.fsGroup);
  if (groups.length > 0) securityContext.supplementalGroups = groups;
  if (podSc.seLinuxOptions) {
    const s = podSc.seLinuxOptions;
    securityContext.selinuxOptions = { user: s.user ?? '', role: s.role ?? '', type: s.type ?? '', level: s.level ?? '' };
  }
  const sysctls: Record<string, string> = {};
  for (const sysctl of podSc.sysctls ?? []) sysctls[sysctlToDotsSeparator(sysctl.name)] = sysctl.value;
  config.linux = { cgroupParent: opts.cgroupParent ?? '', securityContext, sysctls };
  return config;
}

export interface EnvContext {
  podIP: string;
  podIPs: string[];
  node: NodeInfoForPods;
  sources?: ConfigMapAndSecretSource;
  /** The cluster's services for the service variables; without it there are none (Go: no API server). */
  services?: ServiceSource;
  /** Where the InvalidEnvironmentVariableNames warning of envFrom goes. */
  recorder?: EventRecorder;
}

/** Go: validation.IsEnvVarName (the rule of Kubernetes up to 1.30). */
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Go: podFieldSelectorRuntimeValue: the fields only the kubelet knows, then the object's own metadata. */
function podFieldValue(pod: V1Pod, fieldPath: string, ctx: EnvContext): string {
  const hostIPs = ctx.node.hostIPs?.() ?? (pod.status?.hostIPs?.map((h) => h.ip ?? '').filter(Boolean) ?? (pod.status?.hostIP ? [pod.status.hostIP] : []));
  switch (fieldPath) {
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return hostIPs[0] ?? '';
    case 'status.hostIPs':
      return hostIPs.join(',');
    case 'status.podIP':
      return ctx.podIP;
    case 'status.podIPs':
      return ctx.podIPs.join(',');
  }
  try {
    return extractFieldPathAsString(pod, fieldPath);
  } catch (err) {
    throw new ContainerConfigError((err as Error).message);
  }
}

/**
 * Go: containerResourceRuntimeValue on the pod defaulted for the downward API: limits missing from
 * the spec read as node allocatable (defaultPodLimitsForDownwardAPI).
 */
function resourceFieldValue(pod: V1Pod, container: V1Container, source: NonNullable<V1EnvVarSource['resourceFieldRef']>, ctx: EnvContext): string {
  const allocatable = { milliCpu: ctx.node.allocatableMilliCpu, memoryBytes: ctx.node.allocatableMemoryBytes };
  try {
    return source.containerName
      ? extractResourceValueByContainerName(source, pod, source.containerName, allocatable)
      : extractContainerResourceValue(source, container, allocatable);
  } catch (err) {
    throw new ContainerConfigError((err as Error).message);
  }
}

/**
 * The container's environment in order: envFrom entries, then env, each $(VAR)-expanded with what
 * came before and the service variables, then the service variables the container does not set
 * itself (Go: makeEnvironmentVariables). Until the services have been listed once, only static
 * pods get an environment (Go: serviceHasSynced).
 */
export async function makeEnvironmentVariables(pod: V1Pod, container: V1Container, ctx: EnvContext): Promise<Map<string, string>> {
  const env = new Map<string, string>();
  const namespace = pod.metadata?.namespace ?? '';
  const sources = ctx.sources;
  if (ctx.services && !isStaticPod(pod) && !ctx.services.hasSynced()) throw new ContainerConfigError(SERVICES_NOT_SYNCED_MESSAGE);
  // The API server defaults enableServiceLinks to true.
  const serviceEnv = serviceEnvVarMap(ctx.services, namespace, pod.spec?.enableServiceLinks ?? true);
  const need = (kind: string, name: string) => new ContainerConfigError(`couldn't get ${kind} ${namespace}/${name}: no ${kind} source configured`);

  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let data: Record<string, string> | undefined;
    let optional = false;
    let kind = '';
    let name = '';
    if (from.configMapRef) {
      kind = 'configmap';
      name = from.configMapRef.name ?? '';
      optional = from.configMapRef.optional === true;
      if (!sources && !optional) throw need(kind, name);
      data = await sources?.getConfigMap(namespace, name);
    } else if (from.secretRef) {
      kind = 'secret';
      name = from.secretRef.name ?? '';
      optional = from.secretRef.optional === true;
      if (!sources && !optional) throw need(kind, name);
      data = await sources?.getSecret(namespace, name);
    }
    if (!data) {
      if (optional || kind === '') continue;
      throw new ContainerConfigError(`${kind} ${JSON.stringify(name)} not found`);
    }
    // Go: keys that are not valid variable names are skipped, with one warning per source.
    const invalidKeys: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = prefix + key;
      if (!ENV_VAR_NAME.test(name)) invalidKeys.push(name);
      else env.set(name, value);
    }
    if (invalidKeys.length > 0) {
      invalidKeys.sort();
      ctx.recorder?.event(
        pod,
        'Warning',
        'InvalidEnvironmentVariableNames',
        `Keys [${invalidKeys.join(', ')}] from the EnvFrom ${kind === 'configmap' ? 'configMap' : 'secret'} ${namespace}/${name} were skipped since they are considered invalid environment variable names.`,
      );
    }
  }

  for (const variable of container.env ?? []) {
    let value: string | undefined;
    if (variable.valueFrom) {
      const from = variable.valueFrom;
      if (from.fieldRef) value = podFieldValue(pod, from.fieldRef.fieldPath, ctx);
      else if (from.resourceFieldRef) value = resourceFieldValue(pod, container, from.resourceFieldRef, ctx);
      else if (from.configMapKeyRef || from.secretKeyRef) {
        const ref = (from.configMapKeyRef ?? from.secretKeyRef)!;
        const kind = from.configMapKeyRef ? 'configmap' : 'secret';
        const optional = ref.optional === true;
        if (!sources) {
          if (optional) continue;
          throw need(kind, ref.name ?? '');
        }
        const data = kind === 'configmap' ? await sources.getConfigMap(namespace, ref.name ?? '') : await sources.getSecret(namespace, ref.name ?? '');
        if (!data) {
          if (optional) continue;
          throw new ContainerConfigError(`${kind} ${JSON.stringify(ref.name ?? '')} not found`);
        }
        if (!(ref.key in data)) {
          if (optional) continue;
          throw new ContainerConfigError(`couldn't find key ${ref.key} in ${kind === 'configmap' ? 'ConfigMap' : 'Secret'} ${namespace}/${ref.name ?? ''}`);
        }
        value = data[ref.key];
      }
    } else {
      value = expand(variable.value ?? '', (name) => env.get(name) ?? serviceEnv.get(name));
    }
    env.set(variable.name, value ?? '');
  }
  // What the container sets itself wins over a service variable of the same name.
  for (const [name, value] of serviceEnv) if (!env.has(name)) env.set(name, value);
  return env;
}
