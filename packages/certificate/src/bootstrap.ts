import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { defaultLogger, loadClientNode, pemDecodeAll, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { X509Certificate } from 'node:crypto';
import { generatePrivateKeyPem, makeCertificateRequest, type CertificateTemplate } from './csr.js';
import {
  CLIENT_USAGES,
  KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
  certificateSigningRequestsFor,
  digestedCsrName,
  requestCertificate,
  waitForCertificate,
  type CertificateSigningRequests,
} from './csr-client.js';
import { FileCertificateStore, extractPrivateKeyPem } from './store.js';

/** Go: tmpPrivateKeyFile, where bootstrap keeps the key until its certificate is issued, so a retry reuses it. */
export const BOOTSTRAP_PRIVATE_KEY_FILE = 'kubelet-client.key.tmp';

/** The subject of a node's client certificate. */
export function nodeClientTemplate(nodeName: string): CertificateTemplate {
  return { commonName: `system:node:${nodeName}`, organization: ['system:nodes'] };
}

async function loadKubeConfig(path: string): Promise<KubeConfig> {
  const kubeConfig = new (await loadClientNode()).KubeConfig();
  kubeConfig.loadFromFile(path);
  if (!kubeConfig.getCurrentCluster()) throw new Error(`no current cluster in ${path}`);
  return kubeConfig;
}

/**
 * Go: isClientConfigStillValid: the kubeconfig exists, loads, has a client certificate and none of it has expired.
 * Why it is not valid is logged; only an unreadable file is an error.
 */
export async function isClientConfigStillValid(kubeconfigPath: string, now: number, logger: Logger = defaultLogger): Promise<boolean> {
  if (!existsSync(kubeconfigPath)) return false;
  let certPem: string | undefined;
  try {
    const user = (await loadKubeConfig(kubeconfigPath)).getCurrentUser();
    certPem = user?.certFile ? readFileSync(user.certFile, 'utf8') : user?.certData ? Buffer.from(user.certData, 'base64').toString() : undefined;
  } catch (error) {
    logger.error(`unable to read existing bootstrap client config from ${kubeconfigPath}`, error);
    return false;
  }
  const certificates = certPem ? pemDecodeAll(certPem, 'CERTIFICATE') : [];
  if (certificates.length === 0) {
    logger.info(`unable to read TLS certificates from existing bootstrap client config read from ${kubeconfigPath}`);
    return false;
  }
  for (const der of certificates) {
    let notAfter: number;
    try {
      notAfter = Date.parse(new X509Certificate(der).validTo);
    } catch (error) {
      logger.error(`unable to load TLS certificates from existing bootstrap client config read from ${kubeconfigPath}`, error);
      return false;
    }
    if (now > notAfter) {
      logger.info(`part of the existing bootstrap client certificate in ${kubeconfigPath} is expired: ${new Date(notAfter).toISOString()}`);
      return false;
    }
  }
  return true;
}

/**
 * Go: writeKubeconfigFromBootstrapping: the bootstrap kubeconfig's cluster (server and CA), and the issued pair as
 * the client credentials, by path, so a rotation (a new `-current.pem`) needs no new kubeconfig. Written to a
 * temporary file and renamed.
 */
export async function writeKubeconfigFromBootstrapping(bootstrap: KubeConfig, kubeconfigPath: string, pemPath: string): Promise<void> {
  const cluster = bootstrap.getCurrentCluster()!;
  const clusterEntry: Record<string, unknown> = { server: cluster.server };
  if (cluster.skipTLSVerify) clusterEntry['insecure-skip-tls-verify'] = true;
  if (cluster.caFile) clusterEntry['certificate-authority'] = cluster.caFile;
  else if (cluster.caData) clusterEntry['certificate-authority-data'] = cluster.caData;
  const document = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster: clusterEntry }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', namespace: 'default', user: 'default-auth' } }],
    'current-context': 'default-context',
    preferences: {},
    users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
  };
  mkdirSync(dirname(kubeconfigPath), { recursive: true });
  const temporary = `${kubeconfigPath}.tmp-${process.pid}`;
  writeFileSync(temporary, (await loadClientNode()).dumpYaml(document), { mode: 0o600 });
  renameSync(temporary, kubeconfigPath);
}

export interface LoadClientCertOptions {
  /** --kubeconfig: written when bootstrap succeeds. */
  kubeconfigPath: string;
  /** --bootstrap-kubeconfig. */
  bootstrapKubeconfigPath: string;
  /** --cert-dir. */
  certDir: string;
  nodeName: string;
  signal?: AbortSignal;
  clock?: Clock;
  logger?: Logger;
  /** Go: 3600 s for the request to be approved and issued. */
  waitTimeoutMs?: number;
  pollIntervalMs?: number;
  /** The API for the bootstrap credentials (default: client-node). */
  csrClientFor?: (kubeConfig: KubeConfig) => CertificateSigningRequests;
}

/**
 * Go: bootstrap.LoadClientCert. When the kubeconfig is missing or its certificate expired, authenticates with the
 * bootstrap kubeconfig (a bootstrap token), requests a client certificate for `system:node:<name>` from the
 * kube-apiserver-client-kubelet signer, waits for it, stores it as `kubelet-client-current.pem` under the cert dir
 * and writes the kubeconfig. The key waits in `kubelet-client.key.tmp` (0600) until then, so a retry sends the same
 * request; nothing else is written before the certificate is in hand. Resolves true when it bootstrapped, false
 * when the kubeconfig was already valid.
 */
export async function loadClientCert(options: LoadClientCertOptions): Promise<boolean> {
  const logger = options.logger ?? defaultLogger;
  const clock = options.clock ?? realClock;
  if (await isClientConfigStillValid(options.kubeconfigPath, clock.now(), logger)) {
    logger.v(2).info('Kubeconfig exists and is valid, skipping bootstrap', { path: options.kubeconfigPath });
    return false;
  }
  logger.v(2).info('Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file');
  let bootstrap: KubeConfig;
  try {
    bootstrap = await loadKubeConfig(options.bootstrapKubeconfigPath);
  } catch (error) {
    throw new Error(`unable to load bootstrap kubeconfig: ${(error as Error).message}`);
  }
  const store = new FileCertificateStore({ pairNamePrefix: 'kubelet-client', certDirectory: options.certDir, clock });
  // A key of an earlier pair (still on disk) is reused, else the waiting key, else a new one.
  let keyPem: string | undefined;
  try {
    keyPem = store.current().keyPem;
  } catch {
    keyPem = undefined;
  }
  const keyFile = join(options.certDir, BOOTSTRAP_PRIVATE_KEY_FILE);
  if (!keyPem) {
    logger.v(2).info('No valid private key and/or certificate found, reusing existing private key or creating a new one');
    keyPem = loadOrGenerateKeyFile(keyFile);
  }
  const template = nodeClientTemplate(options.nodeName);
  const client = (options.csrClientFor ?? certificateSigningRequestsFor)(bootstrap);
  const request = await requestCertificate(
    client,
    {
      csrPem: makeCertificateRequest(keyPem, template),
      name: digestedCsrName(keyPem, template, CLIENT_USAGES),
      signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
      usages: CLIENT_USAGES,
      privateKeyPem: keyPem,
    },
    logger,
  );
  logger.v(2).info('Waiting for client certificate to be issued', { csr: request.name });
  const certPem = await waitForCertificate(client, request, {
    signal: options.signal,
    clock,
    timeoutMs: options.waitTimeoutMs ?? 3_600_000,
    pollIntervalMs: options.pollIntervalMs,
    logger,
  });
  store.update(certPem, keyPem);
  rmSync(keyFile, { force: true });
  await writeKubeconfigFromBootstrapping(bootstrap, options.kubeconfigPath, store.currentPath());
  logger.info('Bootstrapped the client certificate', { csr: request.name, kubeconfig: options.kubeconfigPath, certificate: store.currentPath() });
  return true;
}

/** Go: keyutil.LoadOrGenerateKeyFile: the key in the file, or a new one written there 0600. */
function loadOrGenerateKeyFile(path: string): string {
  if (existsSync(path)) {
    const key = extractPrivateKeyPem(readFileSync(path, 'utf8'));
    if (key) return key;
  }
  const keyPem = generatePrivateKeyPem();
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, keyPem, { mode: 0o600 });
  renameSync(temporary, path);
  return keyPem;
}
