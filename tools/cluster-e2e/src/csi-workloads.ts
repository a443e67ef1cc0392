// The objects and the driver process of the CSI e2e suite (test/csi.test.ts) and benchmark (bench/csi.bench.ts):
// tools/csi-driver/csi-driver.mjs as a separate node process next to the kubelet, its JSON-lines call log, and
// static PersistentVolumes with a `csi` source, their claims and CSIDriver objects, as plain JSON as kubectl sends them.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './cluster.js';

type Json = Record<string, any>;

/** The label every PV the CSI suite or bench makes carries, so that their teardown finds them all. */
export const CSI_E2E_LABEL = 'kubelet-ts.io/csi-e2e';

export interface CsiDriverOptions {
  name: string;
  nodeId: string;
  /** The kubelet's --root-dir. */
  kubeletDir: string;
  /** Where the driver keeps volume data, and its call log (`<name>.jsonl`) and output (`<name>.out`) beside it. */
  dir: string;
  /** Runs the driver's external-attacher stand-in with this kubeconfig. */
  kubeconfig?: string;
  /** `key=value` topology segments. */
  topology?: string[];
  noStage?: boolean;
  extraArgs?: string[];
}

/** One line of the driver's call log (tools/csi-driver/README.md, "The call log"). */
export interface CsiCall {
  ts: string;
  method: string;
  volumeId?: string;
  stagingTargetPath?: string;
  targetPath?: string;
  volumePath?: string;
  volumeContext?: Record<string, string>;
  publishContext?: Record<string, string>;
  readonly?: boolean;
  capability?: { accessType?: 'mount' | 'block'; fsType?: string; mountFlags?: string[]; accessMode?: string };
  durationMs?: number;
  error?: string;
  [key: string]: unknown;
}

/** The CSI driver of tools/csi-driver running as its own process. */
export class CsiDriverProcess {
  readonly exited: Promise<number | null>;
  private running = true;

  private constructor(
    readonly options: CsiDriverOptions,
    private readonly child: ChildProcess,
    readonly logFile: string,
    readonly outFile: string,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.running = false;
        resolve(code);
      }),
    );
  }

  static start(options: CsiDriverOptions): CsiDriverProcess {
    const dataDir = join(options.dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    const logFile = join(options.dir, `${options.name}.jsonl`);
    const outFile = join(options.dir, `${options.name}.out`);
    const args = [
      join(repoRoot, 'tools/csi-driver/csi-driver.mjs'),
      `--name=${options.name}`,
      `--node-id=${options.nodeId}`,
      `--kubelet-dir=${options.kubeletDir}`,
      `--data-dir=${dataDir}`,
      `--log=${logFile}`,
      ...(options.kubeconfig ? [`--kubeconfig=${options.kubeconfig}`] : []),
      ...(options.noStage ? ['--no-stage'] : []),
      ...(options.topology ?? []).map((kv) => `--topology=${kv}`),
      ...(options.extraArgs ?? []),
    ];
    const fd = openSync(outFile, 'a');
    writeFileSync(fd, `---- ${new Date().toISOString()} node ${args.join(' ')}\n`);
    const child = spawn(process.execPath, args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    return new CsiDriverProcess(options, child, logFile, outFile);
  }

  get name(): string {
    return this.options.name;
  }

  get alive(): boolean {
    return this.running;
  }

  get dataDir(): string {
    return join(this.options.dir, 'data');
  }

  /** The sockets the driver serves: its CSI endpoint and its registration socket for the plugin watcher. */
  get sockets(): { csi: string; registration: string } {
    return {
      csi: join(this.options.kubeletDir, 'plugins', this.name, 'csi.sock'),
      registration: join(this.options.kubeletDir, 'plugins_registry', `${this.name}-reg.sock`),
    };
  }

  /** Every call logged so far (by this run and earlier runs of the same name), in completion order. */
  calls(): CsiCall[] {
    return readCalls(this.logFile);
  }

  /** SIGTERM (the driver removes its registration socket, so the kubelet deregisters it), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The last lines of the driver's output, for failure messages. */
  tail(lines = 15): string {
    let out = '';
    try {
      out = readFileSync(this.outFile, 'utf8');
    } catch {
      // not started yet
    }
    return `---- ${this.name} (${this.running ? 'running' : 'exited'}), last lines of ${this.outFile}:\n${out.split('\n').slice(-lines).join('\n')}`;
  }
}

export function readCalls(file: string): CsiCall[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as CsiCall)
    .map((call) => ({ ...call, method: call.method.split('/').pop()! }));
}

/** Go's handle of an inline CSI volume (pkg/volume/csi makeVolumeHandle): `csi-` + sha256(pod UID + volume name). */
export function inlineVolumeHandle(podUid: string, volumeName: string): string {
  return `csi-${createHash('sha256').update(`${podUid}${volumeName}`).digest('hex')}`;
}

/** Go's VolumeAttachment name (pkg/volume/csi getAttachmentName): `csi-` + sha256(handle + driver + node). */
export function attachmentName(volumeHandle: string, driver: string, node: string): string {
  return `csi-${createHash('sha256').update(`${volumeHandle}${driver}${node}`).digest('hex')}`;
}

/** The name the kubelet reports in node.status.volumesInUse/volumesAttached for a CSI volume. */
export const csiUniqueVolumeName = (driver: string, volumeHandle: string) => `kubernetes.io/csi/${driver}^${volumeHandle}`;

export interface CsiDriverObjectOptions {
  attachRequired: boolean;
  podInfoOnMount: boolean;
  volumeLifecycleModes?: Array<'Persistent' | 'Ephemeral'>;
}

export function csiDriverObject(name: string, options: CsiDriverObjectOptions): Json {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: { name, labels: { [CSI_E2E_LABEL]: 'true' } },
    spec: { attachRequired: options.attachRequired, podInfoOnMount: options.podInfoOnMount, volumeLifecycleModes: options.volumeLifecycleModes ?? ['Persistent'] },
  };
}

export interface CsiPvOptions {
  name: string;
  driver: string;
  volumeHandle: string;
  volumeMode?: 'Filesystem' | 'Block';
  volumeAttributes?: Record<string, string>;
  /** Pre-bind the PV to this claim (namespace/name), as for a generic ephemeral volume's `<pod>-<volume>` claim. */
  claimRef?: { namespace: string; name: string };
  storage?: string;
}

/** A static PersistentVolume with a `csi` source (Retain: the suite deletes it), no storage class. */
export function csiPersistentVolume(options: CsiPvOptions): Json {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: options.name, labels: { [CSI_E2E_LABEL]: 'true' } },
    spec: {
      capacity: { storage: options.storage ?? '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: '',
      volumeMode: options.volumeMode ?? 'Filesystem',
      csi: {
        driver: options.driver,
        volumeHandle: options.volumeHandle,
        ...(options.volumeMode === 'Block' ? {} : { fsType: 'ext4' }),
        ...(options.volumeAttributes ? { volumeAttributes: options.volumeAttributes } : {}),
      },
      ...(options.claimRef ? { claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...options.claimRef } } : {}),
    },
  };
}

/** A claim bound to one PV by name (the PV controller binds it; there is no provisioner). */
export function csiClaim(name: string, namespace: string, volumeName: string, volumeMode: 'Filesystem' | 'Block' = 'Filesystem', storage = '1Gi'): Json {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName, volumeMode, resources: { requests: { storage } } },
  };
}

/** A PV's usual path on the host while mounted for a pod (Go's pkg/volume/csi layout). */
export const csiPaths = (kubeletDir: string) => ({
  /** The staging (global mount) path of a filesystem PV. */
  globalMount: (pv: string) => join(kubeletDir, 'plugins/kubernetes.io/csi/pv', pv, 'globalmount'),
  /** Where a pod's filesystem volume is published. */
  podMount: (podUid: string, volume: string) => join(kubeletDir, 'pods', podUid, 'volumes/kubernetes.io~csi', volume, 'mount'),
  /** The staging path of a block PV. */
  blockStaging: (pv: string) => join(kubeletDir, 'plugins/kubernetes.io/csi/volumeDevices/staging', pv),
  /** Where a pod's block volume is published. */
  blockPublish: (pv: string, podUid: string) => join(kubeletDir, 'plugins/kubernetes.io/csi/volumeDevices/publish', pv, podUid),
});
