// Runs INSIDE a node booted by tools/systemd-node/bare.sh (nsenter -t <pid> -a node --import tsx <this file>):
// the systemd cgroup driver as the kubelet builds it — SystemdDbusUnitManager on the node's system bus (the default
// address) and createSystemdCgroupManagerSync on the node's /sys/fs/cgroup (the version detected there). It answers
// one JSON request per stdin line with one JSON line on stdout, so real-systemd.test.ts can look at systemd between
// the steps. Requests: {op, name?, resources?, literal?}; answers: {ok: value} or {error: message}.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { createSystemdCgroupManagerSync, SystemdDbusUnitManager, type CgroupName, type ResourceConfig } from '../src/index.js';

interface Request {
  op: string;
  name?: CgroupName;
  resources?: ResourceConfig;
  literal?: string;
  pid?: number;
}

/** The v1 hierarchies a process is moved into (those this machine kind mounts and the manager creates in). */
const V1_JOINED = ['memory', 'cpu', 'cpuacct', 'pids', 'systemd'];

const logger = new RecordingLogger({ verbosity: 0 });
const units = new SystemdDbusUnitManager({ logger });
const manager = createSystemdCgroupManagerSync({ units, logger });
const children = new Map<number, ReturnType<typeof spawn>>();
/** How the spawned processes ended: the signal, or null for an exit code. */
const exits = new Map<number, string | null>();

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`request without ${what}`);
  return value;
}

async function handle(req: Request): Promise<unknown> {
  switch (req.op) {
    case 'version':
      return manager.version;
    case 'name':
      return manager.name(need(req.name, 'name'));
    case 'cgroupName':
      return manager.cgroupName(need(req.literal, 'literal'));
    case 'exists':
      return manager.exists(need(req.name, 'name'));
    case 'create':
      return manager.create(need(req.name, 'name'), req.resources ?? {}).then(() => null);
    case 'update':
      return manager.update(need(req.name, 'name'), need(req.resources, 'resources')).then(() => null);
    case 'destroy':
      return manager.destroy(need(req.name, 'name')).then(() => null);
    case 'listChildren':
      return manager.listChildren(need(req.name, 'name'));
    case 'pids':
      return manager.pids(need(req.name, 'name'));
    case 'killAllProcesses':
      return manager.killAllProcesses(need(req.name, 'name'));
    case 'spawnInto': {
      // A process of the node moved into the cgroup, as a runtime puts a container there.
      const child = spawn('sleep', ['600'], { stdio: 'ignore' });
      const pid = need(child.pid, 'a pid of the spawned sleep');
      children.set(pid, child);
      child.on('exit', (_code, signal) => {
        exits.set(pid, signal);
        children.delete(pid);
      });
      // v2: the one hierarchy; v1: every hierarchy the manager made the cgroup in, as runc joins a container to them.
      const path = manager.name(need(req.name, 'name'));
      const dirs = manager.version === 'v2' ? [`/sys/fs/cgroup${path}`] : V1_JOINED.map((h) => `/sys/fs/cgroup/${h}${path}`);
      for (const dir of dirs) await writeFile(`${dir}/cgroup.procs`, String(pid));
      return pid;
    }
    case 'exited': {
      // Whether a spawned process is gone, and the signal that ended it.
      const pid = need(req.pid, 'pid');
      const child = children.get(pid);
      if (!child) {
        if (!exits.has(pid)) throw new Error(`no process ${pid} was spawned by this driver`);
        return { exited: true, signal: exits.get(pid) };
      }
      const signal = await new Promise<string | null>((resolve) => {
        const timer = setTimeout(() => resolve('still running'), 2000);
        child.once('exit', (_code, sig) => {
          clearTimeout(timer);
          resolve(sig);
        });
      });
      return signal === 'still running' ? { exited: false } : { exited: true, signal };
    }
    case 'kill': {
      const pid = need(req.pid, 'pid');
      children.get(pid)?.kill('SIGKILL');
      return null;
    }
    case 'logs':
      return logger.entries.map((e) => ({ level: e.level, msg: e.msg, err: e.err instanceof Error ? e.err.message : e.err === undefined ? undefined : String(e.err) }));
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === '') continue;
  let answer: unknown;
  try {
    answer = { ok: await handle(JSON.parse(line) as Request) };
  } catch (err) {
    answer = { error: err instanceof Error ? err.message : String(err) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
units.close();
for (const child of children.values()) child.kill('SIGKILL');
