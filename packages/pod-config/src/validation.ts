import type { V1Container, V1ContainerPort, V1EnvVar, V1KeyToPath, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';

/** Go's field.ErrorType, with the text Go prints for each. */
export type FieldErrorType = 'Required value' | 'Invalid value' | 'Duplicate value' | 'Unsupported value' | 'Not found';

/** One problem with one field, like Go's *field.Error. */
export interface FieldError {
  /** The field path, e.g. `spec.containers[1].name`. */
  field: string;
  type: FieldErrorType;
  /** The offending value, when there is one. */
  value?: unknown;
  detail?: string;
}

/** Formats a FieldError the way Go's field.Error.Error() does: `spec.containers[1].name: Duplicate value: "web"`. */
export function formatFieldError(e: FieldError): string {
  switch (e.type) {
    case 'Required value':
      return `${e.field}: Required value${e.detail ? `: ${e.detail}` : ''}`;
    case 'Duplicate value':
    case 'Not found':
      return `${e.field}: ${e.type}: ${formatValue(e.value)}`;
    default:
      return `${e.field}: ${e.type}: ${formatValue(e.value)}${e.detail ? `: ${e.detail}` : ''}`;
  }
}

/** field.ErrorList.ToAggregate().Error(): one error as is, several as `[a, b]`. */
export function formatFieldErrors(errors: readonly FieldError[]): string {
  const texts = errors.map(formatFieldError);
  return texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
}

function formatValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123LabelRegexp = new RegExp(`^${dns1123LabelFmt}$`);
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainRegexp = new RegExp(`^${dns1123SubdomainFmt}$`);
const DNS1123LabelMaxLength = 63;
const DNS1123SubdomainMaxLength = 253;

/** Go's validation.IsDNS1123Label: the messages for what is wrong, empty when valid. */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123LabelMaxLength) errs.push(`must be no more than ${DNS1123LabelMaxLength} characters`);
  if (!dns1123LabelRegexp.test(value)) {
    errs.push(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an " +
        `alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${dns1123LabelFmt}')`,
    );
  }
  return errs;
}

/** Go's validation.IsDNS1123Subdomain. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123SubdomainMaxLength) errs.push(`must be no more than ${DNS1123SubdomainMaxLength} characters`);
  if (!dns1123SubdomainRegexp.test(value)) {
    errs.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end " +
        `with an alphanumeric character (e.g. 'example.com', regex used for validation is '${dns1123SubdomainFmt}')`,
    );
  }
  return errs;
}

export const supportedRestartPolicies = ['Always', 'OnFailure', 'Never'] as const;
export const supportedDNSPolicies = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'] as const;
export const supportedPullPolicies = ['Always', 'IfNotPresent', 'Never'] as const;
export const supportedPortProtocols = ['TCP', 'UDP', 'SCTP'] as const;

function notSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  return { field, type: 'Unsupported value', value, detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}` };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks the shape of a decoded manifest before it is turned into a V1Pod: the fields the kubelet
 * walks must have the right JSON types, so a manifest like `containers: web` gets a field error
 * rather than a TypeError deep in the deserializer.
 */
export function validatePodShape(obj: unknown): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObject(obj)) return [{ field: '<root>', type: 'Invalid value', value: obj, detail: 'must be an object' }];
  const checkObject = (v: unknown, field: string): boolean => {
    if (v === undefined || v === null) return false;
    if (!isObject(v)) {
      errs.push({ field, type: 'Invalid value', value: v, detail: 'must be an object' });
      return false;
    }
    return true;
  };
  const checkArray = (v: unknown, field: string): v is unknown[] => {
    if (v === undefined || v === null) return false;
    if (!Array.isArray(v)) {
      errs.push({ field, type: 'Invalid value', value: v, detail: 'must be a list' });
      return false;
    }
    return true;
  };
  if (checkObject(obj.metadata, 'metadata')) {
    const md = obj.metadata as Record<string, unknown>;
    for (const key of ['name', 'namespace', 'uid'] as const) {
      if (md[key] !== undefined && md[key] !== null && typeof md[key] !== 'string') {
        errs.push({ field: `metadata.${key}`, type: 'Invalid value', value: md[key], detail: 'must be a string' });
      }
    }
    for (const key of ['labels', 'annotations'] as const) {
      if (checkObject(md[key], `metadata.${key}`)) {
        for (const [k, v] of Object.entries(md[key] as Record<string, unknown>)) {
          if (typeof v !== 'string') errs.push({ field: `metadata.${key}[${k}]`, type: 'Invalid value', value: v, detail: 'must be a string' });
        }
      }
    }
  }
  if (!checkObject(obj.spec, 'spec')) return errs;
  const spec = obj.spec as Record<string, unknown>;
  for (const listName of ['initContainers', 'containers'] as const) {
    const list = spec[listName];
    if (!checkArray(list, `spec.${listName}`)) continue;
    list.forEach((c, i) => {
      const path = `spec.${listName}[${i}]`;
      if (!checkObject(c, path)) {
        if (c === null || c === undefined) errs.push({ field: path, type: 'Invalid value', value: c, detail: 'must be an object' });
        return;
      }
      const container = c as Record<string, unknown>;
      for (const key of ['name', 'image'] as const) {
        if (container[key] !== undefined && container[key] !== null && typeof container[key] !== 'string') {
          errs.push({ field: `${path}.${key}`, type: 'Invalid value', value: container[key], detail: 'must be a string' });
        }
      }
      for (const key of ['command', 'args', 'env', 'volumeMounts'] as const) checkArray(container[key], `${path}.${key}`);
      if (checkArray(container.ports, `${path}.ports`)) {
        (container.ports as unknown[]).forEach((p, j) => {
          if (!checkObject(p, `${path}.ports[${j}]`)) return;
          const port = p as Record<string, unknown>;
          for (const key of ['containerPort', 'hostPort'] as const) {
            if (port[key] !== undefined && port[key] !== null && !Number.isInteger(port[key])) {
              errs.push({ field: `${path}.ports[${j}].${key}`, type: 'Invalid value', value: port[key], detail: 'must be an integer' });
            }
          }
        });
      }
    });
  }
  if (checkArray(spec.volumes, 'spec.volumes')) {
    (spec.volumes as unknown[]).forEach((v, i) => checkObject(v, `spec.volumes[${i}]`));
  }
  if (spec.terminationGracePeriodSeconds !== undefined && spec.terminationGracePeriodSeconds !== null && !Number.isInteger(spec.terminationGracePeriodSeconds)) {
    errs.push({ field: 'spec.terminationGracePeriodSeconds', type: 'Invalid value', value: spec.terminationGracePeriodSeconds, detail: 'must be an integer' });
  }
  return errs;
}

/**
 * The part of Go's validation.ValidatePod the kubelet relies on for pods it did not get from the
 * API server (static pods): names, containers, images, policies and ports. Returns every problem
 * found, each naming its field path.
 */
export function validatePod(pod: V1Pod): FieldError[] {
  const errs: FieldError[] = [];
  const name = pod.metadata?.name;
  if (!name) errs.push({ field: 'metadata.name', type: 'Required value', detail: 'name or generateName is required' });
  else for (const msg of isDNS1123Subdomain(name)) errs.push({ field: 'metadata.name', type: 'Invalid value', value: name, detail: msg });
  const namespace = pod.metadata?.namespace;
  if (!namespace) errs.push({ field: 'metadata.namespace', type: 'Required value' });
  else for (const msg of isDNS1123Label(namespace)) errs.push({ field: 'metadata.namespace', type: 'Invalid value', value: namespace, detail: msg });

  const spec = pod.spec;
  if (!spec) {
    errs.push({ field: 'spec', type: 'Required value' });
    return errs;
  }

  const volumeNames = new Set<string>();
  (spec.volumes ?? []).forEach((v, i) => {
    const path = `spec.volumes[${i}].name`;
    if (!v.name) errs.push({ field: path, type: 'Required value' });
    else if (volumeNames.has(v.name)) errs.push({ field: path, type: 'Duplicate value', value: v.name });
    else {
      for (const msg of isDNS1123Label(v.name)) errs.push({ field: path, type: 'Invalid value', value: v.name, detail: msg });
      volumeNames.add(v.name);
    }
    validateVolumeSource(v, `spec.volumes[${i}]`, errs);
  });

  const containerNames = new Set<string>();
  const validateContainers = (containers: V1Container[] | undefined, listPath: string): void => {
    (containers ?? []).forEach((c, i) => {
      const path = `${listPath}[${i}]`;
      if (!c.name) errs.push({ field: `${path}.name`, type: 'Required value' });
      else {
        for (const msg of isDNS1123Label(c.name)) errs.push({ field: `${path}.name`, type: 'Invalid value', value: c.name, detail: msg });
        if (containerNames.has(c.name)) errs.push({ field: `${path}.name`, type: 'Duplicate value', value: c.name });
        containerNames.add(c.name);
      }
      if (!c.image || c.image.trim() === '') errs.push({ field: `${path}.image`, type: 'Required value' });
      if (c.imagePullPolicy !== undefined && !(supportedPullPolicies as readonly string[]).includes(c.imagePullPolicy)) {
        errs.push(notSupported(`${path}.imagePullPolicy`, c.imagePullPolicy, supportedPullPolicies));
      }
      validatePorts(c.ports, `${path}.ports`, errs);
      validateEnv(c.env, `${path}.env`, errs);
      const mountPaths = new Set<string>();
      (c.volumeMounts ?? []).forEach((m, j) => {
        if (!m.name) errs.push({ field: `${path}.volumeMounts[${j}].name`, type: 'Required value' });
        else if (!volumeNames.has(m.name)) errs.push({ field: `${path}.volumeMounts[${j}].name`, type: 'Not found', value: m.name });
        if (!m.mountPath) errs.push({ field: `${path}.volumeMounts[${j}].mountPath`, type: 'Required value' });
        else if (mountPaths.has(m.mountPath)) errs.push({ field: `${path}.volumeMounts[${j}].mountPath`, type: 'Invalid value', value: m.mountPath, detail: 'must be unique' });
        else mountPaths.add(m.mountPath);
        validateSubPath(m, `${path}.volumeMounts`, j, errs);
      });
    });
  };
  validateContainers(spec.initContainers, 'spec.initContainers');
  if (!spec.containers || spec.containers.length === 0) errs.push({ field: 'spec.containers', type: 'Required value' });
  validateContainers(spec.containers, 'spec.containers');

  if (spec.restartPolicy === undefined || spec.restartPolicy === '') errs.push({ field: 'spec.restartPolicy', type: 'Required value' });
  else if (!(supportedRestartPolicies as readonly string[]).includes(spec.restartPolicy)) {
    errs.push(notSupported('spec.restartPolicy', spec.restartPolicy, supportedRestartPolicies));
  }
  if (spec.dnsPolicy !== undefined && !(supportedDNSPolicies as readonly string[]).includes(spec.dnsPolicy)) {
    errs.push(notSupported('spec.dnsPolicy', spec.dnsPolicy, supportedDNSPolicies));
  }
  if (spec.dnsPolicy === 'None' && !spec.dnsConfig) {
    errs.push({ field: 'spec.dnsConfig', type: 'Required value', detail: 'must provide `dnsConfig` when `dnsPolicy` is None' });
  }
  if (spec.terminationGracePeriodSeconds !== undefined && spec.terminationGracePeriodSeconds < 0) {
    errs.push({ field: 'spec.terminationGracePeriodSeconds', type: 'Invalid value', value: spec.terminationGracePeriodSeconds, detail: 'must be greater than or equal to 0' });
  }
  if (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds <= 0) {
    errs.push({ field: 'spec.activeDeadlineSeconds', type: 'Invalid value', value: spec.activeDeadlineSeconds, detail: 'must be between 1 and 2147483647, inclusive' });
  }
  return errs;
}

/** Go's validatePathNoBacksteps: no `..` element anywhere (one error is enough, even for `../../..`). */
function validatePathNoBacksteps(target: string, field: string, errs: FieldError[]): void {
  if (target.split('/').includes('..')) errs.push({ field, type: 'Invalid value', value: target, detail: "must not contain '..'" });
}

/** Go's validateLocalDescendingPath: relative, and never above where it starts. */
function validateLocalDescendingPath(target: string, field: string, errs: FieldError[]): void {
  if (target.startsWith('/')) errs.push({ field, type: 'Invalid value', value: target, detail: 'must be a relative path' });
  validatePathNoBacksteps(target, field, errs);
}

/** Go's validateLocalNonReservedPath: also not `..something`, which the atomic writer's `..data` links reserve. */
function validateLocalNonReservedPath(target: string, field: string, errs: FieldError[]): void {
  validateLocalDescendingPath(target, field, errs);
  if (target.startsWith('..') && !target.startsWith('../')) errs.push({ field, type: 'Invalid value', value: target, detail: "must not start with '..'" });
}

const FILE_MODE_ERROR = 'must be a number between 0 and 0777 (octal), both inclusive';

function validateKeyToPaths(items: V1KeyToPath[] | undefined, field: string, errs: FieldError[]): void {
  (items ?? []).forEach((item, i) => {
    const path = `${field}[${i}]`;
    if (!item.key) errs.push({ field: `${path}.key`, type: 'Required value' });
    if (!item.path) errs.push({ field: `${path}.path`, type: 'Required value' });
    validateLocalNonReservedPath(item.path ?? '', `${path}.path`, errs);
    validateFileMode(item.mode, `${path}.mode`, errs);
  });
}

function validateFileMode(mode: number | undefined, field: string, errs: FieldError[]): void {
  if (mode !== undefined && mode !== null && (mode > 0o777 || mode < 0)) errs.push({ field, type: 'Invalid value', value: mode, detail: FILE_MODE_ERROR });
}

const supportedHostPathTypes = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const;

/**
 * The paths of Go's validateVolumeSource that decide where the kubelet writes on the host: hostPath (no `..`, a known
 * type), the file names of configMap, secret, downwardAPI and projected volumes (relative, below the volume, not
 * reserved) and their modes.
 */
function validateVolumeSource(v: V1Volume, field: string, errs: FieldError[]): void {
  if (v.hostPath) {
    if (!v.hostPath.path) errs.push({ field: `${field}.hostPath.path`, type: 'Required value' });
    else validatePathNoBacksteps(v.hostPath.path, `${field}.hostPath.path`, errs);
    const type = v.hostPath.type ?? '';
    if (!(supportedHostPathTypes as readonly string[]).includes(type)) errs.push(notSupported(`${field}.hostPath.type`, type, [...supportedHostPathTypes].sort()));
  }
  if (v.configMap) {
    validateKeyToPaths(v.configMap.items, `${field}.configMap.items`, errs);
    validateFileMode(v.configMap.defaultMode, `${field}.configMap.defaultMode`, errs);
  }
  if (v.secret) {
    validateKeyToPaths(v.secret.items, `${field}.secret.items`, errs);
    validateFileMode(v.secret.defaultMode, `${field}.secret.defaultMode`, errs);
  }
  if (v.downwardAPI) {
    // Go 1.20 names a downwardAPI file's fields without its index (validateDownwardAPIVolumeFile gets the volume's path).
    (v.downwardAPI.items ?? []).forEach((item) => {
      const path = `${field}.downwardAPI`;
      if (!item.path) errs.push({ field: `${path}.path`, type: 'Required value' });
      validateLocalNonReservedPath(item.path ?? '', `${path}.path`, errs);
      validateFileMode(item.mode, `${path}.mode`, errs);
    });
    validateFileMode(v.downwardAPI.defaultMode, `${field}.downwardAPI.defaultMode`, errs);
  }
  if (v.projected) {
    (v.projected.sources ?? []).forEach((source, i) => {
      const path = `${field}.projected.sources[${i}]`;
      if (source.configMap) validateKeyToPaths(source.configMap.items, `${path}.configMap.items`, errs);
      if (source.secret) validateKeyToPaths(source.secret.items, `${path}.secret.items`, errs);
      (source.downwardAPI?.items ?? []).forEach((item) => {
        const itemPath = `${path}.downwardAPI`;
        if (!item.path) errs.push({ field: `${itemPath}.path`, type: 'Required value' });
        validateLocalNonReservedPath(item.path ?? '', `${itemPath}.path`, errs);
      });
      if (source.serviceAccountToken) validateLocalNonReservedPath(source.serviceAccountToken.path ?? '', `${path}.serviceAccountToken.path`, errs);
    });
    validateFileMode(v.projected.defaultMode, `${field}.projected.defaultMode`, errs);
  }
}

/**
 * Go's ValidateVolumeMounts for subPath and subPathExpr. As in Go 1.20, the path checks name the list
 * (`volumeMounts.subPath`), the exclusivity check the mount (`volumeMounts[i].subPathExpr`).
 */
function validateSubPath(m: V1VolumeMount, listField: string, index: number, errs: FieldError[]): void {
  if (m.subPath) validateLocalDescendingPath(m.subPath, `${listField}.subPath`, errs);
  if (m.subPathExpr) {
    if (m.subPath) errs.push({ field: `${listField}[${index}].subPathExpr`, type: 'Invalid value', value: m.subPathExpr, detail: 'subPathExpr and subPath are mutually exclusive' });
    validateLocalDescendingPath(m.subPathExpr, `${listField}.subPathExpr`, errs);
  }
}

const envVarNameFmt = '[-._a-zA-Z][-._a-zA-Z0-9]*';
const envVarNameRegexp = new RegExp(`^${envVarNameFmt}$`);

/** Go's validateEnv: every variable named, and named as IsEnvVarName allows. */
function validateEnv(env: V1EnvVar[] | undefined, field: string, errs: FieldError[]): void {
  (env ?? []).forEach((e, i) => {
    const path = `${field}[${i}].name`;
    if (!e.name) errs.push({ field: path, type: 'Required value' });
    else if (!envVarNameRegexp.test(e.name)) {
      errs.push({
        field: path,
        type: 'Invalid value',
        value: e.name,
        detail:
          "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit " +
          `(e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '${envVarNameFmt}')`,
      });
    }
  });
}

function validatePorts(ports: V1ContainerPort[] | undefined, listPath: string, errs: FieldError[]): void {
  const portNames = new Set<string>();
  (ports ?? []).forEach((p, i) => {
    const path = `${listPath}[${i}]`;
    if (p.name) {
      if (portNames.has(p.name)) errs.push({ field: `${path}.name`, type: 'Duplicate value', value: p.name });
      else if (p.name.length > 15 || !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(p.name) || !/[a-z]/.test(p.name) || p.name.includes('--')) {
        errs.push({ field: `${path}.name`, type: 'Invalid value', value: p.name, detail: 'must be an IANA_SVC_NAME (at most 15 characters, matching regex [a-z0-9]([a-z0-9-]*[a-z0-9])*, it must contain at least one letter [a-z], and hyphens cannot be adjacent to other hyphens)' });
      }
      portNames.add(p.name);
    }
    if (p.containerPort === undefined || p.containerPort === 0) errs.push({ field: `${path}.containerPort`, type: 'Required value' });
    else if (p.containerPort < 1 || p.containerPort > 65535) {
      errs.push({ field: `${path}.containerPort`, type: 'Invalid value', value: p.containerPort, detail: 'must be between 1 and 65535, inclusive' });
    }
    if (p.hostPort !== undefined && p.hostPort !== 0 && (p.hostPort < 1 || p.hostPort > 65535)) {
      errs.push({ field: `${path}.hostPort`, type: 'Invalid value', value: p.hostPort, detail: 'must be between 1 and 65535, inclusive' });
    }
    if (p.protocol === undefined) errs.push({ field: `${path}.protocol`, type: 'Required value' });
    else if (!(supportedPortProtocols as readonly string[]).includes(p.protocol)) errs.push(notSupported(`${path}.protocol`, p.protocol, supportedPortProtocols));
  });
}
