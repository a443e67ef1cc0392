import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The repository root (this file is tools/cluster-e2e/{src,dist}/cluster.*). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

export interface ClusterEnv {
  root: string;
  binDir: string;
  kubectl: string;
  /** The admin kubeconfig (a static token in group system:masters). */
  kubeconfig: string;
  server: string;
  caFile: string;
  /** The control plane's version, e.g. v1.20.2. */
  version: string;
}

export function clusterRoot(): string {
  return process.env.KUBELET_TS_CLUSTER_ROOT ?? '/tmp/kubelet-ts-cluster';
}

function parseEnvFile(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/** The env file tools/kube/start.sh writes once the control plane is ready. */
export function readClusterEnv(): ClusterEnv {
  const file = join(clusterRoot(), 'env');
  if (!existsSync(file)) throw new Error(`the control plane is not running: ${file} does not exist; start it with tools/kube/start.sh`);
  const values = parseEnvFile(file);
  for (const key of ['KUBE_BIN_DIR', 'KUBECTL', 'KUBECONFIG', 'KUBE_APISERVER', 'KUBE_CA_FILE']) {
    if (!values[key]) throw new Error(`${file} has no ${key}`);
  }
  return {
    root: values.KUBE_CLUSTER_ROOT ?? clusterRoot(),
    binDir: values.KUBE_BIN_DIR,
    kubectl: values.KUBECTL,
    kubeconfig: values.KUBECONFIG,
    server: values.KUBE_APISERVER,
    caFile: values.KUBE_CA_FILE,
    version: values.KUBE_VERSION ?? '',
  };
}

async function runTool(script: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync('bash', [join(repoRoot, 'tools/kube', script), ...args], { maxBuffer: 16 << 20, env: { ...process.env, CI: process.env.CI ?? '' } });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`tools/kube/${script} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

/**
 * Starts the control plane with tools/kube/start.sh (building it first when it is not cached; a build already
 * running in the background is waited for) and returns its env.
 */
export async function ensureCluster(): Promise<ClusterEnv> {
  await runTool('start.sh', []);
  return readClusterEnv();
}

/** A kubeconfig with a node client certificate (CN=system:node:NODE, O=system:nodes); returns its path. */
export async function nodeKubeconfig(node: string): Promise<string> {
  return (await runTool('node-kubeconfig.sh', [node])).trim();
}

/** Restarts one control-plane component, keeping it down for `downSeconds` first; `kill`: SIGKILL, as a crash, instead of a graceful stop. */
export async function restartComponent(
  name: 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'etcd',
  downSeconds = 0,
  options: { kill?: boolean } = {},
): Promise<void> {
  await runTool('restart.sh', [name, String(downSeconds), ...(options.kill ? ['--kill'] : [])]);
}

/** An API object as kubectl prints it with -o json. */
export type KubeObject = Record<string, any>;

export class KubectlError extends Error {
  constructor(
    readonly args: string[],
    readonly stderr: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubectlError';
  }
}

/** kubectl as a user runs it, with the admin kubeconfig. */
export class Kubectl {
  constructor(private readonly env: ClusterEnv) {}

  async run(args: string[], input?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(this.env.kubectl, ['--kubeconfig', this.env.kubeconfig, ...args], { maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
        if (error) reject(new KubectlError(args, stderr, `kubectl ${args.join(' ')}: ${stderr.trim() || error.message}`));
        else resolve(stdout);
      });
      if (input !== undefined) child.stdin!.end(input);
    });
  }

  async json(args: string[]): Promise<KubeObject> {
    return JSON.parse(await this.run([...args, '-o', 'json'])) as KubeObject;
  }

  /** `kubectl apply -f -` of objects given as JSON. */
  async apply(...objects: object[]): Promise<string> {
    return this.run(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  }

  /** The object, or undefined when the API server answers NotFound. */
  async getOrUndefined(args: string[]): Promise<KubeObject | undefined> {
    try {
      return await this.json(['get', ...args]);
    } catch (error) {
      if (error instanceof KubectlError && /NotFound|not found/.test(error.stderr)) return undefined;
      throw error;
    }
  }
}

/** The real API server for wire-level requests, with the admin token (group system:masters). */
export function adminWireServer(env: ClusterEnv): { url: string; token: string; caFile: string } {
  const token = readFileSync(join(env.root, 'pki/tokens.csv'), 'utf8').split(',')[0]?.trim();
  if (!token) throw new Error(`no admin token in ${join(env.root, 'pki/tokens.csv')}`);
  return { url: env.server, token, caFile: env.caFile };
}
