import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import type { KubeConfig, V1CertificateSigningRequest } from '@kubernetes/client-node';
import { apiErrorMessage, lazyApiClient, isAlreadyExists, pollUntil, realClock, WaitTimeoutError, type Clock, type Logger } from '@kubelet-ts/core';
import { parseCertificateRequest, type CertificateTemplate } from './csr.js';

/** Go: certificatesv1.KubeAPIServerClientKubeletSignerName, the signer of kubelet client certificates. */
export const KUBE_APISERVER_CLIENT_KUBELET_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** Go: certificatesv1.KubeletServingSignerName, the signer of kubelet serving certificates. */
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
/** The key usages the Go kubelet requests for its client and its serving certificate. */
export const CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];
export const SERVING_USAGES = ['digital signature', 'key encipherment', 'server auth'];

/** The two calls the kubelet makes on certificates.k8s.io/v1 CertificateSigningRequests. */
export interface CertificateSigningRequests {
  create(csr: V1CertificateSigningRequest): Promise<V1CertificateSigningRequest>;
  read(name: string): Promise<V1CertificateSigningRequest>;
}

/** CertificateSigningRequests through client-node, authenticated as the KubeConfig says. */
export function certificateSigningRequestsFor(kubeConfig: KubeConfig): CertificateSigningRequests {
  const api = lazyApiClient(kubeConfig, (k) => k.CertificatesV1Api);
  return {
    create: async (body) => (await api()).createCertificateSigningRequest({ body }),
    read: async (name) => (await api()).readCertificateSigningRequest({ name }),
  };
}

export interface CertificateRequest {
  /** The PEM certificate request. */
  csrPem: string;
  /** A fixed name (bootstrap's digested name, so a retry finds its own request); else generateName `csr-`. */
  name?: string;
  signerName: string;
  usages: string[];
  /** The request's key, to check that an existing request of the same name is ours. */
  privateKeyPem: string;
}

/**
 * Go: csr.RequestCertificate. Creates the request; when one of the same name exists (a retried bootstrap) it is
 * reused if it asks for the same thing with the same key.
 */
export async function requestCertificate(client: CertificateSigningRequests, request: CertificateRequest, logger?: Logger): Promise<{ name: string; uid: string }> {
  const body: V1CertificateSigningRequest = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: request.name ? { name: request.name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(request.csrPem).toString('base64'), usages: request.usages, signerName: request.signerName },
  };
  let created: V1CertificateSigningRequest;
  try {
    created = await client.create(body);
  } catch (error) {
    if (!(isAlreadyExists(error) && request.name)) throw new Error(`cannot create certificate signing request: ${apiErrorMessage(error)}`);
    logger?.info('csr for this node already exists, reusing');
    let existing: V1CertificateSigningRequest;
    try {
      existing = await client.read(request.name);
    } catch (readError) {
      throw new Error(`cannot retrieve certificate signing request: ${apiErrorMessage(readError)}`);
    }
    ensureCompatible(existing, body, request.privateKeyPem);
    logger?.info('csr for this node is still valid');
    created = existing;
  }
  return { name: created.metadata?.name ?? '', uid: created.metadata?.uid ?? '' };
}

/** Go: ensureCompatible: same subject, signer and usages, and the key we hold. */
function ensureCompatible(existing: V1CertificateSigningRequest, wanted: V1CertificateSigningRequest, privateKeyPem: string): void {
  const fail = (what: string) => {
    throw new Error(`retrieved csr is not compatible: ${what}`);
  };
  let existingRequest;
  try {
    existingRequest = parseCertificateRequest(Buffer.from(existing.spec?.request ?? '', 'base64').toString());
  } catch (error) {
    return fail(`unable to parse existing request: ${(error as Error).message}`);
  }
  const wantedRequest = parseCertificateRequest(Buffer.from(wanted.spec!.request, 'base64').toString());
  if (!existingRequest.subject.equals(wantedRequest.subject)) fail('csr subjects differ');
  if (existing.spec?.signerName !== wanted.spec?.signerName) fail(`csr signerNames differ: new "${wanted.spec?.signerName}", orig: "${existing.spec?.signerName}"`);
  const publicKey = createPublicKey(createPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'der' });
  if (!existingRequest.publicKey.export({ type: 'spki', format: 'der' }).equals(publicKey)) fail('public key in CSR does not match our private key');
  if ((existing.spec?.usages ?? []).join(',') !== (wanted.spec?.usages ?? []).join(',')) fail('csr usages differ');
}

export interface WaitForCertificateOptions {
  signal?: AbortSignal;
  clock?: Clock;
  timeoutMs: number;
  /** How often the request is read. Default 1 s. */
  pollIntervalMs?: number;
  logger?: Logger;
}

/**
 * Go: csr.WaitForCertificate: resolves with the issued certificate (PEM) once the request is approved and
 * signed; rejects when it is denied or failed (with the condition's reason and message), replaced (another UID) or
 * the time is up. Errors reading the request are retried until then.
 */
export async function waitForCertificate(client: CertificateSigningRequests, request: { name: string; uid: string }, options: WaitForCertificateOptions): Promise<string> {
  let issued: string | undefined;
  let lastReadError: unknown;
  let approvedLogged = false;
  try {
    await pollUntil(
      async () => {
        let csr: V1CertificateSigningRequest;
        try {
          csr = await client.read(request.name);
          lastReadError = undefined;
        } catch (error) {
          lastReadError = error;
          return false;
        }
        if (request.uid && csr.metadata?.uid !== request.uid) throw new Error(`csr "${request.name}" changed UIDs`);
        let approved = false;
        for (const condition of csr.status?.conditions ?? []) {
          if (condition.type === 'Denied') throw new Error(`certificate signing request is denied, reason: ${condition.reason ?? ''}, message: ${condition.message ?? ''}`);
          if (condition.type === 'Failed') throw new Error(`certificate signing request failed, reason: ${condition.reason ?? ''}, message: ${condition.message ?? ''}`);
          if (condition.type === 'Approved') approved = true;
        }
        if (approved && csr.status?.certificate) {
          options.logger?.v(2).info('Certificate signing request is issued', { csr: request.name });
          issued = Buffer.from(csr.status.certificate, 'base64').toString();
          return true;
        }
        if (approved && !approvedLogged) {
          approvedLogged = true;
          options.logger?.v(2).info('Certificate signing request is approved, waiting to be issued', { csr: request.name });
        }
        return false;
      },
      options.pollIntervalMs ?? 1_000,
      options.timeoutMs,
      options.signal,
      options.clock ?? realClock,
    );
  } catch (error) {
    if (error instanceof WaitTimeoutError) {
      const reason = lastReadError ? `: last error: ${apiErrorMessage(lastReadError)}` : '';
      throw new Error(`timed out waiting for the certificate signing request "${request.name}" to be approved and issued${reason}`);
    }
    throw error;
  }
  return issued!;
}

/**
 * Go: bootstrap's digestedName: `node-csr-` and a hash of the public key, the subject and the usages, so the same
 * key asking for the same certificate always names the same request.
 */
export function digestedCsrName(privateKeyPem: string, template: CertificateTemplate, usages: readonly string[]): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer) => {
    hash.update(data.toString('base64url'));
    hash.update('|');
  };
  write(createPublicKey(createPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'der' }));
  write(Buffer.from(template.commonName));
  for (const organization of template.organization) write(Buffer.from(organization));
  for (const usage of usages) write(Buffer.from(usage));
  return `node-csr-${hash.digest().toString('base64url')}`;
}
