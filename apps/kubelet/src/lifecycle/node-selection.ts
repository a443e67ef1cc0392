// Whether a pod may run on this node by its nodeSelector, required node affinity and the node's taints
// (Go v1.20: scheduler/framework/plugins/helper PodMatchesNodeSelectorAndAffinityTerms,
// v1helper.MatchNodeSelectorTerms / NodeSelectorRequirementsAsSelector / ...AsFieldSelector, the
// label selector's Requirement; component-helpers FindMatchingUntoleratedTaint, Toleration.ToleratesTaint).
import type { V1Node, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { qualifiedNameErrors } from '@kubelet-ts/node-status';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** validation.IsValidLabelValue. */
export function isValidLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

/** strconv.ParseInt(s, 10, 64), undefined when it fails. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const v = BigInt(s);
  return v < -(2n ** 63n) || v > 2n ** 63n - 1n ? undefined : v;
}

type LabelMatcher = (labels: Readonly<Record<string, string>>) => boolean;

/**
 * labels.NewRequirement for a node selector requirement, as a matcher; undefined when Go would return
 * an error (bad operator, key or values), which makes the whole term not match.
 */
function labelRequirement(req: V1NodeSelectorRequirement): LabelMatcher | undefined {
  const key = req.key;
  const values = req.values ?? [];
  if (qualifiedNameErrors(key).length > 0) return undefined;
  switch (req.operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) return undefined;
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length !== 0) return undefined;
      break;
    case 'Gt':
    case 'Lt':
      if (values.length !== 1 || parseInt64(values[0]) === undefined) return undefined;
      break;
    default:
      return undefined;
  }
  if (!values.every(isValidLabelValue)) return undefined;
  const has = (labels: Readonly<Record<string, string>>): boolean => Object.prototype.hasOwnProperty.call(labels, key);
  switch (req.operator) {
    case 'In':
      return (labels) => has(labels) && values.includes(labels[key]);
    case 'NotIn':
      return (labels) => !has(labels) || !values.includes(labels[key]);
    case 'Exists':
      return (labels) => has(labels);
    case 'DoesNotExist':
      return (labels) => !has(labels);
    default: {
      const bound = parseInt64(values[0]) as bigint;
      const gt = req.operator === 'Gt';
      return (labels) => {
        if (!has(labels)) return false;
        const v = parseInt64(labels[key]);
        if (v === undefined) return false;
        return gt ? v > bound : v < bound;
      };
    }
  }
}

/** NodeSelectorRequirementsAsFieldSelector: only In / NotIn with exactly one value. */
function fieldRequirement(req: V1NodeSelectorRequirement): LabelMatcher | undefined {
  const values = req.values ?? [];
  if ((req.operator !== 'In' && req.operator !== 'NotIn') || values.length !== 1) return undefined;
  const [value] = values;
  return req.operator === 'In' ? (fields) => (fields[req.key] ?? '') === value : (fields) => (fields[req.key] ?? '') !== value;
}

function allMatch(reqs: readonly V1NodeSelectorRequirement[], build: (r: V1NodeSelectorRequirement) => LabelMatcher | undefined, set: Readonly<Record<string, string>>): boolean {
  for (const r of reqs) {
    const m = build(r);
    if (!m || !m(set)) return false;
  }
  return true;
}

/**
 * v1helper.MatchNodeSelectorTerms: the terms are ORed; an empty term, or one with an invalid
 * requirement, matches nothing.
 */
export function matchNodeSelectorTerms(
  terms: readonly V1NodeSelectorTerm[],
  nodeLabels: Readonly<Record<string, string>>,
  nodeFields: Readonly<Record<string, string>>,
): boolean {
  for (const term of terms) {
    const exprs = term.matchExpressions ?? [];
    const fields = term.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) continue;
    if (exprs.length > 0 && !allMatch(exprs, labelRequirement, nodeLabels)) continue;
    if (fields.length > 0 && !allMatch(fields, fieldRequirement, nodeFields)) continue;
    return true;
  }
  return false;
}

/**
 * pluginhelper.PodMatchesNodeSelectorAndAffinityTerms: every nodeSelector label equal on the node, and
 * the requiredDuringSchedulingIgnoredDuringExecution terms (when set) matching the node's labels and
 * its metadata.name field. Preferred terms play no part.
 */
export function podMatchesNodeSelectorAndAffinityTerms(pod: V1Pod, node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (!Object.prototype.hasOwnProperty.call(labels, key) || labels[key] !== value) return false;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return matchNodeSelectorTerms(required.nodeSelectorTerms ?? [], labels, { 'metadata.name': node.metadata?.name ?? '' });
}

/** v1.Toleration.ToleratesTaint: effect and key match when set; Equal (or empty) compares values, Exists does not. */
export function toleratesTaint(toleration: V1Toleration, taint: V1Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? '') {
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** corev1.FindMatchingUntoleratedTaint: the first taint passing the filter that no toleration tolerates. */
export function findMatchingUntoleratedTaint(
  taints: readonly V1Taint[],
  tolerations: readonly V1Toleration[],
  filter: (taint: V1Taint) => boolean = () => true,
): V1Taint | undefined {
  return taints.find((taint) => filter(taint) && !tolerations.some((t) => toleratesTaint(t, taint)));
}
