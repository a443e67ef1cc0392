#!/usr/bin/env node
// A small CSI driver (CSI spec v1) for trying the kubelet's CSI support over the real gRPC API, in the spirit of
// the upstream csi-driver-host-path: the Identity and Node services backed by directories, bind mounts and loop
// devices, registered with the kubelet through its plugin watcher (pluginregistration v1), plus an optional
// stand-in for the external-attacher sidecar that attaches VolumeAttachments through the API server.
//
//   node tools/csi-driver/csi-driver.mjs --name hostpath.csi.kubelet-ts.io --node-id <node> \
//     --kubelet-dir /var/lib/kubelet --data-dir /var/lib/csi-hostpath [--no-stage] [--kubeconfig FILE] [--log FILE]
//     [--topology key=value]... [--max-volumes N] [--fail Method=CODE[:count]]...
//
// See README.md for what each call does. Needs root (mount, losetup) and only the repo's node_modules.
import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { lstat, mkdir, open, readdir, rm, rmdir, stat, statfs, truncate, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const execFileP = promisify(execFile);
const { values } = parseArgs({
  options: {
    name: { type: 'string', default: 'hostpath.csi.kubelet-ts.io' },
    'node-id': { type: 'string' },
    'kubelet-dir': { type: 'string', default: '/var/lib/kubelet' },
    'data-dir': { type: 'string', default: '/var/lib/csi-hostpath' },
    'no-stage': { type: 'boolean', default: false },
    kubeconfig: { type: 'string' },
    log: { type: 'string' },
    topology: { type: 'string', multiple: true, default: [] },
    'max-volumes': { type: 'string', default: '0' },
    fail: { type: 'string', multiple: true, default: [] },
    'vendor-version': { type: 'string', default: '0.1.0' },
    'proto-dir': { type: 'string', default: fileURLToPath(new URL('../../packages/csi/proto/', import.meta.url)) },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log('usage: csi-driver.mjs --name NAME --node-id NODE [--kubelet-dir /var/lib/kubelet] [--data-dir DIR] [--no-stage]\n' +
    '  [--kubeconfig FILE] [--log FILE] [--topology key=value]... [--max-volumes N] [--fail Method=CODE[:count]]...');
  process.exit(0);
}
const driverName = values.name;
const nodeId = values['node-id'];
if (!nodeId) throw new Error('--node-id is required (the node name)');
const stage = !values['no-stage'];
const dataDir = resolve(values['data-dir']);
const kubeletDir = resolve(values['kubelet-dir']);
const csiSocket = join(kubeletDir, 'plugins', driverName, 'csi.sock');
const regSocket = join(kubeletDir, 'plugins_registry', `${driverName}-reg.sock`);
const maxVolumes = Number.parseInt(values['max-volumes'], 10);
if (!Number.isInteger(maxVolumes) || maxVolumes < 0) throw new Error(`--max-volumes must be a number, got ${values['max-volumes']}`);
const topology = Object.fromEntries(values.topology.map((kv) => {
  const i = kv.indexOf('=');
  if (i <= 0) throw new Error(`--topology takes key=value, got ${kv}`);
  return [kv.slice(0, i), kv.slice(i + 1)];
}));
// --fail Method=CODE[:count]: the next `count` calls of Method (all of them without a count) fail with CODE.
const failures = new Map(values.fail.map((spec) => {
  const m = /^(\w+)=([A-Z_]+)(?::(\d+))?$/.exec(spec);
  if (!m || grpc.status[m[2]] === undefined) throw new Error(`--fail takes Method=<gRPC code name>[:count], got ${spec}`);
  return [m[1], { code: m[2], left: m[3] === undefined ? Infinity : Number(m[3]) }];
}));

const say = (msg, kv = {}) => console.log(JSON.stringify({ ts: new Date().toISOString(), msg, ...kv }));
/** One JSON line per call, in completion order (written synchronously so a reader sees it at once). */
function record(entry) {
  const line = JSON.stringify({ ts: new Date().toISOString(), ...entry });
  console.log(line);
  if (values.log) appendFileSync(values.log, `${line}\n`);
}

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = grpc.status[code];
    this.details = message;
  }
}
const fail = (code, message) => { throw new RpcError(code, message); };
function injected(method) {
  const f = failures.get(method);
  if (!f || f.left <= 0) return undefined;
  f.left -= 1;
  return new RpcError(f.code, `injected failure of ${method} (--fail)`);
}

// ---- host helpers -------------------------------------------------------------------------------------------
async function run(cmd, args) {
  try {
    return (await execFileP(cmd, args)).stdout.trim();
  } catch (err) {
    throw new RpcError('INTERNAL', `${cmd} ${args.join(' ')} failed: ${String(err.stderr || err.message).trim()}`);
  }
}
const unescapeMount = (s) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(Number.parseInt(o, 8)));
/** /proc/self/mountinfo as {root, mountPoint, fsType}. */
function mounts() {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).map((line) => {
    const f = line.split(' ');
    const sep = f.indexOf('-');
    return { root: unescapeMount(f[3]), mountPoint: unescapeMount(f[4]), fsType: f[sep + 1] };
  });
}
/** Whether path is a mount point (its real path too, for a kubelet dir reached through a symlink). */
function isMounted(path) {
  const paths = new Set([resolve(path)]);
  try { paths.add(realpathSync(path)); } catch { /* not there */ }
  return mounts().some((m) => paths.has(m.mountPoint));
}
const exists = (path) => lstat(path).then(() => true, () => false);

/** Volume IDs become file names: anything but [A-Za-z0-9._-] turns into '_'. */
function safeId(volumeId) {
  const id = volumeId.replace(/[^A-Za-z0-9._-]/g, '_');
  if (id === '.' || id === '..') fail('INVALID_ARGUMENT', `volume ID ${volumeId} is not usable`);
  return id;
}
const volumeDir = (id) => join(dataDir, safeId(id));
const ephemeralDir = (id) => join(dataDir, 'ephemeral', safeId(id));
const imageFile = (id) => join(dataDir, `${safeId(id)}.img`);
const blockStagePath = (stagingPath, id) => join(stagingPath, safeId(id));

async function bindMount(source, target, readonly) {
  await run('mount', ['--bind', source, target]);
  if (readonly) await run('mount', ['-o', 'remount,bind,ro', target]);
}
async function unmountAll(target) {
  for (let i = 0; i < 8 && isMounted(target); i++) await run('umount', [target]);
  if (isMounted(target)) fail('INTERNAL', `${target} is still mounted`);
}
async function touch(file) {
  await mkdir(dirname(file), { recursive: true });
  await (await open(file, 'a')).close();
}

/** The loop device backing the volume's image file, if attached (`losetup -j`). */
async function findLoop(img) {
  if (!(await exists(img))) return undefined;
  const out = await run('losetup', ['-j', img]);
  return out ? out.split(':')[0] : undefined;
}
/** Creates the image file (volume_context `size` bytes, 16 MiB by default) and attaches it to a loop device. */
async function attachLoop(volumeId, volumeContext) {
  const img = imageFile(volumeId);
  const existing = await findLoop(img);
  if (existing) return existing;
  if (!(await exists(img))) {
    const size = Number(volumeContext?.size ?? 16 * 1024 * 1024);
    if (!Number.isSafeInteger(size) || size <= 0) fail('INVALID_ARGUMENT', `volume_context size ${volumeContext.size} is not a byte count`);
    await mkdir(dataDir, { recursive: true });
    await touch(img);
    await truncate(img, size);
  }
  return run('losetup', ['-f', '--show', img]);
}
/** Detaches the volume's loop device unless a bind mount of its node is still around (publish without staging). */
async function detachLoop(volumeId) {
  const loop = await findLoop(imageFile(volumeId));
  if (!loop) return;
  const root = `/${basename(loop)}`;
  if (mounts().some((m) => m.root === root && (m.fsType === 'devtmpfs' || m.fsType === 'tmpfs'))) return;
  await run('losetup', ['-d', loop]);
}

/** Bytes in use under dir, as du counts them (allocated blocks, hard links once). */
async function diskUsage(dir, seen = new Set()) {
  let total = 0;
  const st = await lstat(dir).catch(() => undefined);
  if (!st || seen.has(st.ino)) return 0;
  seen.add(st.ino);
  total += st.blocks * 512;
  if (st.isDirectory()) {
    for (const name of await readdir(dir).catch(() => [])) total += await diskUsage(join(dir, name), seen);
  }
  return total;
}

// Calls of one volume run one at a time, as the upstream driver's lock makes them.
const locks = new Map();
function withVolumeLock(volumeId, fn) {
  const prev = locks.get(volumeId) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => {});
  locks.set(volumeId, tail);
  tail.then(() => { if (locks.get(volumeId) === tail) locks.delete(volumeId); });
  return next;
}

function describeCapability(cap) {
  if (!cap) return undefined;
  const accessType = cap.accessType ?? (cap.block ? 'block' : cap.mount ? 'mount' : undefined);
  return { accessType, fsType: cap.mount?.fsType || undefined, mountFlags: cap.mount?.mountFlags?.length ? cap.mount.mountFlags : undefined, accessMode: cap.accessMode?.mode };
}
function requireFields(req, ...fields) {
  const names = { volumeId: 'Volume ID', targetPath: 'Target path', stagingTargetPath: 'Staging target path', volumeCapability: 'Volume capability', volumePath: 'Volume path' };
  for (const f of fields) if (!req[f]) fail('INVALID_ARGUMENT', `${names[f]} missing in request`);
}
const isBlock = (req) => describeCapability(req.volumeCapability)?.accessType === 'block';
// Inline ephemeral: the context says so (CSIDriver podInfoOnMount: true), or a publish without a staging path reaches a
// driver that stages (the kubelet stages every persistent volume of such a driver, and never an inline one).
const isEphemeral = (req) => req.volumeContext?.['csi.storage.k8s.io/ephemeral'] === 'true' || (stage && !req.stagingTargetPath);

/** A gRPC handler that logs the call, applies --fail and maps errors to gRPC status codes. */
function handler(method, fn, { logged = true } = {}) {
  return (call, callback) => {
    const req = call.request ?? {};
    const started = Date.now();
    const entry = {
      method,
      volumeId: req.volumeId || undefined,
      stagingTargetPath: req.stagingTargetPath || undefined,
      targetPath: req.targetPath || undefined,
      volumePath: req.volumePath || undefined,
      volumeContext: req.volumeContext && Object.keys(req.volumeContext).length ? req.volumeContext : undefined,
      publishContext: req.publishContext && Object.keys(req.publishContext).length ? req.publishContext : undefined,
      readonly: method === 'NodePublishVolume' ? req.readonly : undefined,
      capability: describeCapability(req.volumeCapability),
    };
    const work = async () => {
      const err = injected(method);
      if (err) throw err;
      return fn(req);
    };
    (req.volumeId ? withVolumeLock(req.volumeId, work) : work()).then(
      (res) => {
        if (logged) record({ ...entry, durationMs: Date.now() - started });
        callback(null, res ?? {});
      },
      (err) => {
        const rpc = err instanceof RpcError ? err : new RpcError('INTERNAL', err?.message ?? String(err));
        record({ ...entry, durationMs: Date.now() - started, error: `${grpc.status[rpc.code]}: ${rpc.details}` });
        callback(rpc);
      },
    );
  };
}

// ---- Identity ---------------------------------------------------------------------------------------------------
const identity = {
  GetPluginInfo: handler('GetPluginInfo', () => ({ name: driverName, vendorVersion: values['vendor-version'] })),
  // No CONTROLLER_SERVICE: the attacher stand-in below works on VolumeAttachments, not through a Controller service.
  GetPluginCapabilities: handler('GetPluginCapabilities', () => ({ capabilities: [] })),
  Probe: handler('Probe', () => ({ ready: { value: true } }), { logged: false }),
};

// ---- Node -------------------------------------------------------------------------------------------------------
const node = {
  NodeGetInfo: handler('NodeGetInfo', () => ({
    nodeId,
    maxVolumesPerNode: maxVolumes,
    accessibleTopology: Object.keys(topology).length ? { segments: topology } : undefined,
  })),
  NodeGetCapabilities: handler('NodeGetCapabilities', () => ({
    capabilities: [...(stage ? ['STAGE_UNSTAGE_VOLUME'] : []), 'GET_VOLUME_STATS', 'VOLUME_CONDITION'].map((type) => ({ rpc: { type } })),
  })),

  NodeStageVolume: handler('NodeStageVolume', async (req) => {
    requireFields(req, 'volumeId', 'stagingTargetPath', 'volumeCapability');
    if (!stage) fail('UNIMPLEMENTED', 'NodeStageVolume: the driver runs with --no-stage');
    const staging = resolve(req.stagingTargetPath);
    if (isBlock(req)) {
      const loop = await attachLoop(req.volumeId, req.volumeContext);
      const file = blockStagePath(staging, req.volumeId);
      if (isMounted(file)) return {};
      await touch(file);
      await bindMount(loop, file, false);
      return {};
    }
    if (isMounted(staging)) return {};
    const src = volumeDir(req.volumeId);
    await mkdir(src, { recursive: true });
    await mkdir(staging, { recursive: true });
    await bindMount(src, staging, false);
    return {};
  }),

  NodeUnstageVolume: handler('NodeUnstageVolume', async (req) => {
    requireFields(req, 'volumeId', 'stagingTargetPath');
    const staging = resolve(req.stagingTargetPath);
    const blockFile = blockStagePath(staging, req.volumeId);
    if (isMounted(blockFile)) await unmountAll(blockFile);
    await unlinkIfFile(blockFile);
    await unmountAll(staging);
    await rmdir(staging).catch((err) => {
      if (err.code === 'ENOTEMPTY') say('NodeUnstageVolume: staging directory not empty; left in place', { staging });
      else if (err.code !== 'ENOENT') throw err;
    });
    await detachLoop(req.volumeId);
    return {};
  }),

  NodePublishVolume: handler('NodePublishVolume', async (req) => {
    requireFields(req, 'volumeId', 'targetPath', 'volumeCapability');
    const target = resolve(req.targetPath);
    if (isBlock(req)) {
      if (req.volumeContext?.['csi.storage.k8s.io/ephemeral'] === 'true') fail('INVALID_ARGUMENT', 'ephemeral volumes cannot be block volumes');
      if (stage) requireFields(req, 'stagingTargetPath');
      let loop = await findLoop(imageFile(req.volumeId));
      if (!loop && stage) fail('FAILED_PRECONDITION', `volume ${req.volumeId} is not staged (no loop device for ${imageFile(req.volumeId)})`);
      loop ??= await attachLoop(req.volumeId, req.volumeContext);
      if (isMounted(target)) return {};
      if ((await lstat(target).catch(() => undefined))?.isDirectory()) {
        fail('INVALID_ARGUMENT', `target path ${target} is a directory: a block volume is published onto a file the driver creates (the CO makes only its parent)`);
      }
      await touch(target);
      await bindMount(loop, target, req.readonly);
      return {};
    }
    let src;
    if (isEphemeral(req)) {
      src = ephemeralDir(req.volumeId);
    } else if (stage) {
      src = resolve(req.stagingTargetPath);
      if (!isMounted(src)) fail('FAILED_PRECONDITION', `volume ${req.volumeId} is not staged at ${src}`);
    } else {
      src = volumeDir(req.volumeId);
    }
    if (isMounted(target)) return {};
    await mkdir(src, { recursive: true });
    await mkdir(target, { recursive: true });
    await bindMount(src, target, req.readonly);
    return {};
  }),

  NodeUnpublishVolume: handler('NodeUnpublishVolume', async (req) => {
    requireFields(req, 'volumeId', 'targetPath');
    const target = resolve(req.targetPath);
    await unmountAll(target);
    const st = await lstat(target).catch(() => undefined);
    if (st?.isDirectory()) await rmdir(target);
    else if (st) await unlink(target);
    const eph = ephemeralDir(req.volumeId);
    if (await exists(eph)) await rm(eph, { recursive: true, force: true });
    if (!stage) await detachLoop(req.volumeId);
    return {};
  }),

  NodeGetVolumeStats: handler('NodeGetVolumeStats', async (req) => {
    requireFields(req, 'volumeId', 'volumePath');
    const st = await stat(req.volumePath).catch(() => undefined);
    if (!st) fail('NOT_FOUND', `volume path ${req.volumePath} does not exist`);
    if (st.isBlockDevice()) {
      const img = await stat(imageFile(req.volumeId)).catch(() => undefined);
      const condition = img ? { abnormal: false, message: 'volume is healthy' } : { abnormal: true, message: `image file ${imageFile(req.volumeId)} is missing` };
      return { usage: [{ unit: 'BYTES', total: img?.size ?? 0, available: 0, used: 0 }], volumeCondition: condition };
    }
    const eph = ephemeralDir(req.volumeId);
    const dir = (await exists(eph)) ? eph : volumeDir(req.volumeId);
    const fsStats = await statfs(req.volumePath);
    const present = await exists(dir);
    return {
      usage: [
        { unit: 'BYTES', total: fsStats.blocks * fsStats.bsize, available: fsStats.bavail * fsStats.bsize, used: await diskUsage(dir) },
        { unit: 'INODES', total: fsStats.files, available: fsStats.ffree, used: fsStats.files - fsStats.ffree },
      ],
      volumeCondition: present ? { abnormal: false, message: 'volume is healthy' } : { abnormal: true, message: `volume data directory ${dir} is missing` },
    };
  }),

  NodeExpandVolume: handler('NodeExpandVolume', async (req) => {
    requireFields(req, 'volumeId', 'volumePath');
    return { capacityBytes: req.capacityRange?.requiredBytes ?? 0 };
  }),
};

async function unlinkIfFile(path) {
  const st = await lstat(path).catch(() => undefined);
  if (st && !st.isDirectory()) await unlink(path);
}

// ---- Registration (the kubelet's plugin watcher) ----------------------------------------------------------------
const registration = {
  GetInfo: handler('GetInfo', () => ({ type: 'CSIPlugin', name: driverName, endpoint: csiSocket, supportedVersions: ['1.0.0'] })),
  NotifyRegistrationStatus: (call, callback) => {
    const { pluginRegistered, error } = call.request;
    record({ method: 'NotifyRegistrationStatus', registered: pluginRegistered, error: error || undefined });
    if (!pluginRegistered) say('the kubelet refused the registration; serving on', { error });
    callback(null, {});
  },
};

// ---- the external attacher stand-in -------------------------------------------------------------------------------
const finalizer = `external-attacher/${driverName.replace(/[^a-zA-Z0-9-]/g, '-')}`;

async function startAttacher(kubeconfig) {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const storage = kc.makeApiClient(k8s.StorageV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const fieldManager = 'csi-attacher'; // as the upstream sidecar names itself

  async function volumeHandle(va) {
    const src = va.spec.source ?? {};
    if (src.inlineVolumeSpec?.csi) return src.inlineVolumeSpec.csi.volumeHandle;
    if (!src.persistentVolumeName) return undefined;
    const pv = await core.readPersistentVolume({ name: src.persistentVolumeName });
    return pv.spec?.csi?.volumeHandle;
  }
  async function sync(va) {
    const name = va.metadata.name;
    const finalizers = va.metadata.finalizers ?? [];
    const base = { attachment: name, nodeId: va.spec.nodeName, pv: va.spec.source?.persistentVolumeName };
    if (va.metadata.deletionTimestamp) {
      if (!finalizers.includes(finalizer)) return;
      const volumeId = await volumeHandle(va).catch(() => undefined);
      const err = injected('ControllerUnpublishVolume');
      if (err) {
        record({ method: 'ControllerUnpublishVolume', volumeId, ...base, error: `${grpc.status[err.code]}: ${err.details}` });
        await storage.patchVolumeAttachmentStatus({ name, fieldManager, body: { status: { attached: true, detachError: { time: new Date(), message: err.details } } } }, merge);
        return;
      }
      record({ method: 'ControllerUnpublishVolume', volumeId, ...base });
      await storage.patchVolumeAttachment({ name, fieldManager, body: { metadata: { finalizers: finalizers.filter((f) => f !== finalizer), resourceVersion: va.metadata.resourceVersion } } }, merge);
      return;
    }
    if (va.status?.attached) return;
    if (!finalizers.includes(finalizer)) {
      await storage.patchVolumeAttachment({ name, fieldManager, body: { metadata: { finalizers: [...finalizers, finalizer], resourceVersion: va.metadata.resourceVersion } } }, merge);
    }
    const volumeId = await volumeHandle(va);
    if (!volumeId) throw new Error(`VolumeAttachment ${name}: no CSI volume handle in its source`);
    const err = injected('ControllerPublishVolume');
    if (err) {
      record({ method: 'ControllerPublishVolume', volumeId, ...base, error: `${grpc.status[err.code]}: ${err.details}` });
      await storage.patchVolumeAttachmentStatus({ name, fieldManager, body: { status: { attached: false, attachError: { time: new Date(), message: err.details } } } }, merge);
      return;
    }
    record({ method: 'ControllerPublishVolume', volumeId, ...base });
    await storage.patchVolumeAttachmentStatus({ name, fieldManager, body: { status: { attached: true, attachmentMetadata: { devicePath: join(dataDir, safeId(volumeId)) }, attachError: null } } }, merge);
  }

  let stopped = false;
  let timer;
  const tick = async () => {
    try {
      const list = await storage.listVolumeAttachment();
      for (const va of list.items) {
        if (va.spec.attacher !== driverName || va.spec.nodeName !== nodeId) continue;
        await sync(va).catch((err) => say('attacher: sync failed; retrying', { attachment: va.metadata.name, err: err.body?.message ?? err.message }));
      }
    } catch (err) {
      say('attacher: listing VolumeAttachments failed; retrying', { err: err.body?.message ?? err.message });
    }
    if (!stopped) timer = setTimeout(tick, 1000);
  };
  say('attacher: watching VolumeAttachments', { attacher: driverName, node: nodeId, finalizer });
  void tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// ---- start ---------------------------------------------------------------------------------------------------------
const loadOptions = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [values['proto-dir']] };
const csiProto = grpc.loadPackageDefinition(await protoLoader.load(join(values['proto-dir'], 'csi.proto'), loadOptions));
const regProto = grpc.loadPackageDefinition(await protoLoader.load(join(values['proto-dir'], 'pluginregistration-v1.proto'), loadOptions));
const regPackage = regProto.pluginregistration;

async function serve(socket, services) {
  mkdirSync(dirname(socket), { recursive: true });
  rmSync(socket, { force: true }); // a stale socket of an earlier run
  const server = new grpc.Server();
  for (const [service, impl] of services) server.addService(service, impl);
  await new Promise((res, rej) => server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())));
  return server;
}

mkdirSync(dataDir, { recursive: true });
if (values.log) mkdirSync(dirname(resolve(values.log)), { recursive: true });
const csiServices = [[csiProto.csi.v1.Identity.service, identity], [csiProto.csi.v1.Node.service, node]];
const csiServer = await serve(csiSocket, csiServices);
// The registration socket last: the kubelet calls GetInfo, then the CSI socket, as soon as this one appears.
const regServer = await serve(regSocket, [[regPackage.Registration.service, registration]]);
say('serving', { driver: driverName, node: nodeId, csiSocket, registrationSocket: regSocket, stage, dataDir, attacher: Boolean(values.kubeconfig) });
const stopAttacher = values.kubeconfig ? await startAttacher(values.kubeconfig) : () => {};

let stopping = false;
const shutdown = (signal) => {
  if (stopping) return;
  stopping = true;
  say('stopping', { signal });
  stopAttacher();
  // The registration socket first, so the kubelet's plugin watcher sees the driver go before its endpoint does.
  rmSync(regSocket, { force: true });
  regServer.forceShutdown();
  csiServer.forceShutdown();
  rmSync(csiSocket, { force: true });
  process.exit(0);
};
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
