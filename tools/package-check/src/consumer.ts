import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import type { WorkspacePackage } from './workspace.js';

const execFileAsync = promisify(execFile);
const require = createRequire(import.meta.url);

/** What a command printed, and its exit code (0 when it succeeded). */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command and returns its output whatever its exit code; a command that cannot start still throws. */
export async function run(file: string, args: string[], options: { cwd: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await execFileAsync(file, args, {
      cwd: options.cwd,
      timeout: options.timeoutMs ?? 300_000,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', ...options.env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string; code?: number | string; killed?: boolean; signal?: string };
    if (typeof e.code === 'string' && e.stdout === undefined) throw err;
    const code = typeof e.code === 'number' ? e.code : 1;
    const why = e.killed ? `\n(killed by ${e.signal ?? 'a signal'}: it ran past its timeout)` : '';
    return { code, stdout: e.stdout ?? '', stderr: (e.stderr ?? '') + why };
  }
}

/** The script of a command-line tool installed in the repository (tsc, tsx, attw), to run with this Node. */
export function toolEntry(packageName: string, command: string = packageName): string {
  const manifestPath = require.resolve(`${packageName}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[command];
  if (!bin) throw new Error(`${packageName} has no command ${command}`);
  return join(dirname(manifestPath), bin);
}

/**
 * Packs every package with `npm pack`, as `changeset publish` would publish it, into `outDir`.
 * Returns the tarball of each package by name.
 */
export async function packPackages(root: string, packages: WorkspacePackage[], outDir: string): Promise<Map<string, string>> {
  await mkdir(outDir, { recursive: true });
  const args = ['pack', '--json', '--pack-destination', outDir, ...packages.flatMap((p) => ['--workspace', p.path])];
  const result = await run('npm', args, { cwd: root });
  if (result.code !== 0) throw new Error(`npm pack failed (exit ${result.code}):\n${result.stderr}`);
  const packed = JSON.parse(result.stdout) as { name: string; filename: string; files: { path: string }[] }[];
  return new Map(packed.map((p) => [p.name, join(outDir, p.filename)]));
}

/** The files a tarball holds, from `tar` (paths without the leading `package/`). */
export async function tarballFiles(tarball: string): Promise<string[]> {
  const result = await run('tar', ['-tzf', tarball], { cwd: '/' });
  if (result.code !== 0) throw new Error(`tar -tzf ${tarball}: ${result.stderr}`);
  return result.stdout
    .split('\n')
    .filter(Boolean)
    .map((p) => p.replace(/^package\//, ''));
}

/**
 * An empty npm project at `dir` that depends on the given tarballs only (plus the given third-party dev
 * dependencies), installed with npm as a user would. Nothing from the workspace leaks in: the project is outside
 * it, and every @kubelet-ts package comes from its tarball.
 */
export async function installConsumer(dir: string, tarballs: string[], devDependencies: Record<string, string>): Promise<CommandResult> {
  await mkdir(dir, { recursive: true });
  const dependencies: Record<string, string> = {};
  for (const tarball of tarballs) {
    const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'], { cwd: '/' })).stdout) as { name: string };
    dependencies[manifest.name] = `file:${relative(dir, tarball)}`;
  }
  const manifest = { name: 'kubelet-ts-consumer', version: '1.0.0', private: true, type: 'module', dependencies, devDependencies };
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  return run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: dir });
}

/** The subpaths of a package's exports map that lead to JavaScript (not assets such as a .proto file). */
export function javascriptSubpaths(exportsMap: Record<string, unknown> | undefined): string[] {
  if (!exportsMap) return ['.'];
  const isJs = (target: unknown): boolean => {
    if (typeof target === 'string') return /\.(m|c)?js$/.test(target);
    if (target && typeof target === 'object') return Object.values(target).some(isJs);
    return false;
  };
  return Object.entries(exportsMap)
    .filter(([, target]) => isJs(target))
    .map(([subpath]) => subpath);
}

/** `@kubelet-ts/core` + `./testing` -> `@kubelet-ts/core/testing`. */
export function subpathSpecifier(name: string, subpath: string): string {
  return subpath === '.' ? name : `${name}/${subpath.replace(/^\.\//, '')}`;
}

/** TypeScript settings a consumer might use: the two module resolutions of today's ESM projects. */
export const CONSUMER_TSCONFIGS = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
} as const;

/** Writes `tsconfig.<mode>.json` in the consumer project for the given files; returns its name. */
export async function writeConsumerTsconfig(dir: string, mode: keyof typeof CONSUMER_TSCONFIGS, files: string[]): Promise<string> {
  const name = `tsconfig.${mode}.json`;
  const compilerOptions = {
    ...CONSUMER_TSCONFIGS[mode],
    target: 'es2022',
    lib: ['es2023'],
    types: ['node'],
    strict: true,
    noEmit: true,
    // What most projects set; resolution of every import and the examples' use of our types is still checked.
    skipLibCheck: true,
  };
  await writeFile(join(dir, name), JSON.stringify({ compilerOptions, files }, null, 2) + '\n');
  return name;
}
