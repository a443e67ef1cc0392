import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
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

async function tarballName(tarball: string): Promise<string> {
  const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'], { cwd: '/' })).stdout) as { name: string };
  return manifest.name;
}

const NPM_INSTALL = ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];

/**
 * An empty npm project at `dir` that depends on the given tarballs only (plus the given third-party dev
 * dependencies), installed with npm as a user would. Nothing from the workspace leaks in: the project is outside
 * it, and every @kubelet-ts package comes from its tarball.
 */
export async function installConsumer(dir: string, tarballs: string[], devDependencies: Record<string, string>): Promise<CommandResult> {
  await mkdir(dir, { recursive: true });
  const dependencies: Record<string, string> = {};
  for (const tarball of tarballs) dependencies[await tarballName(tarball)] = `file:${relative(dir, tarball)}`;
  const manifest = { name: 'kubelet-ts-consumer', version: '1.0.0', private: true, type: 'module', dependencies, devDependencies };
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  return run('npm', NPM_INSTALL, { cwd: dir });
}

/** One project of {@link installLinkedProjects}: its directory under the root, and its direct dependencies. */
export interface LinkedProject {
  /** Directory relative to the root, e.g. `readme/core`. */
  path: string;
  /** @kubelet-ts tarballs it depends on directly. */
  tarballs: string[];
  /** Third-party packages it depends on directly, from the registry (e.g. `{ yaml: '^2.8.1' }`). */
  dependencies?: Record<string, string>;
}

/**
 * Empty npm projects, each depending on exactly what it is given, installed at once with
 * `npm install --install-strategy=linked` as the workspaces of one root: every package lives once in the root's
 * node_modules/.store and sees only what it declares (its dependencies are symlinked beside it, nothing is hoisted),
 * and each project's node_modules holds only its own direct dependencies. One install instead of one per project:
 * npm resolves and unpacks client-node and the rest once.
 *
 * `tarballs` are every @kubelet-ts tarball any project may need: the root's `overrides` send npm to them for the
 * @kubelet-ts packages the direct ones depend on (they are not on the registry).
 */
export async function installLinkedProjects(root: string, projects: LinkedProject[], tarballs: string[]): Promise<CommandResult> {
  await mkdir(root, { recursive: true });
  const overrides: Record<string, string> = {};
  for (const tarball of tarballs) overrides[await tarballName(tarball)] = `file:${resolve(tarball)}`;
  for (const project of projects) {
    const dir = join(root, project.path);
    await mkdir(dir, { recursive: true });
    const dependencies: Record<string, string> = { ...project.dependencies };
    for (const tarball of project.tarballs) dependencies[await tarballName(tarball)] = `file:${resolve(tarball)}`;
    const manifest = { name: project.path.replace(/[^a-z0-9-]+/gi, '-'), version: '1.0.0', private: true, type: 'module', dependencies };
    await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  }
  const manifest = { name: 'kubelet-ts-linked-projects', version: '1.0.0', private: true, workspaces: projects.map((p) => p.path), overrides };
  await writeFile(join(root, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  return run('npm', [...NPM_INSTALL, '--install-strategy=linked'], { cwd: root });
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

/**
 * TypeScript settings a consumer might use: the two module resolutions of today's ESM projects. node16 with
 * `skipLibCheck: false` checks every declaration file our types reach (client-node's included), which is all
 * that node16 with `skipLibCheck: true` checks and more; bundler with `skipLibCheck: true` is what most projects set.
 */
export const CONSUMER_TSCONFIGS = {
  node16: { module: 'node16', moduleResolution: 'node16', skipLibCheck: false },
  bundler: { module: 'esnext', moduleResolution: 'bundler', skipLibCheck: true },
} as const;

/** Writes `tsconfig.<mode>.json` in the consumer project for the given files; returns its name. */
export async function writeConsumerTsconfig(dir: string, mode: keyof typeof CONSUMER_TSCONFIGS, files: string[]): Promise<string> {
  const name = `tsconfig.${mode}.json`;
  const compilerOptions = {
    target: 'es2022',
    lib: ['es2023'],
    types: ['node'],
    strict: true,
    noEmit: true,
    ...CONSUMER_TSCONFIGS[mode],
  };
  await writeFile(join(dir, name), JSON.stringify({ compilerOptions, files }, null, 2) + '\n');
  return name;
}

/** Unpacks a tarball into `dir` (its `package/` prefix removed); returns `dir`. */
export async function extractTarball(tarball: string, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const result = await run('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1'], { cwd: '/' });
  if (result.code !== 0) throw new Error(`tar -xzf ${tarball}: ${result.stderr}`);
  return dir;
}

/** A source map's `sources` that lead nowhere: neither embedded (`sourcesContent`) nor a file beside it. */
export async function unresolvedSources(mapFile: string): Promise<string[]> {
  const map = JSON.parse(await readFile(mapFile, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[]; sourceRoot?: string };
  const missing: string[] = [];
  for (const [i, source] of map.sources.entries()) {
    if (typeof map.sourcesContent?.[i] === 'string') continue;
    if (!existsSync(join(dirname(mapFile), map.sourceRoot ?? '', source))) missing.push(source);
  }
  return missing;
}

const LOAD_RECORDER = 'record-loads.mjs';
const LOAD_RECORDER_HOOKS = 'record-loads-hooks.mjs';

/**
 * Writes, in `dir`, a module to preload with `node --import ./record-loads.mjs`: it registers resolve/load hooks
 * (module.register) that append to the file `$RECORD_LOADS_FILE` every module URL containing
 * `$RECORD_LOADS_PATTERN` that the process resolves or loads. Deterministic where a timing is not: importing a
 * package that must not load `@kubernetes/client-node` records nothing for `/@kubernetes/client-node/`.
 */
export async function writeLoadRecorder(dir: string): Promise<string> {
  await writeFile(
    join(dir, LOAD_RECORDER_HOOKS),
    `import { appendFileSync } from 'node:fs';
let file;
let pattern;
export function initialize(data) {
  file = data.file;
  pattern = data.pattern;
}
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (result.url.includes(pattern)) appendFileSync(file, 'resolve ' + result.url + '\\n');
  return result;
}
export async function load(url, context, nextLoad) {
  if (url.includes(pattern)) appendFileSync(file, 'load ' + url + '\\n');
  return nextLoad(url, context);
}
`,
  );
  await writeFile(
    join(dir, LOAD_RECORDER),
    `import { register } from 'node:module';
register('./${LOAD_RECORDER_HOOKS}', import.meta.url, {
  data: { file: process.env.RECORD_LOADS_FILE, pattern: process.env.RECORD_LOADS_PATTERN },
});
`,
  );
  return `./${LOAD_RECORDER}`;
}

/** One import of {@link importRecordingLoads}: how many exports it has, and what the process had loaded by then. */
export interface RecordedImport {
  specifier: string;
  exports: number;
  /** The recorded URLs (those containing the pattern), since the process started, without duplicates. */
  urls: string[];
}

/**
 * Imports the specifiers, one after the other, in a fresh `node` from `dir` with the load recorder of
 * {@link writeLoadRecorder}, and returns what each import had recorded for `pattern` (e.g. `/@kubernetes/client-node/`)
 * once it resolved: the hooks write synchronously before a module reaches the main thread, so this is exact.
 */
export async function importRecordingLoads(
  dir: string,
  specifiers: string[],
  pattern: string,
  recordFile: string,
): Promise<CommandResult & { imports: RecordedImport[] }> {
  await writeFile(recordFile, '');
  const script =
    `import { readFileSync } from 'node:fs';\n` +
    `const imports = [];\n` +
    `for (const specifier of ${JSON.stringify(specifiers)}) {\n` +
    `  const m = await import(specifier);\n` +
    `  const lines = readFileSync(process.env.RECORD_LOADS_FILE, 'utf8').split('\\n').filter(Boolean);\n` +
    `  imports.push({ specifier, exports: Object.keys(m).length, urls: [...new Set(lines.map((l) => l.replace(/^\\w+ /, '')))] });\n` +
    `}\n` +
    `process.stdout.write(JSON.stringify(imports));\n`;
  const result = await run(process.execPath, ['--import', `./${LOAD_RECORDER}`, '--input-type=module', '-e', script], {
    cwd: dir,
    env: { RECORD_LOADS_FILE: recordFile, RECORD_LOADS_PATTERN: pattern },
  });
  return { ...result, imports: result.code === 0 ? (JSON.parse(result.stdout) as RecordedImport[]) : [] };
}

/** What `require(name)` did: the number of exports it returned, or the error it threw. */
export type RequireOutcome = { exports: number } | { error: { code?: string; message: string } };

/** `require()`s each package in one fresh CommonJS `node` from `dir` (with the given Node flags); one outcome each. */
export async function requireEach(dir: string, names: string[], nodeFlags: string[] = []): Promise<CommandResult & { outcomes: Record<string, RequireOutcome> }> {
  const script =
    `const outcomes = {};\n` +
    `for (const name of ${JSON.stringify(names)}) {\n` +
    `  try { outcomes[name] = { exports: Object.keys(require(name)).length }; }\n` +
    `  catch (e) { outcomes[name] = { error: { code: e.code, message: String(e.message) } }; }\n` +
    `}\n` +
    `process.stdout.write(JSON.stringify(outcomes));\n`;
  const result = await run(process.execPath, [...nodeFlags, '-e', script], { cwd: dir });
  return { ...result, outcomes: result.code === 0 ? (JSON.parse(result.stdout) as Record<string, RequireOutcome>) : {} };
}

/** What importing took in a fresh process: the time of the imports, and the process's RSS once they are done. */
export interface ImportCost {
  ms: number;
  rssBytes: number;
}

/**
 * Imports the specifiers, one after the other, in a fresh `node` from `dir`; an empty list measures a bare node.
 * A figure to print, not to assert on: it depends on the machine and what else runs on it.
 */
export async function measureImport(dir: string, specifiers: string[]): Promise<CommandResult & { cost?: ImportCost }> {
  const script =
    `const start = performance.now();\n` +
    `for (const spec of ${JSON.stringify(specifiers)}) await import(spec);\n` +
    `const ms = performance.now() - start;\n` +
    `process.stdout.write(JSON.stringify({ ms, rssBytes: process.memoryUsage().rss }));\n`;
  const result = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: dir });
  return { ...result, cost: result.code === 0 ? (JSON.parse(result.stdout) as ImportCost) : undefined };
}
