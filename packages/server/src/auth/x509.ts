// Client certificate authentication (Go: k8s.io/apiserver/pkg/authentication/request/x509 with
// CommonNameUserConversion). The TLS server does the chain verification: it is created with
// `requestCert: true, rejectUnauthorized: false, ca: <client CA bundle>`, so OpenSSL checks the
// client's chain against the CA and reports the outcome on the socket, while a client without a
// (valid) certificate still reaches the other authenticators.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
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
  const blocks = data.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    throw new Error(`unable to load client CA file ${file}: data does not contain any valid RSA or ECDSA certificates`);
  }
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new Error(`unable to load client CA file ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  return data;
}
