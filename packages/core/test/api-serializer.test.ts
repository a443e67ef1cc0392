import t from 'tap';
import { readFileSync } from 'node:fs';
// Tests compare against client-node's own serializer; the package itself never loads it.
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { deserializeApiObject, serializeApiObject } from '../src/api-serializer.js';
import { deepEqual } from '../src/json.js';
import { renderApiModels } from '../scripts/api-models.js';

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web',
    namespace: 'default',
    uid: '4b6e2d3c-1111-2222-3333-444455556666',
    creationTimestamp: '2026-11-27T10:00:00Z',
    deletionTimestamp: '2026-11-27T10:05:00Z',
    deletionGracePeriodSeconds: 30,
    labels: { app: 'web' },
    annotations: { 'kubernetes.io/config.source': 'file' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u1', controller: true }],
    managedFields: [{ manager: 'kubectl', operation: 'Update', time: '2026-11-27T10:00:01Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }],
    unknownMetaField: 'dropped',
  },
  spec: {
    nodeName: 'node-1',
    containers: [
      {
        name: 'app',
        image: 'busybox',
        command: ['sh', '-c', 'sleep 1000'],
        ports: [{ containerPort: 80, protocol: 'TCP' }],
        resources: { limits: { cpu: '100m', memory: '64Mi' } },
        livenessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 10 },
        readinessProbe: { tcpSocket: { port: 8080 } },
        env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      },
    ],
    volumes: [{ name: 'data', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }, { name: 'cfg', configMap: { name: 'c', items: [{ key: 'k', path: 'p' }] } }],
    tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 300 }],
    notAField: { nested: true },
  },
  status: {
    phase: 'Running',
    startTime: '2026-11-27T10:00:02Z',
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-27T10:00:03Z', lastProbeTime: null }],
    containerStatuses: [
      {
        name: 'app',
        ready: true,
        restartCount: 1,
        image: 'busybox',
        imageID: 'sha256:1',
        containerID: 'containerd://1',
        state: { running: { startedAt: '2026-11-27T10:00:04Z' } },
        lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: '2026-11-27T09:59:00Z', finishedAt: '2026-11-27T09:59:30Z' } },
      },
    ],
    podIPs: [{ ip: '10.88.0.2' }],
  },
};

const node = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'node-1', labels: { 'kubernetes.io/hostname': 'node-1' }, creationTimestamp: '2026-11-27T10:00:00Z' },
  spec: { taints: [{ key: 'k', effect: 'NoSchedule', timeAdded: '2026-11-27T10:00:00Z' }], podCIDR: '10.88.0.0/24' },
  status: {
    capacity: { cpu: '2', memory: '24Gi', pods: '110' },
    conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2026-11-27T10:00:00Z', lastTransitionTime: '2026-11-27T10:00:00Z', reason: 'KubeletReady' }],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    images: [{ names: ['busybox'], sizeBytes: 1234 }],
    nodeInfo: { kubeletVersion: 'v1.20.2', machineID: 'm' },
  },
};

const event = {
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name: 'web.1', namespace: 'default' },
  involvedObject: { kind: 'Pod', name: 'web', namespace: 'default', uid: 'u' },
  reason: 'Started',
  message: 'Started container app',
  firstTimestamp: '2026-11-27T10:00:00Z',
  lastTimestamp: '2026-11-27T10:00:01Z',
  eventTime: '2026-11-27T10:00:01.123456Z',
  series: { count: 2, lastObservedTime: '2026-11-27T10:00:01.123456Z' },
  count: 2,
  source: { component: 'kubelet', host: 'node-1' },
  type: 'Normal',
};

const lease = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'node-1', namespace: 'kube-node-lease' },
  spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40, renewTime: '2026-11-27T10:00:00.000001Z' },
};

const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'default' },
  spec: { clusterIP: '10.0.0.10', ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }], selector: { app: 'web' } },
};

const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data: { k: 'v' }, binaryData: { b: 'AAE=' }, immutable: true };
const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' }, type: 'Opaque', data: { k: 'dg==' }, stringData: { x: 'y' } };

const cases = [
  ['V1Pod', pod],
  ['V1Node', node],
  ['CoreV1Event', event],
  ['V1Lease', lease],
  ['V1Service', service],
  ['V1ConfigMap', configMap],
  ['V1Secret', secret],
] as const;

t.test('decodes and encodes as client-node ObjectSerializer does', async (t) => {
  for (const [type, wire] of cases) {
    const ours = deserializeApiObject(structuredClone(wire), type);
    const theirs = ObjectSerializer.deserialize(structuredClone(wire), type) as unknown;
    t.ok(deepEqual(ours, theirs), `${type}: deserialize gives client-node's model`, { ours, theirs });
    t.same(JSON.parse(JSON.stringify(serializeApiObject(ours, type))), JSON.parse(JSON.stringify(ObjectSerializer.serialize(theirs, type))), `${type}: serialize gives client-node's wire JSON`);
  }
  const decoded = deserializeApiObject(structuredClone(pod), 'V1Pod');
  t.ok(decoded.metadata?.creationTimestamp instanceof Date, 'metav1.Time becomes a Date');
  t.equal(decoded.status?.containerStatuses?.[0].state?.running?.startedAt?.toISOString(), '2026-11-27T10:00:04.000Z');
  t.notOk('unknownMetaField' in (decoded.metadata ?? {}), 'a field the model does not have is dropped');
  t.notOk('notAField' in (decoded.spec ?? {}));
  t.equal(deserializeApiObject(structuredClone(event), 'CoreV1Event').eventTime as unknown, '2026-11-27T10:00:01.123456Z', 'MicroTime stays text, as client-node keeps it');
  t.equal(deserializeApiObject(structuredClone(node), 'V1Node').status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250, 'wire field names are kept (Port)');
});

t.test('a nested type decodes on its own', async (t) => {
  const status = deserializeApiObject(structuredClone(pod.status), 'V1PodStatus') as { startTime?: Date };
  t.ok(status.startTime instanceof Date);
  t.same(serializeApiObject(status, 'V1PodStatus'), JSON.parse(JSON.stringify(ObjectSerializer.serialize(status, 'V1PodStatus'))));
});

t.test('null and undefined pass through; an unknown model is an error naming it', async (t) => {
  t.equal(deserializeApiObject(null, 'V1Pod'), null);
  t.equal(deserializeApiObject(undefined, 'V1Pod'), undefined);
  t.throws(() => deserializeApiObject({}, 'V1Deployment'), /no model "V1Deployment"/);
});

t.test('the committed model table matches the installed client-node', async (t) => {
  const committed = readFileSync(new URL('../src/api-models.generated.ts', import.meta.url), 'utf8');
  t.equal(committed, await renderApiModels(), 'regenerate with `npm run generate -w @kubelet-ts/core`');
});
