// --register-with-taints (Go: pkg/util/taints taintsVar / parseTaint).
import type { V1Taint } from '@kubernetes/client-node';

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** validation.IsQualifiedName, as a list of problems (empty when valid). */
export function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/');
  let name = key;
  const errs: string[] = [];
  if (parts.length === 2) {
    const [prefix, n] = parts;
    name = n;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) errs.push('prefix part must be a lowercase RFC 1123 subdomain');
  } else if (parts.length > 2) {
    return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  else if (!NAME.test(name)) {
    errs.push("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character");
  }
  return errs;
}

const EFFECTS = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

/** One taint: "<key>=<value>:<effect>", "<key>:<effect>" or "<key>". */
export function parseTaint(spec: string): V1Taint {
  const parts = spec.split(':');
  let key: string;
  let value = '';
  let effect = '';
  if (parts.length === 1) {
    key = parts[0];
  } else if (parts.length === 2) {
    effect = parts[1];
    if (!EFFECTS.has(effect)) throw new Error(`invalid taint effect: ${effect}, unsupported taint effect`);
    const kv = parts[0].split('=');
    if (kv.length > 2) throw new Error(`invalid taint spec: ${spec}`);
    key = kv[0];
    if (kv.length === 2) {
      value = kv[1];
      if (value.length > 63 || (value !== '' && !NAME.test(value))) {
        throw new Error(`invalid taint spec: ${spec}, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`);
      }
    }
  } else {
    throw new Error(`invalid taint spec: ${spec}`);
  }
  const errs = qualifiedNameErrors(key);
  if (errs.length > 0) throw new Error(`invalid taint spec: ${spec}, ${errs.join('; ')}`);
  const taint: V1Taint = { key, effect };
  if (value) taint.value = value;
  return taint;
}

/** --register-with-taints: comma separated taints; empty gives none. */
export function parseTaints(text: string): V1Taint[] {
  if (text.length === 0) return [];
  return text.split(',').map(parseTaint);
}
