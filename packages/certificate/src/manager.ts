import { X509Certificate } from 'node:crypto';
import { errorText, isAbortError, jitter, defaultLogger, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { generatePrivateKeyPem, makeCertificateRequest, type CertificateTemplate } from './csr.js';
import { requestCertificate, waitForCertificate, type CertificateSigningRequests } from './csr-client.js';
import { NoCertKeyError, type CertificatePair } from './store.js';

/** Where a manager keeps its pairs (FileCertificateStore; tests may keep them in memory). */
export interface CertificateStore {
  /** The current pair; throws NoCertKeyError when there is none. */
  current(): CertificatePair;
  update(certPem: string, keyPem: string): CertificatePair;
}

export interface CertificateManagerOptions {
  /** `client` or `server`: named in logs. */
  name: string;
  store: CertificateStore;
  /** The API client a rotation uses, asked for at each rotation (it authenticates with the current certificate). */
  client: () => CertificateSigningRequests;
  /** What to request; undefined while it cannot be known yet (a serving certificate before the node has addresses). */
  template: () => CertificateTemplate | undefined;
  signerName: string;
  usages: string[];
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
  /** Go: certificateWaitTimeout, how long a rotation waits for its request to be issued. Default 15 min. */
  certificateWaitTimeoutMs?: number;
  pollIntervalMs?: number;
  /** Called with each new pair, after it is stored, and the pair it replaces (switch connections, update metrics). */
  onRotated?: (pair: CertificatePair, previous: CertificatePair | undefined) => void;
  /** Called when a rotation attempt fails (Go: the client certificate's renew errors metric). */
  onRotationError?: (error: unknown) => void;
  /** Go: the rotation's backoff: 2 s doubling, 5 attempts, then every 32 s. */
  backoffInitialMs?: number;
  backoffSteps?: number;
  retryPeriodMs?: number;
  generateKey?: () => string;
}

/**
 * The deadline Go's certificate manager rotates at: a jittered 70-90% of the certificate's validity
 * (notBefore + [0.7, 0.9) x (notAfter - notBefore)).
 */
export function rotationDeadline(pair: Pick<CertificatePair, 'notBefore' | 'notAfter'>, random: () => number = Math.random): number {
  const total = pair.notAfter - pair.notBefore;
  return pair.notBefore + jitter(total, 0.2, random) - total * 0.3;
}

/**
 * Go: client-go's certificate.Manager. Holds the current pair and renews it before it expires: at the rotation
 * deadline (or at once with no pair, or one that no longer fits the template, e.g. new node addresses) it makes a
 * new key, requests a certificate for it, waits for it to be issued, stores it and hands it on. Failures back off and
 * retry; the old pair stays in use meanwhile.
 */
export class CertificateManager {
  private pair: CertificatePair | undefined;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private loop: Promise<void> | undefined;
  private readonly stopping = new AbortController();
  private forceRotation = false;
  private readonly listeners = new Set<(pair: CertificatePair) => void>();

  constructor(private readonly options: CertificateManagerOptions) {
    this.clock = options.clock ?? realClock;
    this.logger = (options.logger ?? defaultLogger).with({ certificate: options.name });
    this.random = options.random ?? Math.random;
    try {
      this.pair = options.store.current();
    } catch (error) {
      if (!(error instanceof NoCertKeyError)) this.logger.error('Failed to load the current certificate pair', error);
    }
  }

  /** Calls listener with each new pair (after onRotated); returns the unsubscribe function. */
  subscribe(listener: (pair: CertificatePair) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pair in use, if any; undefined before the first certificate is issued. */
  current(): CertificatePair | undefined {
    return this.pair;
  }

  /** Go: certSatisfiesTemplate: the subject and SANs are the ones the template asks for. */
  satisfiesTemplate(pair: CertificatePair | undefined = this.pair): boolean {
    if (!pair) return false;
    const template = this.options.template();
    if (!template) return true;
    const subject = subjectOf(pair.leaf);
    if (subject.commonName !== template.commonName || !sameSet(subject.organization, template.organization)) return false;
    const sans = subjectAltNamesOf(pair.leaf);
    return sameSet(sans.dnsNames, template.dnsNames ?? []) && sameSet(sans.ipAddresses, template.ipAddresses ?? []);
  }

  /** Go: nextRotationDeadline: now without a fitting pair (or when forced), else the jittered deadline. */
  nextRotationDeadline(): number {
    if (this.forceRotation) {
      this.forceRotation = false;
      return this.clock.now();
    }
    if (!this.pair || !this.satisfiesTemplate()) return this.clock.now();
    const deadline = rotationDeadline(this.pair, this.random);
    this.logger.info(`Certificate expiration is ${new Date(this.pair.notAfter).toISOString()}, rotation deadline is ${new Date(deadline).toISOString()}`);
    return deadline;
  }

  /** Starts the rotation loop (Go: manager.Start). */
  start(): void {
    if (this.loop) return;
    this.logger.info('Certificate rotation is enabled');
    this.loop = this.run(this.stopping.signal).catch((error) => {
      if (!isAbortError(error)) this.logger.error('Certificate rotation loop ended', error);
    });
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  private async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      const deadline = this.nextRotationDeadline();
      if (deadline > this.clock.now()) this.logger.info('Waiting for next certificate rotation', { sleepIntervalMs: deadline - this.clock.now() });
      // Go checks every second whether the template changed (node addresses) while it waits for the deadline.
      while (this.clock.now() < deadline) {
        await this.clock.sleep(Math.min(deadline - this.clock.now(), 1_000), signal);
        if (!this.satisfiesTemplate() && this.options.template()) {
          this.logger.info('Certificate template changed, rotating');
          break;
        }
      }
      if (!this.options.template()) {
        // Nothing to ask for yet (no node addresses): look again in a second.
        await this.clock.sleep(1_000, signal);
        continue;
      }
      await this.rotateWithBackoff(signal);
      await this.clock.sleep(1_000, signal);
    }
  }

  private async rotateWithBackoff(signal: AbortSignal): Promise<void> {
    let delay = this.options.backoffInitialMs ?? 2_000;
    const steps = this.options.backoffSteps ?? 5;
    for (let attempt = 1; ; attempt++) {
      if (await this.rotateCerts(signal)) return;
      if (attempt === steps) this.logger.error('Reached backoff limit, still unable to rotate certs', undefined);
      const wait = attempt < steps ? jitter(delay, 0.1, this.random) : (this.options.retryPeriodMs ?? 32_000);
      delay *= 2;
      await this.clock.sleep(wait, signal);
    }
  }

  /** Asks for the next rotation to happen now (Go: forceRotation after the server rejects the current credentials). */
  forceRotate(): void {
    this.forceRotation = true;
  }

  /** Go: rotateCerts: one attempt; true when a new pair is in use. */
  async rotateCerts(signal?: AbortSignal): Promise<boolean> {
    this.logger.info('Rotating certificates');
    const template = this.options.template();
    if (!template) return false;
    try {
      const keyPem = (this.options.generateKey ?? generatePrivateKeyPem)();
      const csrPem = makeCertificateRequest(keyPem, template);
      const client = this.options.client();
      const request = await requestCertificate(client, { csrPem, signerName: this.options.signerName, usages: this.options.usages, privateKeyPem: keyPem }, this.logger);
      const certPem = await waitForCertificate(client, request, {
        signal,
        clock: this.clock,
        timeoutMs: this.options.certificateWaitTimeoutMs ?? 15 * 60_000,
        pollIntervalMs: this.options.pollIntervalMs,
        logger: this.logger,
      });
      const pair = this.options.store.update(certPem, keyPem);
      const previous = this.pair;
      this.pair = pair;
      this.logger.info('Rotated the certificate', { csr: request.name, notAfter: new Date(pair.notAfter).toISOString() });
      this.options.onRotated?.(pair, previous);
      for (const listener of this.listeners) listener(pair);
      return true;
    } catch (error) {
      if (isAbortError(error)) throw error;
      this.options.onRotationError?.(error);
      this.logger.error('Failed while requesting a signed certificate from the control plane', undefined, { err: errorText(error) });
      return false;
    }
  }
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((value) => right.has(value));
}

/** The CN and O of a certificate's subject (X509Certificate.subject is `O=a\nCN=b`). */
export function subjectOf(certificate: X509Certificate): { commonName?: string; organization: string[] } {
  const organization: string[] = [];
  let commonName: string | undefined;
  for (const line of certificate.subject.split('\n')) {
    const index = line.indexOf('=');
    const key = line.slice(0, index);
    const value = line.slice(index + 1);
    if (key === 'CN') commonName = value;
    else if (key === 'O') organization.push(value);
  }
  return { commonName, organization };
}

/** The DNS names and IP addresses of a certificate's subjectAltName. */
export function subjectAltNamesOf(certificate: X509Certificate): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  for (const entry of (certificate.subjectAltName ?? '').split(', ')) {
    if (entry.startsWith('DNS:')) dnsNames.push(entry.slice(4));
    else if (entry.startsWith('IP Address:')) ipAddresses.push(entry.slice(11));
  }
  return { dnsNames, ipAddresses };
}
