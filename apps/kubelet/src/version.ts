import { readFileSync } from 'node:fs';

/**
 * The Kubernetes release kubelet-ts is built after and proven against: its flags, API requests and node
 * behaviour are the Go kubelet v1.20.2's (tools/kube builds that control plane for the e2e suite).
 */
export const KUBERNETES_VERSION = 'v1.20.2';

/** kubelet-ts's own version: apps/kubelet's package.json, read at run time so a release bump needs no code change. */
export const KUBELET_TS_VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * What the node reports as nodeInfo.kubeletVersion and `kubelet --version` prints. Semver build metadata (as
 * distributions do: v1.20.2+k3s1) names kubelet-ts without changing the version precedence clients compare,
 * and keeps the probes' User-Agent kube-probe/1.20 as the Go kubelet's.
 */
export const KUBELET_VERSION = `${KUBERNETES_VERSION}+kubelet-ts.${KUBELET_TS_VERSION}`;

/** Go's version.Info as `kubelet --version=raw` prints it, with Node.js in place of the Go toolchain. */
export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  kubeletTsVersion: string;
  nodeVersion: string;
  platform: string;
}

/** Go's GOARCH names for Node's process.arch values that differ. */
const GO_ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };

export function versionInfo(): VersionInfo {
  const [, major, minor] = /^v(\d+)\.(\d+)/.exec(KUBERNETES_VERSION)!;
  return {
    major,
    minor,
    gitVersion: KUBELET_VERSION,
    kubeletTsVersion: KUBELET_TS_VERSION,
    nodeVersion: process.version,
    platform: `${process.platform}/${GO_ARCH[process.arch] ?? process.arch}`,
  };
}
