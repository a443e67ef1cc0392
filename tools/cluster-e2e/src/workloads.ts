import type { RuntimeService } from '@kubelet-ts/cri-client';
/** A shell loop that ends promptly on SIGTERM even as PID 1 (which ignores signals it has no trap for). */
export const sleepForever = "trap 'exit 0' TERM; while true; do sleep 1; done";

/** A shell that holds `bytes` of memory (a command substitution keeps the whole output) and then sleeps. */
export const memoryHog = (bytes: number) => ({ command: ['sh', '-c', `x=$(head -c ${bytes} /dev/zero | tr '\\0' a); echo held; ${sleepForever}`] });

/**
 * A pod bound to a node (spec.nodeName: no scheduler, admission is the kubelet's alone) with one container `app`
 * of `image` (IfNotPresent), `container` merged into it and `extra` into the spec; 2 s grace period.
 */
export function boundPod(where: { name: string; namespace: string; node: string; image: string }, container: Json, extra: Json = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: where.name, namespace: where.namespace },
    spec: {
      nodeName: where.node,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'app', image: where.image, imagePullPolicy: 'IfNotPresent', ...container }],
      ...extra,
    },
  };
}

export interface DeploymentOptions {
  name: string;
  namespace: string;
  replicas: number;
  image: string;
  terminationGracePeriodSeconds?: number;
  /** Pin the pods to one node (the bench runs one kubelet at a time; the e2e node is the only one). */
  nodeName?: string;
}

/**
 * A Deployment of busybox httpd pods serving on 8080, Ready once an HTTP readiness probe on the pod IP answers.
 * httpd runs under a shell that exits on SIGTERM (a PID 1 without a handler ignores it), so scale-downs take no
 * longer than the kubelet needs.
 */
export function httpDeployment(options: DeploymentOptions): Record<string, unknown> {
  const labels = { app: options.name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: options.name, namespace: options.namespace },
    spec: {
      replicas: options.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: options.terminationGracePeriodSeconds ?? 30,
          ...(options.nodeName ? { nodeSelector: { 'kubernetes.io/hostname': options.nodeName } } : {}),
          containers: [
            {
              name: 'httpd',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', "mkdir -p /www && echo ok > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"],
              ports: [{ containerPort: 8080, name: 'http' }],
              readinessProbe: { httpGet: { path: '/index.html', port: 8080 }, periodSeconds: 1 },
            },
          ],
        },
      },
    },
  };
}

/**
 * A pod whose liveness probe fails once: the first container removes its health file after 3 s; a restarted one
 * (which finds the marker the first left in the pod's shared /dev/shm) stays healthy. So restartCount ends at 1.
 */
export function livenessOncePod(name: string, namespace: string, image: string): Record<string, unknown> {
  const script = `touch /tmp/healthy; if [ ! -f /dev/shm/started-once ]; then touch /dev/shm/started-once; sleep 3; rm /tmp/healthy; fi; ${sleepForever}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'app',
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', script],
          livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 1 },
        },
      ],
    },
  };
}

export function staticPod(name: string, image: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { role: 'static' } },
    spec: { terminationGracePeriodSeconds: 5, containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }] },
  };
}

type Json = Record<string, any>;

export const condition = (obj: Json | undefined, type: string): Json | undefined => obj?.status?.conditions?.find((c: Json) => c.type === type);

export const isPodReady = (pod: Json | undefined): boolean => condition(pod, 'Ready')?.status === 'True';

/** The status of a pod's container (an init container too) by name, from the pod as the API server has it. */
export const containerStatus = (pod: Json | undefined, name: string): Json | undefined =>
  [...(pod?.status?.containerStatuses ?? []), ...(pod?.status?.initContainerStatuses ?? [])].find((c: Json) => c.name === name);

/**
 * A container's output of `cmd` run through CRI ExecSync (straight at the runtime, not through the kubelet); a failure
 * comes back as a string that names it, so an assertion on the output shows why.
 */
export async function execThroughCri(runtime: Pick<RuntimeService, 'execSync'>, pod: Json, cmd: string[], container: string, timeoutSeconds: number): Promise<string> {
  const id = containerStatus(pod, container)?.containerID as string | undefined;
  if (!id) return `<no container ${container} in ${pod.metadata.name}>`;
  const result = await runtime.execSync(id.replace(/^containerd:\/\//, ''), cmd, timeoutSeconds);
  if (result.exitCode === 0) return result.stdout.toString('utf8');
  return `<${cmd.join(' ')} exited ${result.exitCode}: ${result.stderr.toString('utf8').trim()}>`;
}

/** A pod that prints what the kubelet gave its container (environment, resolver and hosts files), then exits. */
export function printEnvironmentPod(name: string, namespace: string, image: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      restartPolicy: 'Never',
      hostAliases: [{ ip: '192.0.2.7', hostnames: ['printer.example'] }],
      containers: [
        {
          name: 'app',
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', 'env | sort; echo ---resolv.conf; cat /etc/resolv.conf; echo ---hosts; cat /etc/hosts; echo ---hostname; hostname'],
          env: [{ name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }],
        },
      ],
    },
  };
}

/** A pod whose readiness probe passes only after `delaySeconds`: Running but not Ready until then. */
export function lateReadinessPod(name: string, namespace: string, image: string, delaySeconds: number): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'app',
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', `sleep ${delaySeconds}; touch /tmp/ready; ${sleepForever}`],
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
        },
      ],
    },
  };
}

/** A pod whose container ignores SIGTERM, so stopping it takes its whole grace period. */
export function stubbornPod(name: string, namespace: string, image: string, graceSeconds: number): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      terminationGracePeriodSeconds: graceSeconds,
      containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', "trap '' TERM; while true; do sleep 1; done"] }],
    },
  };
}
