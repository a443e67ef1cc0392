import { isIP } from 'node:net';
import type { V1Node } from '@kubernetes/client-node';
import { noopLogger, type Logger } from '@kubelet-ts/core';

/**
 * The node's host IPs (Go: Kubelet.GetHostIPs, GetNodeHostIPs of getNodeAnyWay): the addresses of the Node as the
 * API server last gave it, else of the Node as the kubelet would register it (standalone, or before registration).
 */
export class NodeHostIPs {
  private known: string[] = [];

  constructor(
    private readonly opts: {
      /** Go: getNodeAnyWay; its node status setters detect the addresses (--node-ip, the hostname, DNS, an interface). */
      getNode: () => Promise<V1Node | undefined>;
      /** The Node as last synced with the API server (API server mode). */
      lastNode?: () => V1Node | undefined;
      logger?: Logger;
    },
  ) {}

  /** Learns the addresses for when no synced Node is known; errors are logged, never thrown. */
  async detect(): Promise<void> {
    try {
      const node = await this.opts.getNode();
      if (node) this.known = nodeHostIPs(node);
    } catch (error) {
      (this.opts.logger ?? noopLogger).error('Failed to detect the node IPs', error);
    }
  }

  /** At most one IP of each family, the primary first; empty while unknown. */
  get(): string[] {
    const node = this.opts.lastNode?.();
    const fromNode = node ? nodeHostIPs(node) : [];
    return fromNode.length > 0 ? fromNode : this.known;
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
