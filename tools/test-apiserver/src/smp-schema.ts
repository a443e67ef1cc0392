/**
 * The strategic-merge-patch metadata (Go struct tags `patchStrategy`/`patchMergeKey` in k8s.io/api)
 * for the fields of the kinds this server serves. A list field without an entry here is atomic: a
 * strategic merge patch replaces it whole, exactly as kube-apiserver does (for example
 * `status.containerStatuses`, which is `+listType=atomic` with no patch strategy upstream).
 */

export interface SmpField {
  /** Lists of objects merged by this key (patchStrategy=merge, patchMergeKey=<key>). */
  mergeKey?: string;
  /** Lists of scalars merged as a set (patchStrategy=merge on []string). */
  primitiveMerge?: boolean;
  /** patchStrategy includes retainKeys (honoured when the patch carries `$retainKeys`). */
  retainKeys?: boolean;
  /** Schema of the nested map, or of each list element. */
  fields?: SmpSchema;
}

export type SmpSchema = Record<string, SmpField>;

const objectMeta: SmpSchema = {
  ownerReferences: { mergeKey: 'uid' },
  finalizers: { primitiveMerge: true },
};

const container: SmpSchema = {
  ports: { mergeKey: 'containerPort' },
  env: { mergeKey: 'name' },
  volumeMounts: { mergeKey: 'mountPath' },
  volumeDevices: { mergeKey: 'devicePath' },
};

const podSpec: SmpSchema = {
  volumes: { mergeKey: 'name', retainKeys: true },
  initContainers: { mergeKey: 'name', fields: container },
  containers: { mergeKey: 'name', fields: container },
  ephemeralContainers: { mergeKey: 'name', fields: container },
  imagePullSecrets: { mergeKey: 'name' },
  hostAliases: { mergeKey: 'ip' },
  topologySpreadConstraints: { mergeKey: 'topologyKey' },
  schedulingGates: { mergeKey: 'name' },
  resourceClaims: { mergeKey: 'name', retainKeys: true },
};

const podStatus: SmpSchema = {
  conditions: { mergeKey: 'type' },
  podIPs: { mergeKey: 'ip' },
  hostIPs: { mergeKey: 'ip' },
  resourceClaimStatuses: { mergeKey: 'name', retainKeys: true },
};

export const podSchema: SmpSchema = {
  metadata: { fields: objectMeta },
  spec: { fields: podSpec },
  status: { fields: podStatus },
};

export const nodeSchema: SmpSchema = {
  metadata: { fields: objectMeta },
  spec: { fields: { podCIDRs: { primitiveMerge: true } } },
  status: {
    fields: {
      conditions: { mergeKey: 'type' },
      addresses: { mergeKey: 'type' },
    },
  },
};

export const serviceSchema: SmpSchema = {
  metadata: { fields: objectMeta },
  spec: { fields: { ports: { mergeKey: 'port' } } },
  status: { fields: { conditions: { mergeKey: 'type' } } },
};

export const namespaceSchema: SmpSchema = {
  metadata: { fields: objectMeta },
  status: { fields: { conditions: { mergeKey: 'type' } } },
};

/** Kinds with nothing but ObjectMeta strategy (configmaps, secrets, leases, events). */
export const metaOnlySchema: SmpSchema = {
  metadata: { fields: objectMeta },
};

/** ServiceAccount: `secrets` is patchStrategy=merge, patchMergeKey=name (imagePullSecrets is atomic). */
export const serviceAccountSchema: SmpSchema = {
  metadata: { fields: objectMeta },
  secrets: { mergeKey: 'name' },
};
