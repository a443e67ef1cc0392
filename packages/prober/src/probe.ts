// The outcome of one probe (Go: pkg/probe Result) and helpers shared by the single probers.
import { kubeletUserAgent, packageVersion } from '@kubelet-ts/core';

/**
 * What one probe run found (Go: probe.Result). `warning` is a success with something the user should
 * see (an HTTP redirect to another host that was not followed); `unknown` means the probe could not
 * be run at all (a bad port name, a runtime error), the Go prober's error path.
 */
export type ProbeOutcome = 'success' | 'warning' | 'failure' | 'unknown';

export interface ProbeResponse {
  result: ProbeOutcome;
  /** What the user sees in events: the command output, the HTTP body, or the error text. */
  output: string;
}

/** Go: maxReadLength / maxRespBodyLength, 10 KiB of exec output or HTTP body. */
export const MAX_PROBE_OUTPUT_BYTES = 10 * 1024;

/** The probe's User-Agent for a kubelet version: `v1.31.2` or `1.31.2` -> `kube-probe/1.31` (Go: userAgent). */
export function probeUserAgent(kubeletVersion: string): string {
  return kubeletUserAgent('probe', kubeletVersion);
}

export const DEFAULT_PROBE_USER_AGENT = probeUserAgent(packageVersion(new URL('../package.json', import.meta.url)));

/** Go's net.JoinHostPort: brackets an IPv6 literal. */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

const errnoText: Record<string, string> = {
  ECONNREFUSED: 'connect: connection refused',
  EHOSTUNREACH: 'connect: no route to host',
  ENETUNREACH: 'connect: network is unreachable',
  EADDRNOTAVAIL: 'connect: cannot assign requested address',
  EACCES: 'connect: permission denied',
  EPERM: 'connect: operation not permitted',
  ETIMEDOUT: 'i/o timeout',
  UND_ERR_CONNECT_TIMEOUT: 'i/o timeout',
};

/** The errno-like code of an error or of its cause chain. */
export function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * A dial error as Go prints it: `dial tcp 10.1.2.3:80: connect: connection refused`,
 * `dial tcp 10.1.2.3:80: i/o timeout`, `dial tcp: lookup web.invalid: no such host`.
 * Returns undefined for errors that are not about dialing.
 */
export function goDialError(err: unknown, host: string, port: number | string): string | undefined {
  const code = errorCode(err);
  if (code === undefined) return undefined;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return `dial tcp: lookup ${host.replace(/^\[|\]$/g, '')}: no such host`;
  const text = errnoText[code];
  return text ? `dial tcp ${joinHostPort(host.replace(/^\[|\]$/g, ''), port)}: ${text}` : undefined;
}
