// What probes and lifecycle hooks share: a handler's port, and the User-Agent the kubelet's HTTP clients send.
import { readFileSync } from 'node:fs';
import type { V1Container } from '@kubernetes/client-node';

/** Go's strconv.Atoi: an optional sign and decimal digits, nothing else. */
function atoi(text: string): number {
  if (!/^[+-]?\d+$/.test(text)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(text)}: invalid syntax`);
  return Number.parseInt(text, 10);
}

/**
 * The port number of a probe's or lifecycle handler's `port` (a number, a container port name, or a number written
 * as a string), with Go's errors (probe.ResolveContainerPort): `strconv.Atoi: parsing "web": invalid syntax` for a name
 * the container does not declare, `invalid port number: 0` out of 1..65535.
 */
export function resolveContainerPort(port: number | string | undefined, container: V1Container | undefined): number {
  let value: number;
  if (typeof port === 'number') value = port;
  else if (typeof port === 'string') {
    const named = container?.ports?.find((p) => p.name === port);
    value = named ? named.containerPort : atoi(port);
  } else throw new Error(`intOrString had no kind: ${JSON.stringify(port)}`);
  if (Number.isInteger(value) && value > 0 && value < 65536) return value;
  throw new Error(`invalid port number: ${value}`);
}

/** The User-Agent of a kubelet HTTP client (Go: userAgent(purpose)): `v1.31.2` and `probe` give `kube-probe/1.31`. */
export function kubeletUserAgent(purpose: string, kubeletVersion: string): string {
  const match = /^v?(\d+)\.(\d+)/.exec(kubeletVersion.trim());
  return match ? `kube-${purpose}/${match[1]}.${match[2]}` : `kube-${purpose}/${kubeletVersion.trim().replace(/^v/, '')}`;
}

/** The version in a package.json (e.g. `new URL('../package.json', import.meta.url)`), '0.0' when unreadable. */
export function packageVersion(packageJson: URL): string {
  try {
    return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  } catch {
    return '0.0';
  }
}
