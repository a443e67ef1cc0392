import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { ClusterEnv, Kubectl } from './cluster.js';

/** kubeadm's group for nodes joining with its default bootstrap token. */
export const BOOTSTRAP_GROUP = 'system:bootstrappers:kubeadm:default-node-token';

const randomToken = (length: number) =>
  [...randomBytes(length)].map((byte) => 'abcdefghijklmnopqrstuvwxyz0123456789'[byte % 36]).join('');

/**
 * What `kubeadm init` sets up for nodes to join (and `kubeadm token create` adds to): a bootstrap token secret in
 * kube-system, and the bindings that let its group create CSRs and have the csrapproving controller approve client
 * CSRs, and let nodes renew their own client certificates. Returns the token (`<id>.<secret>`).
 */
export async function createBootstrapToken(kubectl: Kubectl, options: { expiresInMs?: number } = {}): Promise<string> {
  const id = randomToken(6);
  const secret = randomToken(16);
  const binding = (name: string, role: string, group: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
  });
  await kubectl.apply(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        description: 'kubelet-ts e2e bootstrap token',
        'token-id': id,
        'token-secret': secret,
        'usage-bootstrap-authentication': 'true',
        'usage-bootstrap-signing': 'true',
        'auth-extra-groups': BOOTSTRAP_GROUP,
        ...(options.expiresInMs !== undefined ? { expiration: new Date(Date.now() + options.expiresInMs).toISOString().replace(/\.\d+Z$/, 'Z') } : {}),
      },
    },
    binding('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', BOOTSTRAP_GROUP),
    binding('kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient', BOOTSTRAP_GROUP),
    binding('kubeadm:node-autoapprove-certificate-rotation', 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', 'system:nodes'),
  );
  return `${id}.${secret}`;
}

/** A bootstrap kubeconfig as kubeadm writes it (bootstrap-kubelet.conf): the cluster's CA and the token. */
export function writeBootstrapKubeconfig(path: string, cluster: ClusterEnv, token: string): void {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'kubernetes', cluster: { server: cluster.server, 'certificate-authority': cluster.caFile } }],
      users: [{ name: 'tls-bootstrap-token-user', user: { token } }],
      contexts: [{ name: 'tls-bootstrap-token-user@kubernetes', context: { cluster: 'kubernetes', user: 'tls-bootstrap-token-user' } }],
      'current-context': 'tls-bootstrap-token-user@kubernetes',
    }),
    { mode: 0o600 },
  );
}
