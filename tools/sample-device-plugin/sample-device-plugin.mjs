#!/usr/bin/env node
// A sample device plugin over the real device plugin API v1beta1: serves DevicePlugin on a socket in the kubelet's
// device plugin directory, registers `--resource` with the kubelet, advertises `--devices` devices, offers
// GetPreferredAllocation and asks for PreStartContainer, and re-registers when the kubelet restarts.
// With --plugins-registry DIR it registers through the kubelet's plugin watcher instead: it serves the
// pluginregistration v1 Registration service on DIR/<resource, / replaced by _>-reg.sock (GetInfo: type DevicePlugin,
// name = the resource, endpoint = its device plugin socket's absolute path, versions [v1beta1]).
//
// Allocate returns, per container:
//   envs        SAMPLE_DEVICES=<allocated ids, comma separated> and SAMPLE_RESOURCE=<resource>
//   mounts      --mount-host-dir (default: a directory it creates, holding a file per device) at --mount-path (/sample-devices), read-only
//   devices     with --device-host-path (e.g. /dev/zero): that device node at --device-path (/dev/sample0), permissions rw
//   annotations sample.example.com/devices=<ids>
//
// Needs the built @kubelet-ts/device-manager (npx nx run @kubelet-ts/device-manager:build).
//   node tools/sample-device-plugin/sample-device-plugin.mjs --resource example.com/foo --devices 2 --socket-dir /var/lib/kubelet/device-plugins
//     [--plugins-registry /var/lib/kubelet/plugins_registry]
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DevicePluginServer } from '../../packages/device-manager/dist/index.js';

const { values } = parseArgs({
  options: {
    resource: { type: 'string', default: 'example.com/sample' },
    devices: { type: 'string', default: '2' },
    'socket-dir': { type: 'string', default: '/var/lib/kubelet/device-plugins' },
    endpoint: { type: 'string' },
    'mount-host-dir': { type: 'string' },
    'mount-path': { type: 'string', default: '/sample-devices' },
    'device-host-path': { type: 'string' },
    'device-path': { type: 'string', default: '/dev/sample0' },
    'plugins-registry': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log('usage: sample-device-plugin.mjs [--resource example.com/sample] [--devices 2] [--socket-dir DIR] [--endpoint NAME.sock]\n' +
    '  [--mount-host-dir DIR] [--mount-path /sample-devices] [--device-host-path /dev/zero] [--device-path /dev/sample0]\n' +
    '  [--plugins-registry DIR]');
  process.exit(0);
}
const count = Number.parseInt(values.devices, 10);
if (!Number.isInteger(count) || count < 0) throw new Error(`--devices must be a number, got ${values.devices}`);
const prefix = values.resource.split('/').pop();
const deviceIds = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
const mountHostDir = values['mount-host-dir'] ?? join(values['socket-dir'], `..`, `sample-device-plugin-${prefix}`);
mkdirSync(mountHostDir, { recursive: true });
for (const id of deviceIds) writeFileSync(join(mountHostDir, id), `${id}\n`);

const log = (msg, kv = {}) => console.log(JSON.stringify({ ts: new Date().toISOString(), msg, ...kv }));
const logger = {
  info: log,
  warn: log,
  error: (msg, err, kv) => log(msg, { err: err?.message ?? String(err), ...kv }),
  v: () => ({ enabled: false, info: () => {} }),
  with: () => logger,
};

const registryDir = values['plugins-registry'] && resolve(values['plugins-registry']);
const plugin = new DevicePluginServer({
  resourceName: values.resource,
  socketDir: resolve(values['socket-dir']),
  endpoint: values.endpoint,
  deviceIds,
  options: { preStartRequired: true, getPreferredAllocationAvailable: true },
  // Prefer the highest-numbered free devices, so a test can tell the preference was used.
  preferred: (available, mustInclude, size) => [...new Set([...mustInclude, ...[...available].sort().reverse()])].slice(0, size),
  allocate: (ids) => ({
    envs: { SAMPLE_DEVICES: ids.join(','), SAMPLE_RESOURCE: values.resource },
    mounts: [{ containerPath: values['mount-path'], hostPath: mountHostDir, readOnly: true }],
    devices: values['device-host-path'] ? [{ containerPath: values['device-path'], hostPath: values['device-host-path'], permissions: 'rw' }] : [],
    annotations: { 'sample.example.com/devices': ids.join(',') },
    cdiDevices: [],
  }),
  // Through the plugin watcher, the kubelet's Registration service is not called: see serveRegistration.
  watchKubeletRestartMs: registryDir ? 0 : 500,
  logger,
});

/** Set by serveRegistration: stops the registration socket. */
let stopRegistration;
if (registryDir) await serveRegistration(registryDir);

// The kubelet may not be up yet: retry registration until it is.
for (; !registryDir; ) {
  try {
    await plugin.start();
    break;
  } catch (err) {
    log('registration failed; retrying', { err: err.details ?? err.message });
    await plugin.stop();
    await new Promise((r) => setTimeout(r, 1000));
  }
}
if (!registryDir) log('registered', { resource: values.resource, devices: deviceIds, socket: plugin.socketPath });
const shutdown = async () => {
  // The registration socket first, so the kubelet's plugin watcher sees the plugin go before its endpoint does.
  await stopRegistration?.();
  await plugin.stop();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

/**
 * Registration through the kubelet's plugin watcher (pluginregistration v1): serves the device plugin socket, then the
 * Registration service on <dir>/<resource>-reg.sock. A restarted kubelet removes the device plugin socket when it
 * cleans its device plugin directory: then both are served again (a new registration socket, so the watcher
 * registers the plugin anew).
 */
async function serveRegistration(dir) {
  const { default: grpc } = await import('@grpc/grpc-js');
  const { default: protoLoader } = await import('@grpc/proto-loader');
  const protoDir = fileURLToPath(new URL('../../packages/csi/proto/', import.meta.url));
  const loadOptions = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [protoDir] };
  const { pluginregistration } = grpc.loadPackageDefinition(await protoLoader.load(join(protoDir, 'pluginregistration-v1.proto'), loadOptions));
  const regSocket = join(dir, `${values.resource.replace(/\//g, '_')}-reg.sock`);
  const registration = {
    GetInfo: (_call, cb) => cb(null, { type: 'DevicePlugin', name: values.resource, endpoint: plugin.socketPath, supportedVersions: ['v1beta1'] }),
    NotifyRegistrationStatus: (call, cb) => {
      const { pluginRegistered, error } = call.request;
      if (pluginRegistered) log('registered through the plugin watcher', { resource: values.resource, devices: deviceIds, socket: plugin.socketPath, registrationSocket: regSocket });
      else log('the kubelet refused the registration', { error });
      cb(null, {});
    },
  };
  let server;
  const stop = () => {
    rmSync(regSocket, { force: true });
    server?.forceShutdown();
    server = undefined;
  };
  const start = async () => {
    mkdirSync(resolve(values['socket-dir']), { recursive: true });
    await plugin.serve();
    mkdirSync(dir, { recursive: true });
    rmSync(regSocket, { force: true });
    const s = new grpc.Server();
    s.addService(pluginregistration.Registration.service, registration);
    await new Promise((res, rej) => s.bindAsync(`unix:${regSocket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())));
    server = s;
    log('serving', { resource: values.resource, socket: plugin.socketPath, registrationSocket: regSocket });
  };
  await start();
  let busy = false;
  const timer = setInterval(async () => {
    if (busy || existsSync(plugin.socketPath)) return;
    busy = true;
    try {
      log('the device plugin socket is gone (the kubelet restarted): serving again', { socket: plugin.socketPath });
      stop();
      await plugin.stop();
      await start();
    } catch (err) {
      log('serving again failed; retrying', { err: err.message });
    } finally {
      busy = false;
    }
  }, 500);
  stopRegistration = async () => {
    clearInterval(timer);
    stop();
  };
}
