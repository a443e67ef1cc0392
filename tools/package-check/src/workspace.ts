import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The fields of a package.json the checks read. */
export interface PackageJson {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  repository?: string | { type?: string; url?: string; directory?: string };
  homepage?: string;
  bugs?: string | { url?: string; email?: string };
  workspaces?: string[];
  exports?: Record<string, unknown>;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** One package of the npm workspace: its directory (absolute), its path from the root, and its package.json. */
export interface WorkspacePackage {
  dir: string;
  path: string;
  manifest: PackageJson;
}

export const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'] as const;
export type DependencyField = (typeof DEPENDENCY_FIELDS)[number];

export function readPackageJson(dir: string): PackageJson {
  const file = join(dir, 'package.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as PackageJson;
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
}

/**
 * The root package and every workspace package, from the root package.json's `workspaces` (a directory, or a
 * directory whose children are packages when it ends in `/*`: the only two forms this repo uses).
 */
export function listWorkspace(root: string): { root: WorkspacePackage; packages: WorkspacePackage[] } {
  const rootManifest = readPackageJson(root);
  const dirs: string[] = [];
  for (const pattern of rootManifest.workspaces ?? []) {
    if (pattern.endsWith('/*')) {
      const parent = join(root, pattern.slice(0, -2));
      for (const entry of readdirSync(parent, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.isDirectory() && existsSync(join(parent, entry.name, 'package.json'))) dirs.push(join(parent, entry.name));
      }
    } else if (/[*?[{]/.test(pattern)) {
      throw new Error(`${join(root, 'package.json')}: workspaces pattern ${JSON.stringify(pattern)} is not supported (use "dir" or "dir/*")`);
    } else {
      dirs.push(join(root, pattern));
    }
  }
  const asPackage = (dir: string): WorkspacePackage => ({ dir, path: relative(root, dir) || '.', manifest: readPackageJson(dir) });
  return { root: asPackage(root), packages: dirs.map(asPackage) };
}

/** The packages an npm user installs: every workspace package that is not private. */
export function publishedPackages(root: string): WorkspacePackage[] {
  return listWorkspace(root).packages.filter((p) => !p.manifest.private);
}

/** The `@kubelet-ts/*` packages a published package needs at run time, itself excluded, transitively. */
export function internalClosure(names: Iterable<string>, byName: ReadonlyMap<string, WorkspacePackage>): string[] {
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    const pkg = byName.get(name);
    if (!pkg) throw new Error(`${name} is not a package of this workspace`);
    seen.add(name);
    for (const dep of Object.keys({ ...pkg.manifest.dependencies, ...pkg.manifest.peerDependencies })) {
      if (byName.has(dep)) visit(dep);
    }
  };
  for (const name of names) visit(name);
  return [...seen].sort();
}
