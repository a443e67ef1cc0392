import { builtinModules } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DEPENDENCY_FIELDS, listWorkspace, type WorkspacePackage } from './workspace.js';

/** One problem found, naming the package.json (or source file) and the field it is in. */
export interface DependencyProblem {
  file: string;
  message: string;
}

const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** `@scope/name/sub/path` -> `@scope/name`; `name/sub` -> `name`. */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The bare module specifiers a TypeScript source imports or re-exports (static, dynamic and `import type`). */
export function importedSpecifiers(source: string): string[] {
  const found = new Set<string>();
  const patterns = [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, /^\s*import\s+['"]([^'"]+)['"]/gm];
  for (const pattern of patterns) {
    for (const match of source.matchAll(pattern)) {
      const spec = match[1];
      if (!spec.startsWith('.') && !spec.startsWith('/')) found.add(spec);
    }
  }
  return [...found];
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(m|c)?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/**
 * The dependency rules of the workspace, so that what an npm user installs means what it says:
 * - no open ranges (`*`, `latest`, empty, `x`) and no `workspace:` protocol (npm cannot install it);
 * - a dependency on another workspace package is `^<its version>` (changesets rewrites these on `version`);
 * - one range per third-party package across the whole repo, so one install holds one copy of it;
 * - every package a published package's src imports is in its dependencies or peerDependencies.
 */
export function lintDependencies(root: string): DependencyProblem[] {
  const { root: rootPackage, packages } = listWorkspace(root);
  const versions = new Map(packages.map((p) => [p.manifest.name, p.manifest.version]));
  const problems: DependencyProblem[] = [];
  const thirdParty = new Map<string, Map<string, string[]>>();

  for (const pkg of [rootPackage, ...packages]) {
    const file = join(pkg.path, 'package.json');
    for (const field of DEPENDENCY_FIELDS) {
      for (const [name, range] of Object.entries(pkg.manifest[field] ?? {})) {
        const where = `${field}["${name}"]`;
        if (/^\s*(\*|x|latest)?\s*$/i.test(range)) {
          problems.push({ file, message: `${where} is ${JSON.stringify(range)}: give a semver range` });
          continue;
        }
        if (range.startsWith('workspace:')) {
          problems.push({ file, message: `${where} is ${JSON.stringify(range)}: npm does not support the workspace: protocol; use "^<version>"` });
          continue;
        }
        const internalVersion = versions.get(name);
        if (internalVersion !== undefined) {
          if (range !== `^${internalVersion}`) {
            problems.push({ file, message: `${where} is ${JSON.stringify(range)} but ${name} is ${internalVersion}: use "^${internalVersion}"` });
          }
          continue;
        }
        const ranges = thirdParty.get(name) ?? new Map<string, string[]>();
        thirdParty.set(name, ranges);
        ranges.set(range, [...(ranges.get(range) ?? []), `${file} ${field}`]);
      }
    }
    if (!pkg.manifest.private) problems.push(...undeclaredImports(root, pkg));
  }

  for (const [name, ranges] of thirdParty) {
    if (ranges.size < 2) continue;
    const detail = [...ranges].map(([range, where]) => `${JSON.stringify(range)} in ${where.join(', ')}`).join('; ');
    problems.push({ file: 'package.json', message: `${name} has ${ranges.size} different ranges: ${detail}; use one` });
  }
  return problems;
}

function undeclaredImports(root: string, pkg: WorkspacePackage): DependencyProblem[] {
  const declared = new Set([pkg.manifest.name, ...Object.keys({ ...pkg.manifest.dependencies, ...pkg.manifest.peerDependencies, ...pkg.manifest.optionalDependencies })]);
  const devOnly = new Set(Object.keys(pkg.manifest.devDependencies ?? {}));
  const problems: DependencyProblem[] = [];
  for (const file of sourceFiles(join(pkg.dir, 'src'))) {
    for (const spec of importedSpecifiers(readFileSync(file, 'utf8'))) {
      if (builtins.has(spec) || builtins.has(packageNameOf(spec))) continue;
      const name = packageNameOf(spec);
      if (declared.has(name)) continue;
      const hint = devOnly.has(name) ? ' (it is only a devDependency, which npm users do not get)' : '';
      problems.push({ file: relative(root, file), message: `imports ${JSON.stringify(spec)} but ${pkg.manifest.name} does not depend on ${name}${hint}` });
    }
  }
  return problems;
}
