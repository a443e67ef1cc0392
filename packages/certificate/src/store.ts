import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pemDecodeAll, pemEncode, realClock, type Clock } from '@kubelet-ts/core';

/** A certificate chain with its private key, parsed. */
export interface CertificatePair {
  /** The leaf certificate first, then any intermediates. */
  certPem: string;
  keyPem: string;
  leaf: X509Certificate;
  /** Validity of the leaf, ms since the epoch. */
  notBefore: number;
  notAfter: number;
}

const PRIVATE_KEY_LABELS = ['EC PRIVATE KEY', 'RSA PRIVATE KEY', 'PRIVATE KEY'];

/** The private key PEM block in a file that may also hold certificates. */
export function extractPrivateKeyPem(pem: string): string | undefined {
  for (const label of PRIVATE_KEY_LABELS) {
    const [body] = pemDecodeAll(pem, label);
    if (body) return pemEncode(label, body);
  }
  return undefined;
}

/** Parses a certificate chain and its key; throws naming what is wrong (no certificate, no key, a key that does not match). */
export function parseCertificatePair(certPem: string, keyPem: string, where = 'the certificate pair'): CertificatePair {
  const certificates = pemDecodeAll(certPem, 'CERTIFICATE');
  if (certificates.length === 0) throw new Error(`${where}: no CERTIFICATE PEM block`);
  const key = extractPrivateKeyPem(keyPem);
  if (!key) throw new Error(`${where}: no private key PEM block`);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certificates[0]!);
  } catch (error) {
    throw new Error(`${where}: the certificate does not parse: ${(error as Error).message}`);
  }
  let matches: boolean;
  try {
    matches = leaf.checkPrivateKey(createPrivateKey(key));
  } catch (error) {
    throw new Error(`${where}: the private key does not parse: ${(error as Error).message}`);
  }
  if (!matches) throw new Error(`${where}: the private key does not match the certificate's public key`);
  return {
    certPem: certificates.map((der) => pemEncode('CERTIFICATE', der)).join(''),
    keyPem: key,
    leaf,
    notBefore: Date.parse(leaf.validFrom),
    notAfter: Date.parse(leaf.validTo),
  };
}

/** Go: certificate.NoCertKeyError, no pair in any of the store's places. */
export class NoCertKeyError extends Error {
  override readonly name = 'NoCertKeyError';
}

export interface FileCertificateStoreOptions {
  /** `kubelet-client` or `kubelet-server`: files are `<prefix>-<timestamp>.pem` and `<prefix>-current.pem`. */
  pairNamePrefix: string;
  /** --cert-dir. */
  certDirectory: string;
  /** Where `<prefix>.key` is looked for; default certDirectory. */
  keyDirectory?: string;
  /** A pair used when the store has none of its own (the kubeconfig's client certificate, --tls-cert-file). */
  certFile?: string;
  keyFile?: string;
  clock?: Clock;
}

/**
 * Go: certificate.NewFileStore. Each new pair is one file `<prefix>-<timestamp>.pem` (certificates, then the key;
 * mode 0600), and `<prefix>-current.pem` is a symlink to the newest, swapped atomically, so a reader sees the old or
 * the new pair and never half of one.
 */
export class FileCertificateStore {
  private readonly keyDirectory: string;
  private readonly clock: Clock;

  constructor(private readonly options: FileCertificateStoreOptions) {
    this.keyDirectory = options.keyDirectory ?? options.certDirectory;
    this.clock = options.clock ?? realClock;
  }

  /** The path of the current pair's symlink (what a kubeconfig written by bootstrap points at). */
  currentPath(): string {
    return resolve(this.options.certDirectory, `${this.options.pairNamePrefix}-current.pem`);
  }

  /** Go: fileStore.Current: the current pair, else the given cert/key files, else `<prefix>.crt`/`<prefix>.key`. */
  current(): CertificatePair {
    const pairFile = this.currentPath();
    if (existsSync(pairFile)) {
      const pem = readFileSync(pairFile, 'utf8');
      return parseCertificatePair(pem, pem, pairFile);
    }
    const candidates: Array<[string | undefined, string | undefined]> = [
      [this.options.certFile, this.options.keyFile],
      [join(this.options.certDirectory, `${this.options.pairNamePrefix}.crt`), join(this.keyDirectory, `${this.options.pairNamePrefix}.key`)],
    ];
    for (const [certFile, keyFile] of candidates) {
      if (certFile && keyFile && existsSync(certFile) && existsSync(keyFile)) {
        return parseCertificatePair(readFileSync(certFile, 'utf8'), readFileSync(keyFile, 'utf8'), `(${certFile}, ${keyFile})`);
      }
    }
    throw new NoCertKeyError(
      `no cert/key files read at "${pairFile}", ("${this.options.certFile ?? ''}", "${this.options.keyFile ?? ''}") or ("${this.options.certDirectory}", "${this.keyDirectory}")`,
    );
  }

  /** Go: fileStore.Update: writes a new pair file and points `<prefix>-current.pem` at it. */
  update(certPem: string, keyPem: string): CertificatePair {
    const pair = parseCertificatePair(certPem, keyPem, 'the new certificate pair');
    mkdirSync(this.options.certDirectory, { recursive: true, mode: 0o755 });
    const pairFile = resolve(this.options.certDirectory, `${this.options.pairNamePrefix}-${timestamp(this.clock.now())}.pem`);
    const temporary = `${pairFile}.tmp-${process.pid}`;
    writeFileSync(temporary, pair.certPem + pair.keyPem, { mode: 0o600 });
    renameSync(temporary, pairFile);
    const link = `${this.currentPath()}.tmp-${process.pid}`;
    rmSync(link, { force: true });
    symlinkSync(pairFile, link);
    renameSync(link, this.currentPath());
    return pair;
  }
}

/** Go's "2006-01-02-15-04-05" layout, in UTC. */
function timestamp(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)}-${iso.slice(11, 13)}-${iso.slice(14, 16)}-${iso.slice(17, 19)}`;
}
