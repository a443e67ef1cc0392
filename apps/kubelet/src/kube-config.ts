import { createHash } from 'node:crypto';
import { Agent } from 'node:https';
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';
import { loadedClientNode, type ClientNodeModule } from '@kubelet-ts/core';

/**
 * A KubeConfig whose API requests share keep-alive connections. client-node makes a new https.Agent for every
 * request (KubeConfig.applySecurityAuthentication), so each call paid a TCP connect, a TLS handshake and a new
 * SecureContext parsing the CA, certificate and key again: most of the kubelet's CPU per pod start through the API
 * server (profiled: TLS context and handshakes above everything else). Here every request with the same TLS
 * settings gets one agent; new settings (a rotated client certificate, a changed CA file) get a new one and the old
 * one's idle connections are closed. Proxied and plain-HTTP clusters keep client-node's own agents.
 */
export interface KeepAliveKubeConfig extends KubeConfig {
  /**
   * The client certificate in use when a certificate manager rotates it (Go: the transport's GetClientCertificate):
   * it replaces the kubeconfig's, and a new one moves requests to new connections, closing the old ones (open
   * watches included, which their informers re-open), as Go's rotating transport does.
   */
  clientCertificate?: () => { certPem: string; keyPem: string } | undefined;
}

let keepAliveKubeConfigClass: (new () => KeepAliveKubeConfig) | undefined;

/**
 * A new KeepAliveKubeConfig. client-node must have been loaded (core's loadClientNode(), which the kubelet awaits at
 * start-up in API server mode): the class extends client-node's KubeConfig, so it is defined on first use rather
 * than at import, and a standalone kubelet never loads client-node.
 */
export function newKeepAliveKubeConfig(): KeepAliveKubeConfig {
  keepAliveKubeConfigClass ??= defineKeepAliveKubeConfig(loadedClientNode());
  return new keepAliveKubeConfigClass();
}

function defineKeepAliveKubeConfig({ KubeConfig }: ClientNodeModule): new () => KeepAliveKubeConfig {
  return class extends KubeConfig implements KeepAliveKubeConfig {
    private shared: { fingerprint: string; agent: Agent } | undefined;
    clientCertificate?: () => { certPem: string; keyPem: string } | undefined;

    override async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await super.applySecurityAuthentication(context);
      const made = context.getAgent();
      if (!made || made.constructor !== Agent) return;
      const rotated = this.clientCertificate?.();
      const options = rotated ? { ...(made as Agent).options, cert: rotated.certPem, key: rotated.keyPem } : (made as Agent).options;
      const fingerprint = tlsFingerprint(options);
      if (this.shared?.fingerprint !== fingerprint) {
        this.shared?.agent.destroy();
        this.shared = { fingerprint, agent: new Agent({ ...options, keepAlive: true }) };
      }
      context.setAgent(this.shared.agent);
    }
  };
}

/** What identifies a TLS client configuration: the credentials and the checks, by content. */
function tlsFingerprint(options: Agent['options']): string {
  const hash = createHash('sha256');
  for (const value of [options.ca, options.cert, options.key, options.pfx, options.passphrase, options.servername, options.rejectUnauthorized]) {
    for (const part of Array.isArray(value) ? value : [value]) {
      hash.update(part === undefined ? '\u0000' : typeof part === 'string' || Buffer.isBuffer(part) ? part : JSON.stringify(part));
      hash.update('\u0001');
    }
  }
  return hash.digest('hex');
}
