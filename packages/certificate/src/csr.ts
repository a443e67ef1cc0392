import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import {
  X509_OID,
  derContext,
  derBitStringBytes,
  derExtension,
  derInteger,
  derName,
  derOid,
  derSequence,
  derSet,
  derSubjectAltNames,
  pemDecodeAll,
  pemEncode,
  signatureAlgorithm,
} from '@kubelet-ts/core';

/** What a certificate request asks for (Go: x509.CertificateRequest's subject and SANs). */
export interface CertificateTemplate {
  commonName: string;
  organization: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
}

/**
 * Go's keyutil.MakeEllipticPrivateKeyPEM: a new ECDSA P-256 key as an `EC PRIVATE KEY` PEM, the key type the Go
 * kubelet generates for its client and serving certificates.
 */
export function generatePrivateKeyPem(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ type: 'sec1', format: 'pem' }).toString();
}

/** Go's certutil.MakeCSR: a PKCS#10 request (PEM `CERTIFICATE REQUEST`) for the template, signed by the key. */
export function makeCertificateRequest(privateKeyPem: string | KeyObject, template: CertificateTemplate): string {
  const privateKey = typeof privateKeyPem === 'string' ? createPrivateKey(privateKeyPem) : privateKeyPem;
  const dnsNames = template.dnsNames ?? [];
  const ips = template.ipAddresses ?? [];
  // Attributes: only an extensionRequest, and only when there are SANs (as Go's MakeCSR).
  const attributes =
    dnsNames.length + ips.length > 0
      ? derSequence(derOid(X509_OID.extensionRequest), derSet(derSequence(derExtension(X509_OID.subjectAltName, false, derSubjectAltNames(dnsNames, ips)))))
      : Buffer.alloc(0);
  const info = derSequence(
    derInteger(0),
    derName({ commonName: template.commonName, organization: template.organization }),
    createPublicKey(privateKey).export({ type: 'spki', format: 'der' }),
    // [0] IMPLICIT SET OF Attribute.
    derContext(0, attributes),
  );
  const request = derSequence(info, signatureAlgorithm(privateKey), derBitStringBytes(sign('sha256', info, privateKey)));
  return pemEncode('CERTIFICATE REQUEST', request);
}

/** What a signer reads from a certificate request. */
export interface ParsedCertificateRequest {
  /** The subject Name, DER, as it goes into an issued certificate. */
  subject: Buffer;
  commonName?: string;
  organization: string[];
  publicKey: KeyObject;
  /** The requested extensions (DER Extension SEQUENCEs), e.g. subjectAltName. */
  extensions: Buffer[];
}

/** Parses a PEM certificate request and checks its self-signature; throws naming what is wrong. */
export function parseCertificateRequest(pem: string): ParsedCertificateRequest {
  const [body] = pemDecodeAll(pem, 'CERTIFICATE REQUEST');
  if (!body) throw new Error('no CERTIFICATE REQUEST PEM block');
  const request = children(readTlv(body, 0));
  const [info, , signature] = request;
  if (!info || !signature) throw new Error('malformed certificate request');
  const [, subject, spki, attributes] = children(info);
  if (!subject || !spki) throw new Error('malformed certification request info');
  const publicKey = createPublicKey({ key: spki.raw, format: 'der', type: 'spki' });
  if (!verify('sha256', info.raw, publicKey, signature.content.subarray(1))) throw new Error('the certificate request signature does not verify');
  const extensions: Buffer[] = [];
  for (const attribute of attributes ? children(attributes) : []) {
    const [type, values] = children(attribute);
    if (!type || !values || !type.raw.equals(derOid(X509_OID.extensionRequest))) continue;
    for (const value of children(values)) for (const extension of children(value)) extensions.push(extension.raw);
  }
  const names = nameAttributes(subject);
  return { subject: subject.raw, commonName: names.get(X509_OID.commonName)?.[0], organization: names.get(X509_OID.organization) ?? [], publicKey, extensions };
}

interface Tlv {
  tag: number;
  raw: Buffer;
  content: Buffer;
}

function readTlv(buffer: Buffer, offset: number): Tlv {
  if (offset + 2 > buffer.length) throw new Error('truncated DER');
  const tag = buffer[offset]!;
  let length = buffer[offset + 1]!;
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + buffer[offset + 2 + i]!;
    header += count;
  }
  if (offset + header + length > buffer.length) throw new Error('truncated DER');
  return { tag, raw: buffer.subarray(offset, offset + header + length), content: buffer.subarray(offset + header, offset + header + length) };
}

function children(tlv: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = 0; offset < tlv.content.length; ) {
    const child = readTlv(tlv.content, offset);
    out.push(child);
    offset += child.raw.length;
  }
  return out;
}

function nameAttributes(name: Tlv): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (const rdn of children(name)) {
    for (const pair of children(rdn)) {
      const [type, value] = children(pair);
      if (!type || !value) continue;
      const key = [X509_OID.commonName, X509_OID.organization].find((id) => derOid(id).equals(type.raw));
      if (key) values.set(key, [...(values.get(key) ?? []), value.content.toString('utf8')]);
    }
  }
  return values;
}
