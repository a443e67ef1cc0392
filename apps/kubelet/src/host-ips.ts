import { isIP } from 'node:net';
import type { V1Node } from '@kubernetes/client-node';
import { noopLogger, type Logger } from '@kubelet-ts/core';
import { hostInterfaceAddresses, lookupHostWithTimeout, parseNodeIPs, resolveNodeIPs } from '@kubelet-ts/node-status';

/**
 * The node's host IPs (Go: Kubelet.GetHostIPs): from the Node's addresses as the API server has them, else,
 * standalone, from the same detection node status uses (--node-ip, the hostname, DNS, an interface).
 */
export class NodeHostIPs {
  private detected: string[] = [];

  constructor(
    private readonly opts: {
      nodeName: string;
      hostname: string;
      nodeIP?: string;
      /** The Node as last synced with the API server (API server mode). */
      lastNode?: () => V1Node | undefined;
      logger?: Logger;
    },
  ) {}

  /** Detects the addresses for when no Node is known yet; errors are logged, never thrown. */
  async detect(): Promise<void> {
    const interfaces = () => hostInterfaceAddresses().map((a) => a.address);
    try {
      this.detected = await resolveNodeIPs({
        nodeName: this.opts.nodeName,
        hostname: this.opts.hostname,
        nodeIPs: parseNodeIPs(this.opts.nodeIP),
        interfaceAddresses: interfaces,
        lookupHost: (name) => lookupHostWithTimeout(name),
        defaultRouteAddresses: () =>
          hostInterfaceAddresses()
            .filter((a) => !a.internal)
            .map((a) => a.address),
      });
    } catch (error) {
      (this.opts.logger ?? noopLogger).error('Failed to detect the node IPs', error);
    }
  }

  /** At most one IP of each family, the primary first; empty while unknown. */
  get(): string[] {
    const node = this.opts.lastNode?.();
    const fromNode = node ? nodeHostIPs(node) : [];
    return fromNode.length > 0 ? fromNode : this.detected;
  }
}

/** Go: utilnode.GetNodeHostIPs: InternalIPs then ExternalIPs; the first, and the first of the other family. */
export function nodeHostIPs(node: V1Node): string[] {
  const addresses = node.status?.addresses ?? [];
  const all = [...addresses.filter((a) => a.type === 'InternalIP'), ...addresses.filter((a) => a.type === 'ExternalIP')]
    .map((a) => a.address)
    .filter((ip) => isIP(ip) !== 0);
  if (all.length === 0) return [];
  const other = all.find((ip) => isIP(ip) !== isIP(all[0]));
  return other ? [all[0], other] : [all[0]];
}
