// The predicate admit handler (Go v1.20: pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler and
// GeneralPredicates): the scheduler's checks re-run on the node, since a pod can reach the kubelet
// without the scheduler (spec.nodeName set by hand, static pods) or the node can change after
// scheduling. Reasons and messages are Go v1.20.2's; the NoExecute taint check is Go v1.22+'s.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { errorText, isStaticPod, noopLogger, podRef, type Logger } from '@kubelet-ts/core';
import type { PodAdmitAttributes, PodAdmitHandler, PodAdmitResult } from './admission.js';
import { fits, isExtendedResourceName, NodeInfo, type ResourceListLike } from './node-info.js';
import { findMatchingUntoleratedTaint, podMatchesNodeSelectorAndAffinityTerms } from './node-selection.js';

export const InvalidNodeInfo = 'InvalidNodeInfo';
export const UnexpectedAdmissionError = 'UnexpectedAdmissionError';
export const UnexpectedPredicateFailureType = 'UnexpectedPredicateFailureType';
/** The prefix of the resource reasons: OutOfcpu, OutOfmemory, OutOfephemeral-storage, OutOfpods, OutOf<extended>. */
export const InsufficientResourcePrefix = 'OutOf';

/** The scheduler plugins' names and reasons the kubelet reports (Go v1.20). */
export const NodeAffinityPredicate = { name: 'NodeAffinity', reason: "node(s) didn't match node selector" } as const;
export const NodeNamePredicate = { name: 'NodeName', reason: "node(s) didn't match the requested hostname" } as const;
export const NodePortsPredicate = { name: 'NodePorts', reason: "node(s) didn't have free ports for the requested pod ports" } as const;
export const TaintTolerationPredicate = { name: 'TaintToleration', reason: "node(s) had taints that the pod didn't tolerate" } as const;

/** lifecycle.InsufficientResourceError. */
export class InsufficientResourceError {
  readonly kind = 'InsufficientResource';
  constructor(
    readonly resourceName: string,
    readonly requested: number,
    readonly used: number,
    readonly capacity: number,
  ) {}

  /** Error(): `Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000`. */
  get message(): string {
    return `Node didn't have enough resource: ${this.resourceName}, requested: ${this.requested}, used: ${this.used}, capacity: ${this.capacity}`;
  }

  /** GetReason(): `Insufficient cpu`. */
  get reason(): string {
    return `Insufficient ${this.resourceName}`;
  }
}

/** lifecycle.PredicateFailureError. */
export class PredicateFailureError {
  readonly kind = 'PredicateFailure';
  constructor(
    readonly predicateName: string,
    readonly predicateDesc: string,
  ) {}

  /** Error() as of Go v1.20: `Predicate NodeAffinity failed` (v1.28+ appends `: <desc>`). */
  get message(): string {
    return `Predicate ${this.predicateName} failed`;
  }

  get reason(): string {
    return this.predicateDesc;
  }
}

export type PredicateFailureReason = InsufficientResourceError | PredicateFailureError;

/**
 * Go's AdmissionFailureHandler: given the pod and why it does not fit, returns the reasons that still
 * stand (none admits the pod); throwing refuses it as UnexpectedAdmissionError. Go's kubelet passes its
 * critical pod handler, which evicts other pods to make room for a critical pod refused only for
 * resources. kubelet-ts has no preemption: the default returns the reasons unchanged, so critical pods
 * are refused like any other.
 */
export type AdmissionFailureHandler = (pod: V1Pod, reasons: PredicateFailureReason[]) => PredicateFailureReason[];

export interface GeneralPredicatesOptions {
  /** Refuse pods (other than static pods) that do not tolerate a NoExecute taint of the node. Default true. */
  checkNoExecuteTaints?: boolean;
}

/**
 * GeneralPredicates: resources (pods, cpu, memory, ephemeral-storage, scalar), node selector and
 * required node affinity, spec.nodeName, host ports, and (Go v1.22+) the node's NoExecute taints for
 * pods that are not static. Every failing check is returned in that order.
 */
export function generalPredicates(pod: V1Pod, nodeInfo: NodeInfo, opts: GeneralPredicatesOptions = {}): PredicateFailureReason[] {
  const reasons: PredicateFailureReason[] = [];
  for (const r of fits(pod, nodeInfo)) reasons.push(new InsufficientResourceError(r.resourceName, r.requested, r.used, r.capacity));
  const node = nodeInfo.node;
  if (!podMatchesNodeSelectorAndAffinityTerms(pod, node)) reasons.push(new PredicateFailureError(NodeAffinityPredicate.name, NodeAffinityPredicate.reason));
  const nodeName = pod.spec?.nodeName ?? '';
  if (nodeName !== '' && nodeName !== (node.metadata?.name ?? '')) reasons.push(new PredicateFailureError(NodeNamePredicate.name, NodeNamePredicate.reason));
  if (!fitsHostPorts(pod, nodeInfo)) reasons.push(new PredicateFailureError(NodePortsPredicate.name, NodePortsPredicate.reason));
  if ((opts.checkNoExecuteTaints ?? true) && !isStaticPod(pod)) {
    const untolerated = findMatchingUntoleratedTaint(node.spec?.taints ?? [], pod.spec?.tolerations ?? [], (t) => t.effect === 'NoExecute');
    if (untolerated) reasons.push(new PredicateFailureError(TaintTolerationPredicate.name, TaintTolerationPredicate.reason));
  }
  return reasons;
}

/** nodeports.Fits: no host port of the pod's containers is already taken by another pod. */
export function fitsHostPorts(pod: V1Pod, nodeInfo: NodeInfo): boolean {
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (nodeInfo.usedPorts.checkConflict(p.hostIP, p.protocol, p.hostPort)) return false;
  }
  return true;
}

/**
 * Drops the regular containers' requests for extended resources the node does not advertise
 * (cluster-level resources), as Go v1.20 does; init containers keep theirs.
 */
export function removeMissingExtendedResources(pod: V1Pod, nodeInfo: NodeInfo): V1Pod {
  const containers = pod.spec?.containers;
  if (!pod.spec || !containers) return pod;
  const keep = (requests: ResourceListLike): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [name, q] of Object.entries(requests ?? {})) {
      if (isExtendedResourceName(name) && !nodeInfo.allocatable.scalarResources.has(name)) continue;
      out[name] = q as string;
    }
    return out;
  };
  return {
    ...pod,
    spec: { ...pod.spec, containers: containers.map((c) => ({ ...c, resources: { ...c.resources, requests: keep(c.resources?.requests) } })) },
  };
}

export interface PredicateAdmitHandlerOptions {
  /**
   * The node as the kubelet knows it (Go: getNodeAnyWay: the informer's copy, else the node the kubelet
   * would register). undefined or a throw refuses every pod with InvalidNodeInfo.
   */
  getNode: () => V1Node | undefined;
  /** See AdmissionFailureHandler; default: no preemption. */
  admissionFailureHandler?: AdmissionFailureHandler;
  /** Default true, as Go v1.22+; false reproduces Go v1.20.2, which does not look at taints. */
  checkNoExecuteTaints?: boolean;
  /**
   * Go: pluginResourceUpdateFunc (the container manager's UpdatePluginResources): the devices already allocated per
   * resource; the node's allocatable of each is raised to at least that (sanitizeNodeAllocatable).
   */
  allocatedPluginResources?: () => Record<string, number>;
  logger?: Logger;
}

/** Go: lifecycle.NewPredicateAdmitHandler. */
export class PredicateAdmitHandler implements PodAdmitHandler {
  private readonly getNode: () => V1Node | undefined;
  private readonly admissionFailureHandler: AdmissionFailureHandler;
  private readonly checkNoExecuteTaints: boolean;
  private readonly allocatedPluginResources?: () => Record<string, number>;
  private readonly logger: Logger;

  constructor(opts: PredicateAdmitHandlerOptions) {
    this.getNode = opts.getNode;
    this.admissionFailureHandler = opts.admissionFailureHandler ?? ((_pod, reasons) => reasons);
    this.checkNoExecuteTaints = opts.checkNoExecuteTaints ?? true;
    this.allocatedPluginResources = opts.allocatedPluginResources;
    this.logger = opts.logger ?? noopLogger;
  }

  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    let node: V1Node | undefined;
    try {
      node = this.getNode();
    } catch (err) {
      this.logger.error('Cannot get Node info', err);
    }
    if (!node) {
      return { admit: false, reason: InvalidNodeInfo, message: 'Kubelet cannot get node info.' };
    }
    const pod = attrs.pod;
    let reasons: PredicateFailureReason[];
    try {
      const nodeInfo = new NodeInfo(node, attrs.otherPods);
      // Go: UpdatePluginResources -> sanitizeNodeAllocatable.
      for (const [resource, allocated] of Object.entries(this.allocatedPluginResources?.() ?? {})) {
        if ((nodeInfo.allocatable.scalarResources.get(resource) ?? -1) < allocated) nodeInfo.allocatable.scalarResources.set(resource, allocated);
      }
      reasons = generalPredicates(removeMissingExtendedResources(pod, nodeInfo), nodeInfo, { checkNoExecuteTaints: this.checkNoExecuteTaints });
    } catch (err) {
      // A malformed quantity: the API server validates them, but a static pod may carry one.
      const message = `GeneralPredicates failed due to ${errorText(err)}, which is unexpected.`;
      this.logger.warn('Failed to admit pod', { pod: podRef(pod), message });
      return { admit: false, reason: UnexpectedAdmissionError, message };
    }
    if (reasons.length > 0) {
      try {
        reasons = this.admissionFailureHandler(pod, reasons);
      } catch (err) {
        const message = `Unexpected error while attempting to recover from admission failure: ${errorText(err)}`;
        this.logger.warn('Failed to admit pod', { pod: podRef(pod), message });
        return { admit: false, reason: UnexpectedAdmissionError, message };
      }
    }
    if (reasons.length === 0) return { admit: true };
    // Only the first failure is reported.
    const r = reasons[0];
    let reason: string;
    if (r instanceof PredicateFailureError) reason = r.predicateName;
    else if (r instanceof InsufficientResourceError) reason = `${InsufficientResourcePrefix}${r.resourceName}`;
    else {
      const message = `GeneralPredicates failed due to ${errorText(r)}, which is unexpected.`;
      this.logger.warn('Failed to admit pod', { pod: podRef(pod), message });
      return { admit: false, reason: UnexpectedPredicateFailureType, message };
    }
    const v = this.logger.v(2);
    if (v.enabled) v.info('Predicate failed on Pod', { pod: podRef(pod), err: r.message });
    return { admit: false, reason, message: r.message };
  }
}
