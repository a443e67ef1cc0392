/**
 * What an object looks like after kube-apiserver decoded it into its Go type and encoded it again, for the parts
 * clients see (found by sending the kubelet's requests to this server and to a real v1.20.2,
 * tools/cluster-e2e/test/stand-in-vs-real.test.ts):
 *
 * - resource.Quantity values come back in canonical form: `24576Mi` is `24Gi`, `0.5` is `500m`, `1000m` is `1`.
 * - Fields without `omitempty`, and struct-valued fields (encoding/json never omits a struct), are always written:
 *   a pod condition without `lastProbeTime` comes back with `"lastProbeTime": null`, a container status without
 *   `lastState` with `"lastState": {}`, an event without `eventTime` with `"eventTime": null`.
 *
 * Only the types this server serves, and of those the fields clients write, are described. The other direction,
 * Go dropping `omitempty` fields that hold a zero value (`"reason": ""`), is not simulated.
 */
import { clone, isObject, type Json, type JsonObject } from './patch.js';

// ---------------------------------------------------------------------------------------------
// resource.Quantity

/** A decimal number as mantissa * 10^exponent, exactly. */
interface Decimal {
  mantissa: bigint;
  exponent: number;
}

type QuantityFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)|[eE]([+-]?\d+))$/;
const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL_SUFFIX_OF = new Map(Object.entries(DECIMAL_SUFFIX).map(([suffix, exponent]) => [exponent, suffix]));
const BINARY_SUFFIX_OF = new Map(Object.entries(BINARY_SUFFIX).map(([suffix, power]) => [power, suffix]));

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** x rounded up (away from zero, as inf.Dec's RoundUp) to 10^scale. */
function roundUp(d: Decimal, scale: number): Decimal {
  if (d.exponent >= scale) return d;
  const drop = pow10(scale - d.exponent);
  const sign = d.mantissa < 0n ? -1n : 1n;
  const abs = d.mantissa * sign;
  const q = abs / drop + (abs % drop === 0n ? 0n : 1n);
  return { mantissa: q * sign, exponent: scale };
}

/** The integer value when it is one (base-1024 formatting needs it). */
function asInteger(d: Decimal): bigint | undefined {
  if (d.exponent >= 0) return d.mantissa * pow10(d.exponent);
  const div = pow10(-d.exponent);
  return d.mantissa % div === 0n ? d.mantissa / div : undefined;
}

/** Decimal canonical form (inf.Dec / int64Amount AsCanonicalBytes): trailing zeros out, exponent a multiple of 3. */
function decimalCanonical(d: Decimal, format: QuantityFormat): string {
  let { mantissa, exponent } = d;
  while (mantissa !== 0n && mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  const rem = ((exponent % 3) + 3) % 3;
  mantissa *= pow10(rem);
  exponent -= rem;
  if (format === 'DecimalExponent') return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  const suffix = DECIMAL_SUFFIX_OF.get(exponent);
  return suffix === undefined ? `${mantissa}e${exponent}` : `${mantissa}${suffix}`;
}

/**
 * A resource.Quantity as kube-apiserver writes it back (Quantity.CanonicalizeBytes): numbers with a binary suffix
 * stay binary (`24Gi`) when they are whole and at least 1024, anything else is decimal SI (`100m`, `1500m`, `2k`);
 * an exponent form stays one (`1e3`). A quantity keeps nano precision (smaller values round up, away from zero);
 * `scale` -3 rounds up to milli units, as SetDefaults_ResourceList does to every value of a resource list. Returns
 * undefined for a value that is no quantity.
 */
export function canonicalQuantity(value: string | number, scale = -9): string | undefined {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const negative = m[1].startsWith('-');
  const [whole, fraction = ''] = m[1].replace(/^[+-]/, '').split('.');
  let d: Decimal = { mantissa: BigInt(`${whole}${fraction}` || '0') * (negative ? -1n : 1n), exponent: -fraction.length };
  let format: QuantityFormat;
  if (m[3] !== undefined) {
    format = 'DecimalExponent';
    d.exponent += Number(m[3]);
  } else if (m[2] in BINARY_SUFFIX) {
    format = 'BinarySI';
    const factor = 1024n ** BigInt(BINARY_SUFFIX[m[2]]);
    d = { mantissa: d.mantissa * factor, exponent: d.exponent };
  } else {
    format = 'DecimalSI';
    d.exponent += DECIMAL_SUFFIX[m[2]];
  }
  d = roundUp(d, scale);
  if (d.mantissa === 0n) return '0';
  if (format === 'BinarySI') {
    const n = asInteger(d);
    // Small or fractional binary quantities are written as decimal, so nothing is rounded.
    if (n === undefined || (n > -1024n && n < 1024n)) return decimalCanonical(d, 'DecimalSI');
    let mantissa = n;
    let power = 0;
    while (power < 6 && mantissa % 1024n === 0n) {
      mantissa /= 1024n;
      power++;
    }
    return `${mantissa}${BINARY_SUFFIX_OF.get(power) ?? ''}`;
  }
  return decimalCanonical(d, format);
}

// ---------------------------------------------------------------------------------------------
// fmt's %v of decoded JSON (map[string]interface{}), as in messages that print a patch

/** A float64 as %v prints it (%g, shortest): `40`, `0.5`, `1e+06`, `1.234567e+06`. */
function goFloat(n: number): string {
  if (n === 0) return '0';
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : n < 0 ? '-Inf' : 'NaN';
  const [mantissa, exp] = n.toExponential().split('e');
  const exponent = Number(exp);
  if (exponent < -4 || exponent >= 6) return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  return String(n);
}

/** Decoded JSON as fmt's %v prints it: `map[a:1 b:[x y]]` (keys sorted), strings bare, null `<nil>`. */
export function goFormat(value: Json): string {
  if (value === null) return '<nil>';
  if (Array.isArray(value)) return `[${value.map(goFormat).join(' ')}]`;
  if (isObject(value)) return `map[${Object.keys(value).sort().map((k) => `${k}:${goFormat(value[k])}`).join(' ')}]`;
  if (typeof value === 'number') return goFloat(value);
  return String(value);
}

// ---------------------------------------------------------------------------------------------
// Shapes: the fields encoding/json always writes

export interface WireField {
  /** Written when the field is absent or null: the zero value of a field without omitempty, `{}` for a struct. */
  zero?: Json;
  /** The fields of the struct the field holds, or of each element of the list it holds. */
  fields?: WireShape;
  /** A resource.Quantity (`one`) or a ResourceList (`map`, its values rounded up to milli units): written in canonical form. */
  quantity?: 'one' | 'map';
}

export type WireShape = Record<string, WireField>;

/** Fills in what encoding/json would write and canonicalizes quantities, in place. */
export function applyWireShape(obj: JsonObject, shape: WireShape): JsonObject {
  for (const [key, field] of Object.entries(shape)) {
    if ((obj[key] === undefined || obj[key] === null) && field.zero !== undefined) obj[key] = clone(field.zero);
    const value = obj[key];
    if (field.quantity === 'one' && (typeof value === 'string' || typeof value === 'number')) {
      obj[key] = canonicalQuantity(value) ?? value;
    } else if (field.quantity === 'map' && isObject(value)) {
      for (const [name, q] of Object.entries(value)) if (typeof q === 'string' || typeof q === 'number') value[name] = canonicalQuantity(q, -3) ?? q;
    }
    if (field.fields) {
      if (Array.isArray(value)) {
        for (const item of value) if (isObject(item)) applyWireShape(item, field.fields);
      } else if (isObject(value)) {
        applyWireShape(value, field.fields);
      }
    }
  }
  return obj;
}

const struct = (fields: WireShape = {}): WireField => ({ zero: {}, fields });
const pointer = (fields: WireShape): WireField => ({ fields });
const list = (fields: WireShape): WireField => ({ fields });
const time: WireField = { zero: null };
const str: WireField = { zero: '' };
const num: WireField = { zero: 0 };
const resourceList: WireField = { quantity: 'map' };

/** metav1.ObjectMeta: creationTimestamp is a struct (null when zero, as in a watch bookmark). */
const objectMeta = struct({ creationTimestamp: time, ownerReferences: list({ apiVersion: str, kind: str, name: str, uid: str }) });

const resources = struct({ limits: resourceList, requests: resourceList });

/** resource.Quantity has no omitempty that works on a struct: a resourceFieldRef without a divisor has "0". */
const resourceFieldRef = pointer({ divisor: { zero: '0', quantity: 'one' } });
const downwardAPIItems = list({ resourceFieldRef });

const container: WireShape = {
  name: str,
  ports: list({ containerPort: num }),
  env: list({ name: str, valueFrom: pointer({ resourceFieldRef }) }),
  resources,
  volumeMounts: list({ name: str, mountPath: str }),
};

const containerState = struct({
  running: pointer({ startedAt: time }),
  terminated: pointer({ exitCode: num, startedAt: time, finishedAt: time }),
});

const containerStatus: WireShape = {
  name: str,
  state: containerState,
  lastState: containerState,
  ready: { zero: false },
  restartCount: num,
  image: str,
  imageID: str,
};

export const podWire: WireShape = {
  metadata: objectMeta,
  spec: struct({
    volumes: list({
      name: str,
      emptyDir: pointer({ sizeLimit: { quantity: 'one' } }),
      downwardAPI: pointer({ items: downwardAPIItems }),
      projected: pointer({ sources: list({ downwardAPI: pointer({ items: downwardAPIItems }) }) }),
    }),
    initContainers: list(container),
    containers: { zero: null, fields: container },
    ephemeralContainers: list(container),
    readinessGates: list({ conditionType: str }),
    overhead: resourceList,
  }),
  status: struct({
    conditions: list({ type: str, status: str, lastProbeTime: time, lastTransitionTime: time }),
    initContainerStatuses: list(containerStatus),
    containerStatuses: list(containerStatus),
    ephemeralContainerStatuses: list(containerStatus),
  }),
};

export const nodeWire: WireShape = {
  metadata: objectMeta,
  spec: struct({ taints: list({ key: str, effect: str }) }),
  status: struct({
    capacity: resourceList,
    allocatable: resourceList,
    conditions: list({ type: str, status: str, lastHeartbeatTime: time, lastTransitionTime: time }),
    addresses: list({ type: str, address: str }),
    daemonEndpoints: struct({ kubeletEndpoint: struct({ Port: num }) }),
    nodeInfo: struct({
      machineID: str,
      systemUUID: str,
      bootID: str,
      kernelVersion: str,
      osImage: str,
      containerRuntimeVersion: str,
      kubeletVersion: str,
      kubeProxyVersion: str,
      operatingSystem: str,
      architecture: str,
    }),
    images: list({ names: { zero: null } }),
    volumesAttached: list({ name: str, devicePath: str }),
  }),
};

/** core/v1 Event: the times are structs, reportingComponent/reportingInstance have no omitempty. */
export const coreEventWire: WireShape = {
  metadata: objectMeta,
  involvedObject: struct(),
  source: struct(),
  firstTimestamp: time,
  lastTimestamp: time,
  eventTime: time,
  series: pointer({ lastObservedTime: time }),
  reportingComponent: str,
  reportingInstance: str,
};

/** events.k8s.io/v1 Event. */
export const eventsV1Wire: WireShape = {
  metadata: objectMeta,
  eventTime: time,
  series: pointer({ count: num, lastObservedTime: time }),
  regarding: struct(),
  deprecatedSource: struct(),
  deprecatedFirstTimestamp: time,
  deprecatedLastTimestamp: time,
};

export const namespaceWire: WireShape = { metadata: objectMeta, spec: struct(), status: struct() };
export const serviceWire: WireShape = { metadata: objectMeta, spec: struct(), status: struct({ loadBalancer: struct() }) };
export const leaseWire: WireShape = { metadata: objectMeta, spec: struct() };
export const metaOnlyWire: WireShape = { metadata: objectMeta };
