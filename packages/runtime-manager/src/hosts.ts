// The pod's hostname and domain and the /etc/hosts file the kubelet manages for its containers (Go:
// kubelet_pods.go GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded, makeHostsMount,
// ensureHostsFile, managedHostsFileContent, nodeHostsFileContent; pkg/kubelet/util
// GetNodenameForKernel).
import type { V1Container, V1HostAlias, V1Pod } from '@kubernetes/client-node';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import type { RuntimeFs } from './fs.js';

/** Where the hosts file goes in a container, and the node's own hosts file (Go: etcHostsPath). */
export const ETC_HOSTS_PATH = '/etc/hosts';
/** The name Go gives the hosts mount (kubecontainer.Mount.Name). */
export const MANAGED_ETC_HOSTS_MOUNT_NAME = 'k8s-managed-etc-hosts';
export const MANAGED_HOSTS_HEADER = '# Kubernetes-managed hosts file.\n';
export const MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

/** Longest pod hostname: 64 bytes with the terminating NUL. */
const HOSTNAME_MAX_LENGTH = 63;
/** Longest FQDN as the kernel's nodename (setHostnameAsFQDN). */
const FQDN_MAX_LENGTH = 64;
const DNS1123_LABEL_MAX_LENGTH = 63;
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL_ERROR = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const dns1123Label = new RegExp(`^${DNS1123_LABEL_FMT}$`);

/** Go: validation.IsDNS1123Label: the problems with value, none when it is a valid label. */
export function isDns1123Label(value: string): string[] {
  const errors: string[] = [];
  if (value.length > DNS1123_LABEL_MAX_LENGTH) errors.push(`must be no more than ${DNS1123_LABEL_MAX_LENGTH} characters`);
  if (!dns1123Label.test(value)) {
    errors.push(`${DNS1123_LABEL_ERROR} (e.g. 'my-name' or '123-abc', regex used for validation is '${DNS1123_LABEL_FMT}')`);
  }
  return errors;
}

/** Go: truncatePodHostnameIfNeeded: at most 63 characters, not ending in '-' or '.'. */
export function truncatePodHostnameIfNeeded(podName: string, hostname: string): string {
  if (hostname.length <= HOSTNAME_MAX_LENGTH) return hostname;
  const truncated = hostname.slice(0, HOSTNAME_MAX_LENGTH).replace(/[-.]+$/, '');
  if (truncated.length === 0) throw new Error(`hostname for pod ${JSON.stringify(podName)} was invalid: ${JSON.stringify(hostname)}`);
  return truncated;
}

export interface PodHostnameAndDomain {
  /** spec.hostname, else the pod name; at most 63 characters. */
  hostname: string;
  /** `<subdomain>.<namespace>.svc.<clusterDomain>` when spec.subdomain is set, else ''. */
  domain: string;
}

/** The pod's hostname and domain (Go: GeneratePodHostNameAndDomain). Throws for an invalid hostname or subdomain. */
export function podHostnameAndDomain(pod: V1Pod, clusterDomain: string): PodHostnameAndDomain {
  const podName = pod.metadata?.name ?? '';
  let hostname = podName;
  const specHostname = pod.spec?.hostname ?? '';
  if (specHostname.length > 0) {
    const problems = isDns1123Label(specHostname);
    if (problems.length > 0) throw new Error(`pod Hostname ${JSON.stringify(specHostname)} is not a valid DNS label: ${problems.join(';')}`);
    hostname = specHostname;
  }
  hostname = truncatePodHostnameIfNeeded(podName, hostname);
  let domain = '';
  const subdomain = pod.spec?.subdomain ?? '';
  if (subdomain.length > 0) {
    const problems = isDns1123Label(subdomain);
    if (problems.length > 0) throw new Error(`pod Subdomain ${JSON.stringify(subdomain)} is not a valid DNS label: ${problems.join(';')}`);
    domain = `${subdomain}.${pod.metadata?.namespace ?? ''}.svc.${clusterDomain}`;
  }
  return { hostname, domain };
}

/**
 * The hostname the sandbox's UTS namespace gets (Go: util.GetNodenameForKernel): the FQDN when
 * setHostnameAsFQDN and there is a domain, failing when that is over 64 characters.
 */
export function nodenameForKernel(hostname: string, domain: string, setHostnameAsFQDN: boolean | undefined): string {
  if (domain.length === 0 || setHostnameAsFQDN !== true) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > FQDN_MAX_LENGTH) {
    throw new Error(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDN_MAX_LENGTH} characters is the max, ${fqdn.length} characters requested)`,
    );
  }
  return fqdn;
}

/** The sandbox hostname: '' for host-network pods (they share the node's UTS namespace). */
export function podSandboxHostname(pod: V1Pod, clusterDomain: string): string {
  if (pod.spec?.hostNetwork === true) return '';
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  return nodenameForKernel(hostname, domain, pod.spec?.setHostnameAsFQDN);
}

/** The `# Entries added by HostAliases.` section, '' without aliases (Go: hostsEntriesFromHostAliases). */
export function hostsEntriesFromHostAliases(hostAliases: V1HostAlias[] | undefined): string {
  if (!hostAliases || hostAliases.length === 0) return '';
  let out = '\n# Entries added by HostAliases.\n';
  for (const alias of hostAliases) out += `${alias.ip}\t${(alias.hostnames ?? []).join('\t')}\n`;
  return out;
}

/** The hosts file of a pod on the pod network (Go: managedHostsFileContent). */
export function managedHostsFileContent(podIPs: string[], hostname: string, domain: string, hostAliases: V1HostAlias[] | undefined): string {
  let out = MANAGED_HOSTS_HEADER;
  out += '127.0.0.1\tlocalhost\n';
  out += '::1\tlocalhost ip6-localhost ip6-loopback\n';
  out += 'fe00::0\tip6-localnet\n';
  out += 'fe00::0\tip6-mcastprefix\n';
  out += 'fe00::1\tip6-allnodes\n';
  out += 'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) out += domain.length > 0 ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + hostsEntriesFromHostAliases(hostAliases);
}

/** The hosts file of a host-network pod: the node's, plus the aliases (Go: nodeHostsFileContent). */
export function nodeHostsFileContent(nodeHosts: Buffer | string, hostAliases: V1HostAlias[] | undefined): Buffer {
  return Buffer.concat([
    Buffer.from(MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK),
    typeof nodeHosts === 'string' ? Buffer.from(nodeHosts) : nodeHosts,
    Buffer.from(hostsEntriesFromHostAliases(hostAliases)),
  ]);
}

/**
 * Whether a container gets the managed /etc/hosts (Go: shouldMountHostsFile and makeMounts): the pod
 * has IPs or uses the host network, and the container mounts no volume at /etc/hosts itself.
 */
export function shouldMountHostsFile(pod: V1Pod, container: V1Container, podIPs: string[]): boolean {
  if (!(podIPs.length > 0 || pod.spec?.hostNetwork === true)) return false;
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH);
}

/** `<podDir>/etc-hosts` (Go: getEtcHostsPath). */
export function etcHostsPath(podDir: string): string {
  return `${podDir.replace(/\/+$/, '')}/etc-hosts`;
}

export interface HostsFileParams {
  podIPs: string[];
  hostname: string;
  domain: string;
  hostAliases?: V1HostAlias[];
  hostNetwork: boolean;
  /** The node's hosts file a host-network pod starts from. Default /etc/hosts. */
  nodeHostsFile?: string;
}

/**
 * Writes the pod's hosts file (mode 0644) and returns the CRI mount for it (Go: makeHostsMount +
 * ensureHostsFile). The file is rewritten each time, so it follows the pod's IPs and aliases.
 */
export async function makeHostsMount(fs: RuntimeFs, podDir: string, params: HostsFileParams): Promise<runtimeapi.MountInit> {
  const path = etcHostsPath(podDir);
  const content = params.hostNetwork
    ? nodeHostsFileContent(await fs.readFile(params.nodeHostsFile ?? ETC_HOSTS_PATH), params.hostAliases)
    : Buffer.from(managedHostsFileContent(params.podIPs, params.hostname, params.domain, params.hostAliases));
  await fs.writeFile(path, content, 0o644);
  return { containerPath: ETC_HOSTS_PATH, hostPath: path, readonly: false, selinuxRelabel: true };
}
