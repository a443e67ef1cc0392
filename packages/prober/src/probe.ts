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

// Go's network error texts live in core, shared with the runtime manager's lifecycle hooks.
export { errorCode, goDialError, joinHostPort } from '@kubelet-ts/core';
