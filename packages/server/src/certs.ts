import { generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
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
  const caName = name(`${host}-ca@${unix}`);
  const caCert = certificate({
    serial: randomSerial(),
    issuer: caName,
    subject: caName,
    notBefore: validFrom,
    notAfter: validFrom + YEAR_MS,
    publicKey: ca.publicKey,
    signingKey: ca.privateKey,
    extensions: [
      extension(OID.keyUsage, true, bitString([KeyUsage.digitalSignature, KeyUsage.keyEncipherment, KeyUsage.certSign])),
      extension(OID.basicConstraints, true, sequence(boolean(true))),
    ],
  });

  const serving = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ips = [...alternateIPs];
  const dnsNames = [...alternateDNS];
  if (isIP(host)) ips.push(host);
  else dnsNames.push(host);
  const servingCert = certificate({
    serial: randomSerial(),
    issuer: caName,
    subject: name(`${host}@${unix}`),
    notBefore: validFrom,
    notAfter: validFrom + YEAR_MS,
    publicKey: serving.publicKey,
    signingKey: ca.privateKey,
    extensions: [
      extension(OID.keyUsage, true, bitString([KeyUsage.digitalSignature, KeyUsage.keyEncipherment])),
      extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
      extension(OID.basicConstraints, true, sequence()),
      extension(OID.subjectAltName, false, subjectAltNames(dnsNames, ips)),
    ],
  });
  return {
    certPem: toPem('CERTIFICATE', servingCert) + toPem('CERTIFICATE', caCert),
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

// A minimal DER encoder for the X.509 v3 certificates above (node:crypto parses certificates but does not create them).

const OID = {
  commonName: '2.5.4.3',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

const KeyUsage = { digitalSignature: 0, keyEncipherment: 2, certSign: 5 } as const;

function der(tag: number, content: Buffer): Buffer {
  const length = content.length;
  let header: Buffer;
  if (length < 0x80) header = Buffer.from([tag, length]);
  else {
    const bytes: number[] = [];
    for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
    header = Buffer.from([tag, 0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([header, content]);
}

const sequence = (...items: Buffer[]) => der(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => der(0x31, Buffer.concat(items));
const boolean = (value: boolean) => der(0x01, Buffer.from([value ? 0xff : 0]));
const octetString = (content: Buffer) => der(0x04, content);
const explicit = (tagNumber: number, content: Buffer) => der(0xa0 + tagNumber, content);

function integer(value: Buffer): Buffer {
  // DER integers are minimal (no redundant leading zero bytes) and signed (a leading 1 bit needs a zero byte).
  let start = 0;
  while (start < value.length - 1 && value[start] === 0 && (value[start + 1]! & 0x80) === 0) start++;
  const minimal = value.subarray(start);
  return der(0x02, minimal[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), minimal]) : minimal);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes = [parts[0]! * 40 + parts[1]!];
  for (const part of parts.slice(2)) {
    const chunk = [part & 0x7f];
    for (let n = Math.floor(part / 128); n > 0; n = Math.floor(n / 128)) chunk.unshift((n & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

function bitString(bits: number[]): Buffer {
  let value = 0;
  for (const bit of bits) value |= 0x80 >> bit;
  const unused = Math.min(7, 7 - Math.max(...bits));
  return der(0x03, Buffer.from([unused, value]));
}

function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2026-01-01T00:00:00.000Z
  const year = Number(iso.slice(0, 4));
  const rest = iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) + iso.slice(14, 16) + iso.slice(17, 19) + 'Z';
  // RFC 5280: UTCTime through 2049, GeneralizedTime after.
  return year < 2050 ? der(0x17, Buffer.from(iso.slice(2, 4) + rest)) : der(0x18, Buffer.from(iso.slice(0, 4) + rest));
}

function name(commonName: string): Buffer {
  return sequence(set(sequence(oid(OID.commonName), der(0x0c, Buffer.from(commonName, 'utf8')))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

function subjectAltNames(dnsNames: string[], ips: string[]): Buffer {
  const entries = dnsNames.map((dns) => der(0x82, Buffer.from(dns, 'ascii')));
  for (const ip of ips) entries.push(der(0x87, ipBytes(ip)));
  return sequence(...entries);
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16), index * 2));
  return bytes;
}

function randomSerial(): Buffer {
  // Positive, and with a non-zero first byte, so the DER integer is exactly 16 bytes.
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  return serial;
}

interface CertificateFields {
  serial: Buffer;
  issuer: Buffer;
  subject: Buffer;
  notBefore: number;
  notAfter: number;
  publicKey: KeyObject;
  signingKey: KeyObject;
  extensions: Buffer[];
}

function certificate(fields: CertificateFields): Buffer {
  const algorithm = sequence(oid(OID.sha256WithRSA), der(0x05, Buffer.alloc(0)));
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(fields.serial),
    algorithm,
    fields.issuer,
    sequence(time(fields.notBefore), time(fields.notAfter)),
    fields.subject,
    fields.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...fields.extensions)),
  );
  const signature = sign('sha256', tbs, fields.signingKey);
  return sequence(tbs, algorithm, der(0x03, Buffer.concat([Buffer.from([0]), signature])));
}

function toPem(label: string, body: Buffer): string {
  const base64 = body.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${base64}\n-----END ${label}-----\n`;
}
