/**
 * Label selectors (equality- and set-based, as in k8s.io/apimachinery/pkg/labels) and field
 * selectors (=, ==, != on the field labels a resource supports).
 */
import { badRequest } from './errors.js';

export type Requirement =
  | { key: string; op: 'eq' | 'neq'; values: [string] }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'notexists'; values: [] };

export interface LabelSelector {
  readonly requirements: Requirement[];
  matches(labels: Record<string, string> | undefined): boolean;
}

/** Splits on top-level commas (commas inside `in (a,b)` belong to the requirement). */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, selector: string): string {
  if (!LABEL_KEY.test(key)) throw badRequest(`unable to parse requirement: invalid label key "${key}" in selector "${selector}"`);
  return key;
}

function checkValue(value: string, selector: string): string {
  if (!LABEL_VALUE.test(value)) throw badRequest(`unable to parse requirement: invalid label value: "${value}" in selector "${selector}"`);
  return value;
}

export function parseLabelSelector(selector: string | undefined): LabelSelector {
  const requirements: Requirement[] = [];
  const s = (selector ?? '').trim();
  if (s) {
    for (const part of splitTopLevel(s)) {
      let m: RegExpMatchArray | null;
      if ((m = part.match(/^(\S+?)\s+(in|notin)\s*\((.*)\)$/))) {
        const values = m[3]
          .split(',')
          .map((v) => v.trim())
          .filter((v, i, all) => v.length > 0 || all.length === 1);
        requirements.push({ key: checkKey(m[1], s), op: m[2] as 'in' | 'notin', values: values.map((v) => checkValue(v, s)) });
      } else if ((m = part.match(/^(.+?)\s*(==|!=|=)\s*(.*)$/))) {
        requirements.push({ key: checkKey(m[1].trim(), s), op: m[2] === '!=' ? 'neq' : 'eq', values: [checkValue(m[3].trim(), s)] });
      } else if ((m = part.match(/^!\s*(\S+)$/))) {
        requirements.push({ key: checkKey(m[1], s), op: 'notexists', values: [] });
      } else if (/^\S+$/.test(part)) {
        requirements.push({ key: checkKey(part, s), op: 'exists', values: [] });
      } else {
        throw badRequest(`unable to parse requirement: found '${part}', expected: identifier`);
      }
    }
  }
  return {
    requirements,
    matches(labels) {
      const l = labels ?? {};
      return requirements.every((r) => {
        const has = Object.prototype.hasOwnProperty.call(l, r.key);
        const v = l[r.key];
        switch (r.op) {
          case 'eq':
            return has && v === r.values[0];
          case 'neq':
            return !has || v !== r.values[0];
          case 'in':
            return has && r.values.includes(v);
          case 'notin':
            return !has || !r.values.includes(v);
          case 'exists':
            return has;
          case 'notexists':
            return !has;
        }
        return false;
      });
    },
  };
}

export interface FieldRequirement {
  field: string;
  op: 'eq' | 'neq';
  value: string;
}

export interface FieldSelector {
  readonly requirements: FieldRequirement[];
  /** True when every requirement holds for the object's field values. */
  matches(fields: (field: string) => string): boolean;
  /** The required value of `field` when the selector pins it with `=`, e.g. spec.nodeName. */
  requiredValue(field: string): string | undefined;
}

/** Splits on unescaped commas; `\,` `\=` `\\` are escapes as in fields.ParseSelector. */
function splitEscaped(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '\\' && i + 1 < s.length) {
      cur += ch + s[i + 1];
      i++;
    } else if (ch === sep) {
      out.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/**
 * Parses a field selector. `supported` lists the field labels the resource accepts (kube answers
 * 400 `field label not supported: x` for others, or what `unsupported` says); `rename` maps labels of another API
 * version, or old names, onto the stored version's (events.k8s.io's `regarding.name` is core's
 * `involvedObject.name`, a pod's `spec.host` is `spec.nodeName`).
 */
export function parseFieldSelector(
  selector: string | undefined,
  supported: ReadonlySet<string>,
  rename: Record<string, string> = {},
  unsupported: (label: string) => string = (label) => `field label not supported: ${label}`,
): FieldSelector {
  const requirements: FieldRequirement[] = [];
  const s = (selector ?? '').trim();
  if (s) {
    for (const part of splitEscaped(s, ',')) {
      if (!part.trim()) continue;
      const m = part.match(/^(.*?)(==|!=|=)(.*)$/s);
      if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
      const label = m[1].trim();
      if (!supported.has(label) && !(label in rename)) throw badRequest(unsupported(label));
      requirements.push({ field: rename[label] ?? label, op: m[2] === '!=' ? 'neq' : 'eq', value: unescape(m[3]) });
    }
  }
  return {
    requirements,
    matches(fields) {
      return requirements.every((r) => (fields(r.field) === r.value) === (r.op === 'eq'));
    },
    requiredValue(field) {
      return requirements.find((r) => r.field === field && r.op === 'eq')?.value;
    },
  };
}

/** The string value of a dotted field path, "" when absent (how kube's field sets treat unset fields). */
export function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return '';
  if (typeof cur === 'object') return JSON.stringify(cur);
  return String(cur);
}
