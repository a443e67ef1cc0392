import { randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

// A minimal DER encoder for the X.509 v3 certificates and PKCS#10 certificate requests the kubelet makes
// (node:crypto parses certificates and signs, but builds neither): the self-signed serving certificate,
// the CSRs of TLS bootstrap and certificate rotation, and the certificates test signers issue.

export const X509_OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  extensionRequest: '1.2.840.113549.1.9.14',
} as const;

/** The bit of each key usage in the keyUsage extension (RFC 5280 4.2.1.3). */
export const KEY_USAGE_BIT = { digitalSignature: 0, keyEncipherment: 2, certSign: 5 } as const;

export function derTlv(tag: number, content: Buffer): Buffer {
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

export const derSequence = (...items: Buffer[]): Buffer => derTlv(0x30, Buffer.concat(items));
export const derSet = (...items: Buffer[]): Buffer => derTlv(0x31, Buffer.concat(items));
export const derBoolean = (value: boolean): Buffer => derTlv(0x01, Buffer.from([value ? 0xff : 0]));
export const derOctetString = (content: Buffer): Buffer => derTlv(0x04, content);
export const derNull = (): Buffer => derTlv(0x05, Buffer.alloc(0));
/** A context-specific constructed tag [n] (EXPLICIT, or IMPLICIT over a SET/SEQUENCE's content). */
export const derContext = (tagNumber: number, content: Buffer): Buffer => derTlv(0xa0 + tagNumber, content);
export const derUtf8String = (text: string): Buffer => derTlv(0x0c, Buffer.from(text, 'utf8'));
/** A BIT STRING holding whole bytes (signatures, public keys). */
export const derBitStringBytes = (bytes: Buffer): Buffer => derTlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));

export function derInteger(value: Buffer | number): Buffer {
  const bytes = typeof value === 'number' ? Buffer.from([value]) : value;
  // DER integers are minimal (no redundant leading zero bytes) and signed (a leading 1 bit needs a zero byte).
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0 && (bytes[start + 1]! & 0x80) === 0) start++;
  const minimal = bytes.subarray(start);
  return derTlv(0x02, minimal[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), minimal]) : minimal);
}

export function derOid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes = [parts[0]! * 40 + parts[1]!];
  for (const part of parts.slice(2)) {
    const chunk = [part & 0x7f];
    for (let n = Math.floor(part / 128); n > 0; n = Math.floor(n / 128)) chunk.unshift((n & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return derTlv(0x06, Buffer.from(bytes));
}

/** A BIT STRING of named bits (key usages): bit 0 is the most significant bit of the first byte. */
export function derNamedBits(bits: readonly number[]): Buffer {
  let value = 0;
  for (const bit of bits) value |= 0x80 >> bit;
  const unused = Math.min(7, 7 - Math.max(...bits));
  return derTlv(0x03, Buffer.from([unused, value]));
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime after. */
export function derTime(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2026-01-01T00:00:00.000Z
  const year = Number(iso.slice(0, 4));
  const rest = iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) + iso.slice(14, 16) + iso.slice(17, 19) + 'Z';
  return year < 2050 ? derTlv(0x17, Buffer.from(iso.slice(2, 4) + rest)) : derTlv(0x18, Buffer.from(iso.slice(0, 4) + rest));
}

/** A distinguished name in Go's pkix.Name order: organizations, then the common name. */
export interface DistinguishedName {
  commonName?: string;
  organization?: readonly string[];
}

export function derName(name: DistinguishedName): Buffer {
  const rdns = (name.organization ?? []).map((o) => derSet(derSequence(derOid(X509_OID.organization), derUtf8String(o))));
  if (name.commonName !== undefined) rdns.push(derSet(derSequence(derOid(X509_OID.commonName), derUtf8String(name.commonName))));
  return derSequence(...rdns);
}

export function derExtension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? derSequence(derOid(id), derBoolean(true), derOctetString(value)) : derSequence(derOid(id), derOctetString(value));
}

export function derSubjectAltNames(dnsNames: readonly string[], ips: readonly string[]): Buffer {
  const entries = dnsNames.map((dns) => derTlv(0x82, Buffer.from(dns, 'ascii')));
  for (const ip of ips) entries.push(derTlv(0x87, ipAddressBytes(ip)));
  return derSequence(...entries);
}

/** The 4 or 16 bytes of an IPv4 or IPv6 address. */
export function ipAddressBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  if (isIP(ip) !== 6) throw new Error(`not an IP address: ${ip}`);
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16), index * 2));
  return bytes;
}

export function randomSerialNumber(): Buffer {
  // Positive, and with a non-zero first byte, so the DER integer is exactly 16 bytes.
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  return serial;
}

/** The signature algorithm a key signs with: RSA or ECDSA, both over SHA-256. */
export function signatureAlgorithm(key: KeyObject): Buffer {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') return derSequence(derOid(X509_OID.sha256WithRSA), derNull());
  if (type === 'ec') return derSequence(derOid(X509_OID.ecdsaWithSHA256));
  throw new Error(`unsupported signing key type ${type ?? 'unknown'}: only RSA and ECDSA keys sign here`);
}

export interface CertificateFields {
  serial: Buffer;
  issuer: Buffer;
  subject: Buffer;
  notBefore: number;
  notAfter: number;
  publicKey: KeyObject;
  signingKey: KeyObject;
  extensions: Buffer[];
}

/** A signed X.509 v3 certificate (DER). */
export function derCertificate(fields: CertificateFields): Buffer {
  const algorithm = signatureAlgorithm(fields.signingKey);
  const tbs = derSequence(
    derContext(0, derInteger(2)),
    derInteger(fields.serial),
    algorithm,
    fields.issuer,
    derSequence(derTime(fields.notBefore), derTime(fields.notAfter)),
    fields.subject,
    fields.publicKey.export({ type: 'spki', format: 'der' }),
    derContext(3, derSequence(...fields.extensions)),
  );
  return derSequence(tbs, algorithm, derBitStringBytes(sign('sha256', tbs, fields.signingKey)));
}

export function pemEncode(label: string, body: Buffer): string {
  const base64 = body.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${base64}\n-----END ${label}-----\n`;
}

/** The bodies of every PEM block with the given label, in order. */
export function pemDecodeAll(pem: string, label: string): Buffer[] {
  const blocks: Buffer[] = [];
  const pattern = new RegExp(`-----BEGIN ${label}-----([\\s\\S]*?)-----END ${label}-----`, 'g');
  for (const match of pem.matchAll(pattern)) blocks.push(Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64'));
  return blocks;
}
