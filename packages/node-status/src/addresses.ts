// Node IP validation and detection (Go: nodestatus.NodeAddress without a cloud provider, and
// kubelet's validateNodeIP).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import * as os from 'node:os';

/** Every address on the host's interfaces (os.networkInterfaces()). */
export function hostInterfaceAddresses(): Array<{ address: string; internal: boolean }> {
  const out: Array<{ address: string; internal: boolean }> = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) out.push({ address: a.address.replace(/%.*$/, ''), internal: a.internal });
  }
  return out;
}

/** Expands an IPv6 address to 8 groups of numbers (v4-mapped tails included). */
function ipv6Groups(ip: string): number[] {
  let text = ip.replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4[1].split('.').map(Number);
    text = text.slice(0, -v4[1].length) + `${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : new Array(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => parseInt(g || '0', 16));
}

export type IPClass = 'loopback' | 'multicast' | 'link-local' | 'unspecified' | 'unicast';

/** What kind of address ip is (Go's net.IP IsLoopback/IsMulticast/IsLinkLocalUnicast/IsUnspecified). */
export function classifyIP(ip: string): IPClass {
  const family = isIP(ip);
  if (family === 4) {
    const b = ip.split('.').map(Number);
    if (b.every((x) => x === 0)) return 'unspecified';
    if (b[0] === 127) return 'loopback';
    if (b[0] >= 224 && b[0] <= 239) return 'multicast';
    if (b[0] === 169 && b[1] === 254) return 'link-local';
    return 'unicast';
  }
  const g = ipv6Groups(ip);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return classifyIP(`${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`);
  if (g[0] >> 8 === 0xff) return 'multicast';
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local';
  return 'unicast';
}

/** Canonical text of an IP for comparisons. */
function canonicalIP(ip: string): string {
  return isIP(ip) === 6 ? ipv6Groups(ip).join(':') : ip;
}

/** Go's validateNodeIP: a usable unicast address found on one of the host's interfaces. */
export function validateNodeIP(ip: string, interfaceAddresses: () => string[]): void {
  if (isIP(ip) === 0) throw new Error(`invalid node IP: ${JSON.stringify(ip)}`);
  switch (classifyIP(ip)) {
    case 'loopback':
      throw new Error("nodeIP can't be loopback address");
    case 'multicast':
      throw new Error("nodeIP can't be a multicast address");
    case 'link-local':
      throw new Error("nodeIP can't be a link-local unicast address");
    case 'unspecified':
      throw new Error("nodeIP can't be an all zeros address");
    default:
  }
  const want = canonicalIP(ip);
  if (!interfaceAddresses().some((a) => canonicalIP(a) === want)) {
    throw new Error(`node IP: ${JSON.stringify(ip)} not found in the host's network interfaces`);
  }
}

/** --node-ip: one address, or two of different families for dual-stack. */
export function parseNodeIPs(text: string | undefined): string[] {
  if (!text) return [];
  const ips = text.split(',').map((s) => s.trim());
  for (const ip of ips) if (isIP(ip) === 0) throw new Error(`invalid ip ${JSON.stringify(ip)} in --node-ip`);
  if (ips.length > 2) throw new Error(`could not parse --node-ip ${JSON.stringify(text)}: must contain either a single IP or a dual-stack pair of IPs`);
  if (ips.length === 2 && isIP(ips[0]) === isIP(ips[1])) {
    throw new Error(`could not parse --node-ip ${JSON.stringify(text)}: must contain either a single IP or a dual-stack pair of IPs`);
  }
  return ips;
}

export interface NodeAddressDeps {
  nodeName: string;
  hostname: string;
  /** Parsed --node-ip (may be one unspecified address, which only sets the family preference). */
  nodeIPs: string[];
  interfaceAddresses: () => string[];
  /** DNS lookup of a name to its addresses. */
  lookupHost: (name: string) => Promise<string[]>;
  /** Non-loopback addresses of the host in preference order (ResolveBindAddress's fallback). */
  defaultRouteAddresses: () => string[];
}

/**
 * The InternalIP addresses the node reports: the validated --node-ip, else the hostname when it is
 * an IP, else the node name's DNS addresses, else the host's first usable interface address.
 */
export async function resolveNodeIPs(deps: NodeAddressDeps): Promise<string[]> {
  const specified = deps.nodeIPs.filter((ip) => classifyIP(ip) !== 'unspecified');
  if (specified.length > 0) {
    for (const ip of specified) {
      try {
        validateNodeIP(ip, deps.interfaceAddresses);
      } catch (err) {
        throw new Error(`failed to validate nodeIP: ${(err as Error).message}`);
      }
    }
    return specified;
  }
  const preferIPv4 = deps.nodeIPs.length === 0 || isIP(deps.nodeIPs[0]) === 4;
  if (isIP(deps.hostname) !== 0) return [deps.hostname];
  const usable = (ip: string): boolean => isIP(ip) !== 0 && classifyIP(ip) === 'unicast' && (isIP(ip) === 4) === preferIPv4;
  let lastErr: unknown;
  try {
    const found = (await deps.lookupHost(deps.nodeName)).find(usable);
    if (found) return [found];
  } catch (err) {
    lastErr = err;
  }
  const fallback = deps.defaultRouteAddresses().find(usable) ?? deps.defaultRouteAddresses().find((ip) => classifyIP(ip) === 'unicast');
  if (fallback) return [fallback];
  throw new Error(`can't get ip address of node ${deps.nodeName}. error: ${lastErr instanceof Error ? lastErr.message : 'no usable address'}`);
}

/** dns lookup with a deadline (getaddrinfo cannot be cancelled; a slow resolver must not stall the status loop). */
export async function lookupHostWithTimeout(name: string, timeoutMs = 2000): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`lookup ${name}: timed out after ${timeoutMs}ms`)), timeoutMs);
    timer.unref();
  });
  try {
    const res = await Promise.race([lookup(name, { all: true }), timeout]);
    return res.map((r) => r.address);
  } finally {
    clearTimeout(timer);
  }
}
