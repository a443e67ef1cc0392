import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
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
  derSubjectAltNames,
  pemEncode,
  randomSerialNumber,
} from '@kubelet-ts/core';
import { dirname, join } from 'node:path';

/** A PEM certificate chain and its PEM private key. */
export interface CertKeyPair {
  certPem: string;
  keyPem: string;
}

const HOUR_MS = 60 * 60 * 1000;
const YEAR_MS = 365 * 24 * HOUR_MS;

/**
 * Go's cert.GenerateSelfSignedCertKey: a throwaway CA ("<host>-ca@<unix>") and a serving certificate
 * ("<host>@<unix>") signed by it, both RSA 2048 and valid from an hour ago for a year. The certificate PEM
 * holds the serving certificate followed by the CA certificate, as Go writes kubelet.crt.
 */
export function generateSelfSignedCertKey(host: string, alternateIPs: string[] = [], alternateDNS: string[] = [], now = Date.now()): CertKeyPair {
  const validFrom = now - HOUR_MS;
  const unix = Math.floor(now / 1000);
  const ca = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const caName = derName({ commonName: `${host}-ca@${unix}` });
  const caCert = derCertificate({
    serial: randomSerialNumber(),
    issuer: caName,
    subject: caName,
    notBefore: validFrom,
    notAfter: validFrom + YEAR_MS,
    publicKey: ca.publicKey,
    signingKey: ca.privateKey,
    extensions: [
      derExtension(X509_OID.keyUsage, true, derNamedBits([KEY_USAGE_BIT.digitalSignature, KEY_USAGE_BIT.keyEncipherment, KEY_USAGE_BIT.certSign])),
      derExtension(X509_OID.basicConstraints, true, derSequence(derBoolean(true))),
    ],
  });

  const serving = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ips = [...alternateIPs];
  const dnsNames = [...alternateDNS];
  if (isIP(host)) ips.push(host);
  else dnsNames.push(host);
  const servingCert = derCertificate({
    serial: randomSerialNumber(),
    issuer: caName,
    subject: derName({ commonName: `${host}@${unix}` }),
    notBefore: validFrom,
    notAfter: validFrom + YEAR_MS,
    publicKey: serving.publicKey,
    signingKey: ca.privateKey,
    extensions: [
      derExtension(X509_OID.keyUsage, true, derNamedBits([KEY_USAGE_BIT.digitalSignature, KEY_USAGE_BIT.keyEncipherment])),
      derExtension(X509_OID.extKeyUsage, false, derSequence(derOid(X509_OID.serverAuth))),
      derExtension(X509_OID.basicConstraints, true, derSequence()),
      derExtension(X509_OID.subjectAltName, false, derSubjectAltNames(dnsNames, ips)),
    ],
  });
  return {
    certPem: pemEncode('CERTIFICATE', servingCert) + pemEncode('CERTIFICATE', caCert),
    keyPem: serving.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
  };
}

export interface ServingCertOptions {
  /** --tls-cert-file and --tls-private-key-file: used as given when both are set. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** --cert-dir: where the self-signed pair lives (kubelet.crt, kubelet.key). */
  certDir: string;
  /** The certificate's host: the node's hostname. */
  hostname: string;
  alternateIPs?: string[];
  now?: number;
}

/**
 * Go's kubelet InitializeTLS: the configured pair, or the self-signed pair under --cert-dir, generated and
 * written (the key 0600) when it is missing or unreadable. Files are written through a temporary name and
 * renamed, so a crash never leaves half a credential.
 */
export function loadOrCreateServingCert(options: ServingCertOptions): CertKeyPair & { certFile: string; keyFile: string; generated: boolean } {
  if (options.tlsCertFile || options.tlsPrivateKeyFile) {
    if (!options.tlsCertFile || !options.tlsPrivateKeyFile) {
      throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
    }
    return { ...readPair(options.tlsCertFile, options.tlsPrivateKeyFile), certFile: options.tlsCertFile, keyFile: options.tlsPrivateKeyFile, generated: false };
  }
  const certFile = join(options.certDir, 'kubelet.crt');
  const keyFile = join(options.certDir, 'kubelet.key');
  if (existsSync(certFile) && existsSync(keyFile)) {
    try {
      return { ...readPair(certFile, keyFile), certFile, keyFile, generated: false };
    } catch {
      // Go regenerates a pair it cannot read (CanReadCertAndKey false).
    }
  }
  const pair = generateSelfSignedCertKey(options.hostname, options.alternateIPs, [], options.now);
  mkdirSync(options.certDir, { recursive: true, mode: 0o755 });
  writeAtomically(certFile, pair.certPem, 0o644);
  writeAtomically(keyFile, pair.keyPem, 0o600);
  return { ...pair, certFile, keyFile, generated: true };
}

function readPair(certFile: string, keyFile: string): CertKeyPair {
  const certPem = readFileSync(certFile, 'utf8');
  const keyPem = readFileSync(keyFile, 'utf8');
  try {
    new X509Certificate(certPem);
  } catch (error) {
    throw new Error(`failed to parse the certificate in ${certFile}: ${(error as Error).message}`);
  }
  return { certPem, keyPem };
}

function writeAtomically(path: string, text: string, mode: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, text, { mode });
  renameSync(temporary, path);
}
