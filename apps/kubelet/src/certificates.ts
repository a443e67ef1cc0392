import { instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import type { KubeConfig, V1NodeAddress } from '@kubernetes/client-node';
import { jitter, type Clock, type Logger } from '@kubelet-ts/core';
import {
  CLIENT_USAGES,
  CertificateManager,
  FileCertificateStore,
  KUBELET_SERVING_SIGNER,
  KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
  SERVING_USAGES,
  certificateSigningRequestsFor,
  loadClientCert,
  nodeClientTemplate,
  type CertificateTemplate,
} from '@kubelet-ts/certificate';
import type { NodeStatusManager } from '@kubelet-ts/node-status';
import type { KubeletMetrics } from '@kubelet-ts/server';
import type { KubeletConfig } from './config.js';
import { Tokens } from './container.js';

const BOOTSTRAP_RETRY_INITIAL_MS = 1_000;
const BOOTSTRAP_RETRY_MAX_MS = 30_000;

/**
 * Go: bootstrap.LoadClientCert, before anything talks to the API server. A failure (API server down, a bad or
 * expired bootstrap token, a denied request) is logged and retried with backoff until it succeeds or the kubelet
 * stops; where Go exits for its supervisor to restart it, this kubelet keeps its healthz and local parts waiting.
 */
export async function bootstrapClientCertificate(config: KubeletConfig, clock: Clock, logger: Logger, signal: AbortSignal): Promise<void> {
  if (!config.bootstrapKubeconfig || !config.kubeconfig) return;
  let delay = BOOTSTRAP_RETRY_INITIAL_MS;
  for (;;) {
    try {
      await loadClientCert({
        kubeconfigPath: config.kubeconfig,
        bootstrapKubeconfigPath: config.bootstrapKubeconfig,
        certDir: config.certDir,
        nodeName: config.nodeName,
        clock,
        logger: logger.with({ component: 'certificate-bootstrap' }),
        signal,
      });
      return;
    } catch (error) {
      if (signal.aborted) throw error;
      const retryInMs = Math.round(jitter(delay, 0.1));
      logger.error('Failed to bootstrap the client certificate with --bootstrap-kubeconfig; retrying', error, { bootstrapKubeconfig: config.bootstrapKubeconfig, retryInMs });
      await clock.sleep(retryInMs, signal);
      delay = Math.min(delay * 2, BOOTSTRAP_RETRY_MAX_MS);
    }
  }
}

/** Go: NewKubeletServerCertificateManager's template: the node's name and its addresses as SANs. */
export function servingCertificateTemplate(nodeName: string, addresses: readonly V1NodeAddress[]): CertificateTemplate | undefined {
  const dnsNames = new Set<string>();
  const ipAddresses = new Set<string>();
  for (const address of addresses) {
    if (['Hostname', 'InternalDNS', 'ExternalDNS'].includes(address.type)) dnsNames.add(address.address);
    else if (['InternalIP', 'ExternalIP'].includes(address.type)) ipAddresses.add(address.address);
  }
  if (dnsNames.size === 0 && ipAddresses.size === 0) return undefined;
  return { commonName: `system:node:${nodeName}`, organization: ['system:nodes'], dnsNames: [...dnsNames], ipAddresses: [...ipAddresses] };
}

/** Registers the client and serving certificate managers (undefined unless rotateCertificates / serverTLSBootstrap). */
export function registerCertificateDeps(c: DependencyContainer, config: KubeletConfig): void {
  const logger = (c: DependencyContainer) => c.resolve<Logger>(Tokens.Logger).with({ component: 'certificate-manager' });
  // Go registers the certificate manager metrics for the certificates it rotates; resolved by the managers.
  let hooks: ReturnType<KubeletMetrics['watchCertificates']> | undefined;
  const metrics = (c: DependencyContainer) =>
    (hooks ??= c.resolve<KubeletMetrics>(Tokens.Metrics).watchCertificates({
      now: () => c.resolve<Clock>(Tokens.Clock).now(),
      clientNotAfter: config.rotateCertificates ? () => c.resolve<CertificateManager | undefined>(Tokens.ClientCertificateManager)?.current()?.notAfter : undefined,
      serverNotAfter: config.serverTLSBootstrap ? () => c.resolve<CertificateManager | undefined>(Tokens.ServerCertificateManager)?.current()?.notAfter : undefined,
    }));
  c.register<CertificateManager | undefined>(Tokens.ClientCertificateManager, {
    useFactory: instanceCachingFactory((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig || !config.rotateCertificates) return undefined;
      const user = kubeConfig.getCurrentUser();
      metrics(c);
      return new CertificateManager({
        name: 'client',
        // Go: the store's own pair, else the kubeconfig's certificate files.
        store: new FileCertificateStore({ pairNamePrefix: 'kubelet-client', certDirectory: config.certDir, certFile: user?.certFile, keyFile: user?.keyFile }),
        client: () => certificateSigningRequestsFor(kubeConfig),
        template: () => nodeClientTemplate(config.nodeName),
        signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
        usages: CLIENT_USAGES,
        clock: c.resolve(Tokens.Clock),
        logger: logger(c),
        onRotationError: () => metrics(c).clientRenewError(),
      });
    }),
  });
  c.register<CertificateManager | undefined>(Tokens.ServerCertificateManager, {
    useFactory: instanceCachingFactory((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig || !config.serverTLSBootstrap) return undefined;
      metrics(c);
      return new CertificateManager({
        name: 'server',
        store: new FileCertificateStore({ pairNamePrefix: 'kubelet-server', certDirectory: config.certDir, certFile: config.tlsCertFile, keyFile: config.tlsPrivateKeyFile }),
        client: () => certificateSigningRequestsFor(kubeConfig),
        // Go: getLastObservedNodeAddresses: nothing is requested before the node status has addresses.
        template: () => servingCertificateTemplate(config.nodeName, c.resolve<NodeStatusManager | undefined>(Tokens.NodeStatus)?.lastNode()?.status?.addresses ?? []),
        signerName: KUBELET_SERVING_SIGNER,
        usages: SERVING_USAGES,
        clock: c.resolve(Tokens.Clock),
        logger: logger(c),
        onRotated: (_pair, previous) => metrics(c).serverRotated(previous?.notBefore),
      });
    }),
  });
}
