import { setTimeout as sleep } from 'node:timers/promises';
import { httpDeployment, isPodReady, type Kubectl, type KubeObject } from '@kubelet-ts/cluster-e2e';

export interface ChurnOptions {
  /** For the user's actions (apply, scale, patch), as a user makes them. */
  kubectl: Kubectl;
  /** For the frequent reads: a GET on the API server (ChaosNode.get), undefined for 404. */
  get: (path: string) => Promise<KubeObject | undefined>;
  namespace: string;
  /** The node the Deployment's pods are pinned to. */
  node: string;
  image: string;
  /** The top of each cycle (the 0 -> 30 -> 0). */
  maxReplicas: number;
  /** How long one step (scale up, roll, scale down) may take before the loop moves on anyway. */
  stepTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface ChurnStats {
  cycles: number;
  steps: number;
  /** Steps that did not complete in time (the fault held them up); the loop went on. */
  stepsTimedOut: number;
  /** kubectl calls that failed (the API server down, for instance) and were retried. */
  kubectlErrors: number;
  /** Every pod uid the Deployment made on the node. */
  podsSeen: Set<string>;
}

export const CHURN_DEPLOYMENT = 'churn';


/**
 * Pod churn, as the issue has it: a Deployment on the node scaled 0 -> max (rolled once at the top: a new template,
 * so every pod is replaced) -> 0, in a loop, until stop(). kubectl errors (an API server that is down) are counted
 * and retried; a step that does not finish in time is counted and the loop goes on, so churn keeps running through a
 * fault. stop() ends the loop after its current step and leaves the Deployment as it is; settle() then scales it to
 * a fixed size and waits for the node to run exactly that.
 */
export class Churn {
  readonly stats: ChurnStats = { cycles: 0, steps: 0, stepsTimedOut: 0, kubectlErrors: 0, podsSeen: new Set() };
  private stopping = false;
  private loop?: Promise<void>;
  private revision = 0;

  constructor(private readonly options: ChurnOptions) {}

  get stepTimeoutMs(): number {
    return this.options.stepTimeoutMs ?? 180_000;
  }

  /** Creates the Deployment at 0 replicas and, unless `loop` is false, starts the loop. */
  async start(options: { loop?: boolean } = {}): Promise<void> {
    const { kubectl, namespace, node, image } = this.options;
    await this.retry(() =>
      kubectl.apply(httpDeployment({ name: CHURN_DEPLOYMENT, namespace, replicas: 0, image, nodeName: node, terminationGracePeriodSeconds: 5 })),
    );
    if (options.loop !== false) this.resume();
  }

  /** Starts (again) the loop, from the Deployment's current size. */
  resume(): void {
    this.stopping = false;
    this.loop = this.run();
  }

  /** Ends the loop: the current step is left within a few seconds, finished or not. */
  async stop(): Promise<ChurnStats> {
    this.stopping = true;
    await this.loop;
    return this.stats;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      await this.step('scale up', () => this.scale(this.options.maxReplicas), () => this.ready(this.options.maxReplicas));
      if (this.stopping) break;
      await this.step('roll', () => this.roll(), () => this.rolledOut(this.options.maxReplicas));
      if (this.stopping) break;
      await this.step('scale down', () => this.scale(0), () => this.ready(0));
      this.stats.cycles++;
    }
  }

  private async step(name: string, act: () => Promise<unknown>, done: () => Promise<boolean>): Promise<void> {
    const started = Date.now();
    await this.retry(act);
    this.stats.steps++;
    for (;;) {
      if (await done().catch(() => false)) {
        this.options.log?.(`churn: ${name} done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        return;
      }
      if (Date.now() - started > this.stepTimeoutMs) {
        this.stats.stepsTimedOut++;
        this.options.log?.(`churn: ${name} not done after ${this.stepTimeoutMs / 1000} s; going on`);
        return;
      }
      if (this.stopping && Date.now() - started > 2000) return;
      await sleep(1000);
    }
  }

  /** Scales to `replicas` and waits until the node runs exactly that many Ready pods of the Deployment and no other. */
  async settle(replicas: number, timeoutMs = 240_000): Promise<number> {
    const started = Date.now();
    await this.retry(() => this.scale(replicas));
    for (;;) {
      if (await this.rolledOut(replicas).catch(() => false)) return Date.now() - started;
      if (Date.now() - started > timeoutMs) {
        const pods = await this.pods().catch(() => []);
        throw new Error(
          `the churn Deployment did not settle at ${replicas} Ready pods within ${timeoutMs / 1000} s: ` +
            pods.map((pod) => `${pod.metadata.name} ${pod.status?.phase}${isPodReady(pod) ? ' Ready' : ''}${pod.metadata.deletionTimestamp ? ' deleting' : ''}`).join(', '),
        );
      }
      await sleep(1000);
    }
  }

  async pods(): Promise<KubeObject[]> {
    const pods = ((await this.options.get(`/api/v1/namespaces/${this.options.namespace}/pods?labelSelector=app%3D${CHURN_DEPLOYMENT}`))?.items ?? []) as KubeObject[];
    for (const pod of pods) this.stats.podsSeen.add(pod.metadata.uid);
    return pods;
  }

  private scale(replicas: number): Promise<string> {
    return this.options.kubectl.run(['scale', '-n', this.options.namespace, `deployment/${CHURN_DEPLOYMENT}`, `--replicas=${replicas}`]);
  }

  private roll(): Promise<string> {
    this.revision++;
    const patch = { spec: { template: { metadata: { annotations: { 'chaos.kubelet-ts.io/revision': `${Date.now()}-${this.revision}` } } } } };
    return this.options.kubectl.run(['patch', '-n', this.options.namespace, `deployment/${CHURN_DEPLOYMENT}`, '-p', JSON.stringify(patch)]);
  }

  /** `replicas` pods Ready and none other (none terminating). */
  private async ready(replicas: number): Promise<boolean> {
    const pods = await this.pods();
    return pods.length === replicas && pods.every((pod) => isPodReady(pod) && !pod.metadata.deletionTimestamp);
  }

  /** The Deployment's controller saw its latest generation and every pod is of it, Ready. */
  private async rolledOut(replicas: number): Promise<boolean> {
    const deployment = await this.options.get(`/apis/apps/v1/namespaces/${this.options.namespace}/deployments/${CHURN_DEPLOYMENT}`);
    if (!deployment) return false;
    const status = deployment.status ?? {};
    const current =
      (status.observedGeneration ?? 0) >= deployment.metadata.generation &&
      (status.updatedReplicas ?? 0) === replicas &&
      (status.readyReplicas ?? 0) === replicas &&
      (status.replicas ?? 0) === replicas;
    return current && (await this.ready(replicas));
  }

  private async retry<T>(action: () => Promise<T>): Promise<T> {
    let delay = 500;
    for (;;) {
      try {
        return await action();
      } catch (error) {
        this.stats.kubectlErrors++;
        this.options.log?.(`churn: ${(error as Error).message.split('\n')[0]}; retrying in ${delay} ms`);
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }
}
