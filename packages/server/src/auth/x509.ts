// Client certificate authentication (Go: k8s.io/apiserver/pkg/authentication/request/x509 with
// CommonNameUserConversion). The TLS server does the chain verification: it is created with
// `requestCert: true, rejectUnauthorized: false, ca: <client CA bundle>`, so OpenSSL checks the
// client's chain against the CA and reports the outcome on the socket, while a client without a
// (valid) certificate still reaches the other authenticators.
import { X509Certificate } from 'node:crypto';
import { readFileSync, watch as fsWatch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { defaultLogger, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';
import type { IncomingMessage } from 'node:http';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import type { Authenticator, AuthenticationResult, UserInfo } from './types.js';

const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const EKU_ANY = '2.5.29.37.0';

// OpenSSL verify codes as Go's crypto/x509 words the same failures (the text is only logged).
const verifyErrorText: Record<string, string> = {
  UNABLE_TO_GET_ISSUER_CERT: 'x509: certificate signed by unknown authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'x509: certificate signed by unknown authority',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'x509: certificate signed by unknown authority',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'x509: certificate signed by unknown authority',
  SELF_SIGNED_CERT_IN_CHAIN: 'x509: certificate signed by unknown authority',
  CERT_SIGNATURE_FAILURE: 'x509: certificate signed by unknown authority',
  CERT_HAS_EXPIRED: 'x509: certificate has expired or is not yet valid',
  CERT_NOT_YET_VALID: 'x509: certificate has expired or is not yet valid',
  INVALID_PURPOSE: 'x509: certificate specifies an incompatible key usage',
};

/** Maps a verified client certificate to a user; undefined when it names none (Go: ok=false). */
export type CertificateUserConversion = (cert: DetailedPeerCertificate) => UserInfo | undefined;

function values(field: string | string[] | undefined): string[] {
  if (field === undefined) return [];
  return Array.isArray(field) ? field : [field];
}

/**
 * Go's CommonNameUserConversion: the subject's CN is the user name, every O a group. With several
 * CNs Go keeps the last one; an empty CN names no user.
 */
export const commonNameUserConversion: CertificateUserConversion = (cert) => {
  const subject = (cert.subject ?? {}) as unknown as Record<string, string | string[] | undefined>;
  const cn = values(subject.CN);
  const name = cn.length > 0 ? (cn[cn.length - 1] as string) : '';
  if (name === '') return undefined;
  return { name, groups: values(subject.O) };
};

/**
 * Go verifies the chain with KeyUsages [ClientAuth]: every certificate in the chain that carries an
 * extended key usage extension must allow client auth (or any usage); one without the extension
 * allows everything. OpenSSL's default purpose check on the server side already refuses most such
 * chains (INVALID_PURPOSE); this keeps Go's rule whatever the TLS layer did.
 */
function chainAllowsClientAuth(leaf: DetailedPeerCertificate): boolean {
  const seen = new Set<string>();
  for (let cert: DetailedPeerCertificate | undefined = leaf; cert && cert.raw; cert = cert.issuerCertificate) {
    const id = cert.fingerprint256 ?? cert.raw.toString('base64');
    if (seen.has(id)) break; // a self-signed root is its own issuer
    seen.add(id);
    const eku = cert.ext_key_usage;
    if (eku && eku.length > 0 && !eku.includes(EKU_CLIENT_AUTH) && !eku.includes(EKU_ANY)) return false;
  }
  return true;
}

export interface X509AuthenticatorOptions {
  userConversion?: CertificateUserConversion;
}

export class X509Authenticator implements Authenticator {
  private readonly userConversion: CertificateUserConversion;

  constructor(opts: X509AuthenticatorOptions = {}) {
    this.userConversion = opts.userConversion ?? commonNameUserConversion;
  }

  async authenticate(request: IncomingMessage): Promise<AuthenticationResult> {
    const socket = request.socket as Partial<TLSSocket> | undefined;
    if (!socket || typeof socket.getPeerCertificate !== 'function') return { user: undefined };
    const cert = socket.getPeerCertificate(true);
    // No certificate offered: nothing for this authenticator (Go: req.TLS.PeerCertificates empty).
    if (!cert || !cert.raw) return { user: undefined };
    if (!socket.authorized) {
      const code = String(socket.authorizationError ?? '');
      return { user: undefined, error: new Error(verifyErrorText[code] ?? `x509: certificate verification failed: ${code || 'unknown error'}`) };
    }
    if (!chainAllowsClientAuth(cert)) {
      return { user: undefined, error: new Error('x509: certificate specifies an incompatible key usage') };
    }
    const user = this.userConversion(cert);
    return user ? { user } : { user: undefined };
  }
}

/**
 * Reads and checks the client CA bundle (the kubelet's --client-ca-file), for the TLS server's `ca`.
 * Fails as the Go kubelet does at startup when the file is unreadable or holds no certificate.
 */
export function loadClientCA(file: string): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (err) {
    throw new Error(`unable to load client CA file ${file}: ${(err as Error).message}`, { cause: err });
  }
  checkCABundle(data, `client CA file ${file}`);
  return data;
}

/** Go's newCABundleAndVerifier checks: PEM certificates, at least one, each parseable. */
function checkCABundle(data: Buffer, what: string): void {
  if (data.length === 0) throw new Error(`unable to load ${what}: missing content for CA bundle`);
  const blocks = data.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    throw new Error(`unable to load ${what}: data does not contain any valid RSA or ECDSA certificates`);
  }
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new Error(`unable to load ${what}: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** Watches a directory; calls back with the name of the entry that changed (null when the platform does not say). */
export type DirectoryWatch = (directory: string, onEvent: (filename: string | null) => void) => { close(): void };

/** node:fs watch of a directory; errors (the directory removed, watch limits) go to onError. */
function fsDirectoryWatch(onError: (error: Error) => void): DirectoryWatch {
  return (directory, onEvent) => {
    const watcher = fsWatch(directory, { persistent: false }, (_event, filename) => onEvent(filename === null ? null : String(filename)));
    watcher.on('error', onError);
    return { close: () => watcher.close() };
  };
}

export interface DynamicFileCAContentOptions {
  /** The CA bundle file (PEM). */
  file: string;
  /** Go's purpose: the content's name is `<purpose>::<file>`. Default `client-ca-bundle`. */
  purpose?: string;
  clock: Clock;
  logger?: Logger;
  /** How often the file is re-read without a change event (Go: FileRefreshDuration, 1 minute). */
  refreshIntervalMs?: number;
  /** Watches the file's directory for changes (default node:fs watch); the refresh catches what it misses. */
  watch?: DirectoryWatch;
  /** Reads the file (default readFileSync). */
  readFile?: (file: string) => Buffer;
}

/**
 * Go's dynamiccertificates.DynamicFileCAContent: a CA bundle read from a file and re-read when the file
 * changes (a watch on its directory, so a file replaced by rename or a symlink swap is seen too) and every
 * minute. A new bundle is checked before it is used; a file that becomes unreadable, empty or invalid keeps the
 * last good bundle and logs an error naming the file. Listeners hear of each new bundle.
 */
export class DynamicFileCAContent {
  /** `<purpose>::<file>`, as Go names it. */
  readonly name: string;
  private bundle: Buffer;
  private readonly listeners = new Set<(bundle: Buffer) => void>();
  private readonly logger: Logger;
  private readonly readFile: (file: string) => Buffer;
  private running?: { watcher?: { close(): void }; timer: TimerHandle };

  /** Reads the file at once: an unreadable or invalid file is an error here, as at the Go kubelet's start. */
  constructor(private readonly options: DynamicFileCAContentOptions) {
    if (!options.file) throw new Error('missing filename for ca bundle');
    this.name = `${options.purpose ?? 'client-ca-bundle'}::${options.file}`;
    this.logger = options.logger ?? defaultLogger;
    this.readFile = options.readFile ?? ((file) => readFileSync(file));
    this.bundle = this.read();
  }

  /** The bundle in use (PEM). */
  currentCABundleContent(): Buffer {
    return this.bundle;
  }

  /** Calls listener with each new bundle; returns the function that stops it. */
  addListener(listener: (bundle: Buffer) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Go's loadCABundle: re-reads the file and, when its content changed and is valid, makes it the bundle in use.
   * Returns whether the bundle changed; a failure is logged and the last good bundle kept.
   */
  reload(): boolean {
    let next: Buffer;
    try {
      next = this.read();
    } catch (error) {
      this.logger.error('Failed to reload the CA bundle: keeping the last good one', error, { name: this.name });
      return false;
    }
    if (next.equals(this.bundle)) return false;
    this.bundle = next;
    this.logger.info('Loaded a new CA Bundle and Verifier', { name: this.name });
    for (const listener of this.listeners) {
      try {
        listener(next);
      } catch (error) {
        this.logger.error('A CA bundle listener failed', error, { name: this.name });
      }
    }
    return true;
  }

  /** Starts watching the file and the periodic re-read; the signal stops both. Calling it again does nothing. */
  run(signal: AbortSignal): void {
    if (this.running || signal.aborted) return;
    const { file, clock } = this.options;
    const name = basename(file);
    const watch = this.options.watch ?? fsDirectoryWatch((error) => this.logger.error('failed to watch CA file, will retry later', error, { name: this.name }));
    let watcher: { close(): void } | undefined;
    try {
      // Kubernetes-style mounts swap a `..data` symlink: any hidden entry may stand for the file.
      watcher = watch(dirname(file), (changed) => {
        if (changed === null || changed === name || changed.startsWith('..')) this.reload();
      });
    } catch (error) {
      this.logger.error('failed to watch CA file, will retry later', error, { name: this.name });
    }
    const timer = clock.setInterval(() => this.reload(), this.options.refreshIntervalMs ?? 60_000);
    this.running = { watcher, timer };
    signal.addEventListener(
      'abort',
      () => {
        timer.cancel();
        watcher?.close();
      },
      { once: true },
    );
  }

  private read(): Buffer {
    let data: Buffer;
    try {
      data = this.readFile(this.options.file);
    } catch (err) {
      throw new Error(`unable to load CA bundle ${JSON.stringify(this.name)}: ${(err as Error).message}`, { cause: err });
    }
    if (data.length === 0) throw new Error(`missing content for CA bundle ${JSON.stringify(this.name)}`);
    checkCABundle(data, `CA bundle ${JSON.stringify(this.name)}`);
    return data;
  }
}
