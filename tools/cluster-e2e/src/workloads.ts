/** A shell loop that ends promptly on SIGTERM even as PID 1 (which ignores signals it has no trap for). */
export const sleepForever = "trap 'exit 0' TERM; while true; do sleep 1; done";

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
