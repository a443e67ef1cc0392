#!/usr/bin/env node
// A sample device plugin over the real device plugin API v1beta1: serves DevicePlugin on a socket in the kubelet's
// device plugin directory, registers `--resource` with the kubelet, advertises `--devices` devices, offers
// GetPreferredAllocation and asks for PreStartContainer, and re-registers when the kubelet restarts.
//
// Allocate returns, per container:
//   envs        SAMPLE_DEVICES=<allocated ids, comma separated> and SAMPLE_RESOURCE=<resource>
//   mounts      --mount-host-dir (default: a directory it creates, holding a file per device) at --mount-path (/sample-devices), read-only
//   devices     with --device-host-path (e.g. /dev/zero): that device node at --device-path (/dev/sample0), permissions rw
//   annotations sample.example.com/devices=<ids>
//
// Needs the built @kubelet-ts/device-manager (npx nx run @kubelet-ts/device-manager:build).
//   node tools/sample-device-plugin/sample-device-plugin.mjs --resource example.com/foo --devices 2 --socket-dir /var/lib/kubelet/device-plugins
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log('usage: sample-device-plugin.mjs [--resource example.com/sample] [--devices 2] [--socket-dir DIR] [--endpoint NAME.sock]\n' +
    '  [--mount-host-dir DIR] [--mount-path /sample-devices] [--device-host-path /dev/zero] [--device-path /dev/sample0]');
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

const plugin = new DevicePluginServer({
  resourceName: values.resource,
  socketDir: values['socket-dir'],
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
  watchKubeletRestartMs: 500,
  logger,
});

// The kubelet may not be up yet: retry registration until it is.
for (;;) {
  try {
    await plugin.start();
    break;
  } catch (err) {
    log('registration failed; retrying', { err: err.details ?? err.message });
    await plugin.stop();
    await new Promise((r) => setTimeout(r, 1000));
  }
}
log('registered', { resource: values.resource, devices: deviceIds, socket: plugin.socketPath });
const shutdown = async () => {
  await plugin.stop();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
