// The downward API's values, shared by container environment variables and downwardAPI/projected
// volumes (Go: pkg/fieldpath ExtractFieldPathAsString/FormatMap/SplitMaybeSubscriptedPath and
// pkg/api/v1/resource ExtractContainerResourceValue/MergeContainerResourceLimits).
import type { V1Container, V1ObjectMeta, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import { Quantity, quantityMilliValue, quantityValue } from './quantity.js';

/** Go's strconv.Quote (fmt's %q): printable runes as they are, the rest escaped Go's way. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const r = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (r === 0x20 || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch)) out += ch;
    else if (r === 0x07) out += '\\a';
    else if (r === 0x08) out += '\\b';
    else if (r === 0x0c) out += '\\f';
    else if (r === 0x0a) out += '\\n';
    else if (r === 0x0d) out += '\\r';
    else if (r === 0x09) out += '\\t';
    else if (r === 0x0b) out += '\\v';
    else if (r < 0x20 || r === 0x7f) out += `\\x${r.toString(16).padStart(2, '0')}`;
    else if (r < 0x10000) out += `\\u${r.toString(16).padStart(4, '0')}`;
    else out += `\\U${r.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** Go: fieldpath.FormatMap: `key="value"` lines sorted by key, values %q-quoted, no trailing newline. */
export function formatMap(m: Record<string, string> | undefined): string {
  const keys = Object.keys(m ?? {}).sort(compareGoStrings);
  return keys.map((k) => `${k}=${goQuote(m![k])}`).join('\n');
}

/** Go sorts strings by bytes; for UTF-16 strings comparing code points gives the same order. */
function compareGoStrings(a: string, b: string): number {
  const ca = Array.from(a, (c) => c.codePointAt(0)!);
  const cb = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) if (ca[i] !== cb[i]) return ca[i] - cb[i];
  return ca.length - cb.length;
}

/**
 * Go: fieldpath.SplitMaybeSubscriptedPath: `metadata.labels['app']` -> { path: 'metadata.labels',
 * subscript: 'app' }; undefined when the path has no subscript.
 */
export function splitMaybeSubscriptedPath(fieldPath: string): { path: string; subscript: string } | undefined {
  if (!fieldPath.endsWith("']")) return undefined;
  const s = fieldPath.slice(0, -2);
  const at = s.indexOf("['");
  if (at <= 0) return undefined;
  return { path: s.slice(0, at), subscript: s.slice(at + 2) };
}

/**
 * Go: fieldpath.ExtractFieldPathAsString for the metadata fields every object has; throws Go's
 * error text for a path it does not know (`unsupported fieldPath: spec.x`).
 */
export function extractFieldPathAsString(obj: { metadata?: V1ObjectMeta }, fieldPath: string): string {
  const meta = obj.metadata ?? {};
  const subscripted = splitMaybeSubscriptedPath(fieldPath);
  if (subscripted) {
    const { path, subscript } = subscripted;
    switch (path) {
      case 'metadata.annotations': {
        // Annotation keys may carry upper case in the prefix, which the qualified-name check would refuse.
        const errs = qualifiedNameErrors(subscript.toLowerCase());
        if (errs.length > 0) throw new Error(`invalid key subscript in ${fieldPath}: ${errs.join(';')}`);
        return meta.annotations?.[subscript] ?? '';
      }
      case 'metadata.labels': {
        const errs = qualifiedNameErrors(subscript);
        if (errs.length > 0) throw new Error(`invalid key subscript in ${fieldPath}: ${errs.join(';')}`);
        return meta.labels?.[subscript] ?? '';
      }
      default:
        throw new Error(`fieldPath ${goQuote(fieldPath)} does not support subscript`);
    }
  }
  switch (fieldPath) {
    case 'metadata.annotations':
      return formatMap(meta.annotations);
    case 'metadata.labels':
      return formatMap(meta.labels);
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
  }
  throw new Error(`unsupported fieldPath: ${fieldPath}`);
}

/** What a container without a limit gets as its limit in the downward API (Go: node allocatable). */
export interface NodeAllocatable {
  milliCpu?: number;
  memoryBytes?: number;
  ephemeralStorageBytes?: number;
}

/** Go: findContainerInPod (regular and init containers); throws `container x not found`. */
export function findContainerInPod(pod: V1Pod, containerName: string): V1Container {
  for (const c of pod.spec?.containers ?? []) if (c.name === containerName) return c;
  for (const c of pod.spec?.initContainers ?? []) if (c.name === containerName) return c;
  throw new Error(`container ${containerName} not found`);
}

/** Go: ExtractResourceValueByContainerNameAndNodeAllocatable (and ...ByContainerName without allocatable). */
export function extractResourceValueByContainerName(
  fs: V1ResourceFieldSelector,
  pod: V1Pod,
  containerName: string,
  allocatable?: NodeAllocatable,
): string {
  return extractContainerResourceValue(fs, findContainerInPod(pod, containerName), allocatable);
}

type ResourceKind = 'cpu' | 'memory' | 'ephemeral-storage';

/**
 * Go: ExtractContainerResourceValue, after MergeContainerResourceLimits when allocatable is given:
 * a missing cpu/memory/ephemeral-storage limit reads as the node's allocatable. The value is divided
 * by the divisor (default 1) and rounded up; cpu in millicores, the rest in whole units. A missing
 * request reads as the limit the spec sets, as the API server's defaulting would have written it.
 */
export function extractContainerResourceValue(fs: V1ResourceFieldSelector, container: V1Container, allocatable?: NodeAllocatable): string {
  const divisor = fs.divisor !== undefined && !Quantity.fromJSON(fs.divisor).isZero() ? fs.divisor : '1';
  const specLimits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const limit = (name: ResourceKind): string | number | undefined => {
    if (specLimits[name] !== undefined) return specLimits[name];
    switch (name) {
      case 'cpu':
        return allocatable?.milliCpu !== undefined ? `${allocatable.milliCpu}m` : undefined;
      case 'memory':
        return allocatable?.memoryBytes;
      case 'ephemeral-storage':
        return allocatable?.ephemeralStorageBytes;
    }
  };
  const request = (name: string): string | undefined => requests[name] ?? specLimits[name];
  const cpu = (q: string | number | undefined) => String(Math.ceil(quantityMilliValue(q) / quantityMilliValue(divisor)));
  const units = (q: string | number | undefined) => String(Math.ceil(quantityValue(q) / quantityValue(divisor)));

  switch (fs.resource) {
    case 'limits.cpu':
      return cpu(limit('cpu'));
    case 'limits.memory':
      return units(limit('memory'));
    case 'limits.ephemeral-storage':
      return units(limit('ephemeral-storage'));
    case 'requests.cpu':
      return cpu(request('cpu'));
    case 'requests.memory':
      return units(request('memory'));
    case 'requests.ephemeral-storage':
      return units(request('ephemeral-storage'));
  }
  // Huge pages are never overcommitted, so they always have a limit and allocatable is not merged.
  if (fs.resource.startsWith('requests.hugepages-')) return units(request(fs.resource.slice('requests.'.length)));
  if (fs.resource.startsWith('limits.hugepages-')) return units(specLimits[fs.resource.slice('limits.'.length)]);
  throw new Error(`unsupported container resource : ${fs.resource}`);
}

const QUALIFIED_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QUALIFIED_NAME = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const QUALIFIED_NAME_ERR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/** Go: validation.RegexError. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

/** Go: validation.IsQualifiedName, the problems with a label or annotation key (empty when valid). */
function qualifiedNameErrors(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0];
  } else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else {
      if (prefix.length > 253) errs.push('prefix part must be no more than 253 characters');
      if (!DNS1123_SUBDOMAIN.test(prefix)) errs.push(`prefix part ${regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, 'example.com')}`);
    }
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (!QUALIFIED_NAME.test(name)) errs.push(`name part ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}
