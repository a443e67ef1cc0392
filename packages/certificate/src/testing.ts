import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { V1CertificateSigningRequest } from '@kubernetes/client-node';
import {
  KEY_USAGE_BIT,
  X509_OID,
  derBoolean,
  derCertificate,
  derExtension,
  derName,
  derNamedBits,
  derOid,
  derSequence,
  pemEncode,
  randomSerialNumber,
  realClock,
  type Clock,
} from '@kubelet-ts/core';
import { generatePrivateKeyPem, makeCertificateRequest, parseCertificateRequest, type CertificateTemplate } from './csr.js';
import type { CertificateSigningRequests } from './csr-client.js';
import type { CertificateStore } from './manager.js';
import { NoCertKeyError, parseCertificatePair, type CertificatePair } from './store.js';

/** An error shaped like client-node's ApiException, so callers' status checks work on it. */
export class FakeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    (this as unknown as { body: unknown }).body = { kind: 'Status', code, reason, message };
  }
}

export interface FakeCertificateSignerOptions {
  clock?: Clock;
  /** Validity of issued certificates. Default one year. */
  durationMs?: number;
  /** Go's signer backdates notBefore; default 0 here. */
  backdateMs?: number;
  /** Approve and issue as soon as a request is created (as the csrapproving and csrsigning controllers). Default true. */
  autoApprove?: boolean;
}

/**
 * An in-memory certificates.k8s.io CertificateSigningRequests API with a signer: requests are stored like the API
 * server stores them, approved (automatically or by approve()) and signed by a CA of its own (caPem), or denied.
 * `failNext` makes calls fail as an unreachable or refusing API server would.
 */
export class FakeCertificateSigner implements CertificateSigningRequests {
  readonly requests = new Map<string, V1CertificateSigningRequest>();
  readonly caPem: string;
  private readonly caKey: KeyObject;
  private readonly caName: Buffer;
  private readonly clock: Clock;
  private generated = 0;
  /** Errors the next calls throw, in order. */
  readonly failNext: Error[] = [];

  constructor(private readonly options: FakeCertificateSignerOptions = {}) {
    this.clock = options.clock ?? realClock;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    this.caKey = privateKey;
    this.caName = derName({ commonName: 'fake-signer-ca' });
    const now = this.clock.now();
    this.caPem = pemEncode(
      'CERTIFICATE',
      derCertificate({
        serial: randomSerialNumber(),
        issuer: this.caName,
        subject: this.caName,
        notBefore: now - 3_600_000,
        notAfter: now + 10 * 365 * 86_400_000,
        publicKey,
        signingKey: privateKey,
        extensions: [
          derExtension(X509_OID.keyUsage, true, derNamedBits([KEY_USAGE_BIT.digitalSignature, KEY_USAGE_BIT.certSign])),
          derExtension(X509_OID.basicConstraints, true, derSequence(derBoolean(true))),
        ],
      }),
    );
  }

  async create(csr: V1CertificateSigningRequest): Promise<V1CertificateSigningRequest> {
    const failure = this.failNext.shift();
    if (failure) throw failure;
    let name = csr.metadata?.name;
    if (!name) name = `${csr.metadata?.generateName ?? ''}${++this.generated}`;
    if (this.requests.has(name)) throw new FakeApiError(409, 'AlreadyExists', `certificatesigningrequests.certificates.k8s.io "${name}" already exists`);
    const stored: V1CertificateSigningRequest = structuredClone({ ...csr, metadata: { ...csr.metadata, name, uid: `uid-${name}` }, status: {} });
    this.requests.set(name, stored);
    if (this.options.autoApprove ?? true) this.approve(name);
    return structuredClone(stored);
  }

  async read(name: string): Promise<V1CertificateSigningRequest> {
    const failure = this.failNext.shift();
    if (failure) throw failure;
    const csr = this.requests.get(name);
    if (!csr) throw new FakeApiError(404, 'NotFound', `certificatesigningrequests.certificates.k8s.io "${name}" not found`);
    return structuredClone(csr);
  }

  /** Approves a request and issues its certificate. */
  approve(name: string): void {
    const csr = this.mustGet(name);
    csr.status = { ...csr.status, conditions: [...(csr.status?.conditions ?? []), { type: 'Approved', status: 'True', reason: 'AutoApproved', message: 'approved' }] };
    const request = parseCertificateRequest(Buffer.from(csr.spec.request, 'base64').toString());
    csr.status.certificate = Buffer.from(this.sign(request.subject, request.publicKey, request.extensions, csr.spec.usages ?? [])).toString('base64');
  }

  deny(name: string, reason = 'Denied', message = 'denied by the test'): void {
    const csr = this.mustGet(name);
    csr.status = { ...csr.status, conditions: [...(csr.status?.conditions ?? []), { type: 'Denied', status: 'True', reason, message }] };
  }

  /** A pair for the template issued by this signer now (e.g. the certificate a node starts with). */
  issue(template: CertificateTemplate, keyPem = generatePrivateKeyPem()): CertificatePair {
    const request = parseCertificateRequest(makeCertificateRequest(keyPem, template));
    return parseCertificatePair(this.sign(request.subject, request.publicKey, request.extensions, ['client auth']), keyPem);
  }

  private sign(subject: Buffer, publicKey: KeyObject, extensions: Buffer[], usages: readonly string[]): string {
    const now = this.clock.now();
    const notBefore = now - (this.options.backdateMs ?? 0);
    const extendedUsages = usages.filter((usage) => usage === 'client auth' || usage === 'server auth').map((usage) => derOid(usage === 'client auth' ? X509_OID.clientAuth : X509_OID.serverAuth));
    const der = derCertificate({
      serial: randomSerialNumber(),
      issuer: this.caName,
      subject,
      notBefore,
      notAfter: now + (this.options.durationMs ?? 365 * 86_400_000),
      publicKey,
      signingKey: this.caKey,
      extensions: [
        derExtension(X509_OID.keyUsage, true, derNamedBits([KEY_USAGE_BIT.digitalSignature, KEY_USAGE_BIT.keyEncipherment])),
        ...(extendedUsages.length > 0 ? [derExtension(X509_OID.extKeyUsage, false, derSequence(...extendedUsages))] : []),
        derExtension(X509_OID.basicConstraints, true, derSequence()),
        ...extensions,
      ],
    });
    return pemEncode('CERTIFICATE', der);
  }

  private mustGet(name: string): V1CertificateSigningRequest {
    const csr = this.requests.get(name);
    if (!csr) throw new Error(`no certificate signing request ${name}`);
    return csr;
  }
}

/** A CertificateStore in memory. */
export class MemoryCertificateStore implements CertificateStore {
  readonly updates: CertificatePair[] = [];

  constructor(private pair?: CertificatePair) {}

  current(): CertificatePair {
    if (!this.pair) throw new NoCertKeyError('no certificate pair in memory');
    return this.pair;
  }

  update(certPem: string, keyPem: string): CertificatePair {
    this.pair = parseCertificatePair(certPem, keyPem);
    this.updates.push(this.pair);
    return this.pair;
  }
}

/** The public key (SPKI DER) of a PEM private key, to compare with a certificate's. */
export function publicKeyOf(keyPem: string): Buffer {
  return createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' });
}
