// A pod's resolver configuration for its sandbox (Go: pkg/kubelet/network/dns/dns.go Configurer):
// dnsPolicy ClusterFirst / ClusterFirstWithHostNet / Default / None, spec.dnsConfig merged on top,
// the node's resolv.conf as the base, and the resolver's limits on nameservers and search paths.
import * as nodeFs from 'node:fs';
import { isIPv6 } from 'node:net';
import type { V1Pod, V1PodDNSConfigOption } from '@kubernetes/client-node';
import { noopEventRecorder, defaultLogger, podRef, type EventObject, type EventRecorder, type Logger } from '@kubelet-ts/core';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { formatPod, isHostNetworkPod } from './helpers.js';

/** At most this many nameservers reach the pod (Go: validation.MaxDNSNameservers). */
export const MAX_DNS_NAMESERVERS = 3;
/** At most this many search paths (Go: validation.MaxDNSSearchPaths, the ExpandedDNSConfig limit, GA in 1.28). */
export const MAX_DNS_SEARCH_PATHS = 32;
/** The search line, joined by spaces, is at most this long (Go: validation.MaxDNSSearchListChars). */
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
/** A search path longer than this is dropped (Go: utilvalidation.DNS1123SubdomainMaxLength). */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
/** resolv.conf is read up to this size (Go: maxResolveConfLength, 10 MiB). */
export const MAX_RESOLV_CONF_LENGTH = 10 * (1 << 20);
/** The ndots option of ClusterFirst pods (Go: defaultDNSOptions). */
export const DEFAULT_DNS_OPTIONS: readonly string[] = ['ndots:5'];

/** Event reasons of the DNS configurer (Go uses these literals in dns.go). */
export const DnsEventReason = {
  MissingClusterDNS: 'MissingClusterDNS',
  DNSConfigForming: 'DNSConfigForming',
  CheckLimitsForResolvConf: 'CheckLimitsForResolvConf',
} as const;

/** Reads a file as text, failing with `the read limit is reached` at maxBytes or more (Go: utilio.ReadAtMost). */
export type ReadFileAtMost = (path: string, maxBytes: number) => string;

export interface DnsConfigurerOptions {
  /** Cluster DNS server IPs (Go --cluster-dns); entries that are not IPs are dropped with a log line. */
  clusterDNS: string[];
  /** The cluster's DNS domain (Go --cluster-domain), '' for none. */
  clusterDomain: string;
  /** The resolver configuration used as the base (Go --resolv-conf, default /etc/resolv.conf); '' for none. */
  resolvConf: string;
  /** The node's IPs: with resolvConf '' a Default pod gets 127.0.0.1 / ::1 per node IP family. */
  nodeIPs?: string[];
  /** The node's reference for the node-level events (Go: nodeRef). Without it only pod events are sent. */
  nodeRef?: EventObject;
  recorder?: EventRecorder;
  logger?: Logger;
  /** Reads resolvConf. Default: node:fs, synchronously, at most maxBytes. */
  readFile?: ReadFileAtMost;
}

type PodDnsType = 'cluster' | 'host' | 'none';

/** The parsed lines of a resolv.conf. */
export interface ResolvConf {
  nameservers: string[];
  searches: string[];
  options: string[];
}

const GO_ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  ELOOP: 'too many levels of symbolic links',
};

function defaultReadFile(path: string, maxBytes: number): string {
  let fd: number;
  try {
    fd = nodeFs.openSync(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    // Go's *PathError text, e.g. "open /etc/resolv.conf: no such file or directory".
    if (GO_ERRNO_TEXT[code]) throw Object.assign(new Error(`open ${path}: ${GO_ERRNO_TEXT[code]}`), { code });
    throw err;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    // Only the bytes read are copied out: the buffer needs no zero fill.
    const buffer = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      let n: number;
      try {
        n = nodeFs.readSync(fd, buffer, 0, buffer.length, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? '';
        if (GO_ERRNO_TEXT[code]) throw Object.assign(new Error(`read ${path}: ${GO_ERRNO_TEXT[code]}`), { code });
        throw err;
      }
      if (n === 0) break;
      total += n;
      if (total >= maxBytes) throw new Error('the read limit is reached');
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    nodeFs.closeSync(fd);
  }
}

/** Go's utilerrors.NewAggregate(...).Error(): one message, or the distinct ones in brackets. */
function aggregateMessage(messages: string[]): string {
  const distinct = [...new Set(messages)];
  return distinct.length === 1 ? distinct[0] : `[${distinct.join(', ')}]`;
}

/**
 * Parses resolv.conf text (Go: parseResolvConf): `nameserver` lines accumulate, the last `search`
 * line wins (a trailing dot is dropped from each domain), the last `options` line wins. Throws
 * `nameserver list is empty ` for a nameserver line without an address, after parsing everything.
 */
export function parseResolvConf(text: string): ResolvConf {
  const result: ResolvConf = { nameservers: [], searches: [], options: [] };
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    if (fields.length === 0) continue;
    if (fields[0] === 'nameserver') {
      if (fields.length >= 2) result.nameservers.push(fields[1]);
      else errors.push('nameserver list is empty ');
    }
    if (fields[0] === 'search') result.searches = fields.slice(1).map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
    if (fields[0] === 'options') result.options = fields.slice(1);
  }
  if (errors.length > 0) throw new Error(aggregateMessage(errors));
  return result;
}

/** The first occurrence of each entry, in order (Go: omitDuplicates). */
export function omitDuplicates(values: string[]): string[] {
  return [...new Set(values)];
}

/**
 * Merges pod DNS options into existing ones; the pod's win on the same name (Go: mergeDNSOptions).
 * Go rebuilds the list from a map, so its order is random; here existing names keep their place.
 */
export function mergeDnsOptions(existing: string[], podOptions: V1PodDNSConfigOption[]): string[] {
  const merged = new Map<string, string>();
  for (const option of existing) {
    const index = option.indexOf(':');
    if (index !== -1) merged.set(option.slice(0, index), option.slice(index + 1));
    else merged.set(option, '');
  }
  for (const option of podOptions) merged.set(option.name ?? '', option.value ?? '');
  return [...merged].map(([name, value]) => (value !== '' ? `${name}:${value}` : name));
}

/** The DNS handling a pod gets from its dnsPolicy (Go: getPodDNSType). Throws for an unknown policy. */
function podDnsType(pod: V1Pod): PodDnsType {
  // The API server (and the static pod defaulting) sets ClusterFirst when the policy is empty.
  const policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  switch (policy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      // A host-network pod with ClusterFirst falls back to Default.
      return isHostNetworkPod(pod) ? 'host' : 'cluster';
    case 'Default':
      return 'host';
    default:
      throw new Error(`invalid DNSPolicy=${policy}`);
  }
}

/**
 * Builds the CRI DNSConfig of each pod (Go: dns.Configurer). Pass `getPodDNS` to the runtime manager
 * as `dnsConfigFor` and `clusterDomain` as its `clusterDomain`.
 */
export class DnsConfigurer {
  readonly clusterDomain: string;
  readonly resolvConf: string;
  readonly clusterDNS: readonly string[];
  private readonly nodeIPs: readonly string[];
  private readonly nodeRef?: EventObject;
  private readonly recorder: EventRecorder;
  private readonly logger: Logger;
  private readonly readFile: ReadFileAtMost;

  constructor(opts: DnsConfigurerOptions) {
    this.clusterDomain = opts.clusterDomain;
    this.resolvConf = opts.resolvConf;
    this.nodeIPs = [...(opts.nodeIPs ?? [])];
    this.nodeRef = opts.nodeRef;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.logger = opts.logger ?? defaultLogger;
    this.readFile = opts.readFile ?? defaultReadFile;
    const clusterDNS: string[] = [];
    for (const entry of opts.clusterDNS) {
      const ip = parseIP(entry);
      // Go (NewMainKubelet) drops what does not parse as an IP.
      if (ip === undefined) this.logger.info('Invalid clusterDNS IP', { IP: entry });
      else clusterDNS.push(ip);
    }
    this.clusterDNS = clusterDNS;
  }

  /** The node's resolver settings, empty without resolvConf (Go: getHostDNSConfig). */
  private hostDnsConfig(): ResolvConf {
    if (this.resolvConf === '') return { nameservers: [], searches: [], options: [] };
    return parseResolvConf(this.readFile(this.resolvConf, MAX_RESOLV_CONF_LENGTH));
  }

  /**
   * The pod's DNS settings (Go: GetPodDNS). Throws when resolvConf cannot be read or parsed, which
   * fails the sandbox as in Go.
   */
  getPodDNS(pod: V1Pod): runtimeapi.DNSConfigInit {
    const host = this.hostDnsConfig();
    let servers = host.nameservers;
    let searches = host.searches;
    let options = host.options;

    let dnsType: PodDnsType;
    try {
      dnsType = podDnsType(pod);
    } catch (err) {
      this.logger.error('Failed to get DNS type for pod. Falling back to DNSClusterFirst policy.', err, { pod: podRef(pod) });
      dnsType = 'cluster';
    }
    if (dnsType === 'none') {
      // None starts from nothing: only spec.dnsConfig counts.
      servers = [];
      searches = [];
      options = [];
    } else if (dnsType === 'cluster' && this.clusterDNS.length > 0) {
      // The cluster DNS server is the pod's only nameserver; it forwards what it cannot answer.
      servers = [...this.clusterDNS];
      searches = this.searchesForClusterFirst(searches, pod);
      options = [...DEFAULT_DNS_OPTIONS];
    } else {
      if (dnsType === 'cluster') {
        const nodeErrorMsg = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`;
        if (this.nodeRef) this.recorder.event(this.nodeRef, 'Warning', DnsEventReason.MissingClusterDNS, nodeErrorMsg);
        this.recorder.event(pod, 'Warning', DnsEventReason.MissingClusterDNS, `pod: ${JSON.stringify(formatPod(pod))}. ${nodeErrorMsg}`);
      }
      // Default. Without a resolv.conf, point at a resolver on the node itself and search nothing
      // (the runtime would otherwise hand the pod the node's /etc/resolv.conf).
      if (this.resolvConf === '') {
        servers = this.nodeIPs.map((ip) => (isIPv6(ip) ? '::1' : '127.0.0.1'));
        if (servers.length === 0) servers = ['127.0.0.1'];
        searches = ['.'];
      }
    }

    const podDns = pod.spec?.dnsConfig;
    if (podDns) {
      servers = omitDuplicates([...servers, ...(podDns.nameservers ?? [])]);
      searches = omitDuplicates([...searches, ...(podDns.searches ?? [])]);
      options = mergeDnsOptions(options, podDns.options ?? []);
    }
    return {
      servers: this.nameserversFitLimits(servers, pod),
      searches: this.searchesFitLimits(searches, pod),
      options,
    };
  }

  /** `<ns>.svc.<domain> svc.<domain> <domain>` then the node's searches (Go: generateSearchesForDNSClusterFirst). */
  private searchesForClusterFirst(hostSearch: string[], pod: V1Pod): string[] {
    if (this.clusterDomain === '') return hostSearch;
    const namespace = pod.metadata?.namespace ?? '';
    return omitDuplicates([`${namespace}.svc.${this.clusterDomain}`, `svc.${this.clusterDomain}`, this.clusterDomain, ...hostSearch]);
  }

  /** Go: formDNSNameserversFitsLimits. */
  private nameserversFitLimits(nameservers: string[], pod: V1Pod): string[] {
    if (nameservers.length <= MAX_DNS_NAMESERVERS) return nameservers;
    const applied = nameservers.slice(0, MAX_DNS_NAMESERVERS);
    const message = `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${applied.join(' ')}`;
    this.recorder.event(pod, 'Warning', DnsEventReason.DNSConfigForming, message);
    this.logger.error('Nameserver limits exceeded', new Error(message), { pod: podRef(pod) });
    return applied;
  }

  /** Go: formDNSSearchFitsLimits: at most 32 paths, none over 253 characters, at most 2048 characters in all. */
  private searchesFitLimits(searches: string[], pod: V1Pod): string[] {
    let exceeded = false;
    let composed = searches;
    if (composed.length > MAX_DNS_SEARCH_PATHS) {
      composed = composed.slice(0, MAX_DNS_SEARCH_PATHS);
      exceeded = true;
    }
    // Some resolvers (glibc 2.28) abort on a search path over 255 characters.
    const fitting = composed.filter((s) => Buffer.byteLength(s) <= DNS1123_SUBDOMAIN_MAX_LENGTH);
    if (fitting.length !== composed.length) exceeded = true;
    composed = fitting;
    const lineLength = Buffer.byteLength(composed.join(' '));
    if (lineLength > MAX_DNS_SEARCH_LIST_CHARS) {
      let cutCount = 0;
      let cutLength = 0;
      for (let i = composed.length - 1; i >= 0; i--) {
        cutLength += Buffer.byteLength(composed[i]) + 1;
        cutCount++;
        if (lineLength - cutLength <= MAX_DNS_SEARCH_LIST_CHARS) break;
      }
      composed = composed.slice(0, composed.length - cutCount);
      exceeded = true;
    }
    if (exceeded) {
      const message = `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${composed.join(' ')}`;
      this.recorder.event(pod, 'Warning', DnsEventReason.DNSConfigForming, message);
      this.logger.error('Search Line limits exceeded', new Error(message), { pod: podRef(pod) });
    }
    return composed;
  }

  /**
   * Warns (node event CheckLimitsForResolvConf) when the node's resolv.conf cannot be read or its search
   * line would break the limits for pods; Go calls it once as the sync loop starts when resolvConf is set.
   */
  checkLimitsForResolvConf(): void {
    const warn = (message: string, logMessage: string, kv: Record<string, unknown>): void => {
      if (this.nodeRef) this.recorder.event(this.nodeRef, 'Warning', DnsEventReason.CheckLimitsForResolvConf, message);
      this.logger.v(4).info(logMessage, kv);
    };
    let text: string;
    try {
      text = this.readFile(this.resolvConf, MAX_RESOLV_CONF_LENGTH);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      warn(message, 'Check limits for resolv.conf failed at file open', { err: message });
      return;
    }
    let hostSearch: string[];
    try {
      hostSearch = parseResolvConf(text).searches;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      warn(message, 'Check limits for resolv.conf failed at parse resolv.conf', { err: message });
      return;
    }
    let domainCountLimit = MAX_DNS_SEARCH_PATHS;
    if (this.clusterDomain !== '') domainCountLimit -= 3;
    if (hostSearch.length > domainCountLimit) {
      const log = `Resolv.conf file '${this.resolvConf}' contains search line consisting of more than ${domainCountLimit} domains!`;
      warn(log, 'Check limits for resolv.conf failed', { eventlog: log });
      return;
    }
    for (const search of hostSearch) {
      if (Buffer.byteLength(search) > DNS1123_SUBDOMAIN_MAX_LENGTH) {
        const log = `Resolv.conf file ${JSON.stringify(this.resolvConf)} contains a search path which length is more than allowed ${DNS1123_SUBDOMAIN_MAX_LENGTH} chars!`;
        warn(log, 'Check limits for resolv.conf failed', { eventlog: log });
        return;
      }
    }
    if (Buffer.byteLength(hostSearch.join(' ')) > MAX_DNS_SEARCH_LIST_CHARS) {
      const log = `Resolv.conf file '${this.resolvConf}' contains search line which length is more than allowed ${MAX_DNS_SEARCH_LIST_CHARS} chars!`;
      warn(log, 'Check limits for resolv.conf failed', { eventlog: log });
    }
  }
}

/**
 * An IP in its canonical text form (Go: netutils.ParseIPSloppy(...).String() for the usual forms), or
 * undefined. IPv4 octets may have leading zeros, which are read as decimal as Go's sloppy parser does.
 */
function parseIP(text: string): string | undefined {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const octets = v4.slice(1).map(Number);
    return octets.every((o) => o <= 255) ? octets.join('.') : undefined;
  }
  if (!isIPv6(text)) return undefined;
  try {
    // The URL parser gives the RFC 5952 form (lower case, longest zero run compressed).
    const canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
    // An IPv4-mapped address prints as dotted quad in Go.
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
    if (mapped) {
      const hi = parseInt(mapped[1], 16);
      const lo = parseInt(mapped[2], 16);
      return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
    }
    return canonical;
  } catch {
    return text;
  }
}
