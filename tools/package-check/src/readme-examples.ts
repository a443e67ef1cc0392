import { packageNameOf, importedSpecifiers } from './lint-deps.js';

/** A runnable example of a README: a code fence whose info string is `ts example`. */
export interface ReadmeExample {
  /** 1-based line of the opening fence, for error messages. */
  line: number;
  code: string;
  /** The packages it imports (node builtins excluded). */
  packages: string[];
}

/**
 * The runnable examples of a README. Only fences marked ```ts example are examples: a plain ```ts fence is a
 * snippet (an API outline, a fragment) that is not expected to run on its own.
 */
export function extractReadmeExamples(markdown: string): ReadmeExample[] {
  const examples: ReadmeExample[] = [];
  const lines = markdown.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(\S+)(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang, rest] = open;
    const isExample = /^(ts|typescript)$/i.test(lang) && /\bexample\b/.test(rest);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`).exec(lines[j]);
      if (close) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j]);
    }
    if (j === lines.length) throw new Error(`line ${i + 1}: the code fence is never closed`);
    if (isExample) {
      const code = body.join('\n') + '\n';
      const packages = [...new Set(importedSpecifiers(code).filter((s) => !s.startsWith('node:')).map(packageNameOf))].sort();
      examples.push({ line: i + 1, code, packages });
    }
    i = j;
  }
  return examples;
}

/** The typedoc site every README links (`npm run docs` builds it to dist/docs). */
export const TYPEDOC_SITE = 'https://kubelet-ts.github.io/kubelet-ts/';

/** A README's install line: the packages an `npm install` in its first shell fence names. */
export interface InstallLine {
  /** 1-based line of the `npm install` command. */
  line: number;
  /** Package names, in the order given (a `@version` or `@range` suffix removed). */
  packages: string[];
}

/** `@scope/name@^1.2.0` -> `@scope/name`, `yaml@2` -> `yaml`. */
function withoutVersion(spec: string): string {
  const at = spec.indexOf('@', spec.startsWith('@') ? 1 : 0);
  return at === -1 ? spec : spec.slice(0, at);
}

/** The fenced code blocks of a markdown text, and the prose outside them. */
function splitFences(markdown: string): { fences: { line: number; lang: string; body: string[] }[]; prose: string } {
  const fences: { line: number; lang: string; body: string[] }[] = [];
  const prose: string[] = [];
  let open: { marker: string; line: number; lang: string; body: string[] } | undefined;
  for (const [i, text] of markdown.split(/\r?\n/).entries()) {
    const marker = /^\s*(`{3,}|~{3,})\s*(\S*)/.exec(text);
    if (!open) {
      if (marker) open = { marker: marker[1], line: i + 1, lang: marker[2], body: [] };
      else prose.push(text);
    } else if (marker && marker[1][0] === open.marker[0] && marker[1].length >= open.marker.length && marker[2] === '') {
      fences.push({ line: open.line, lang: open.lang, body: open.body });
      open = undefined;
    } else {
      open.body.push(text);
    }
  }
  return { fences, prose: prose.join('\n') };
}

/**
 * The install line of a README: the first ```sh (or bash, shell) fence holding an `npm install <packages...>`
 * (`npm i` too; options such as `--save-dev` are left out). Undefined when there is none.
 */
export function extractInstallLine(markdown: string): InstallLine | undefined {
  for (const fence of splitFences(markdown).fences) {
    if (!/^(sh|bash|shell|console)$/i.test(fence.lang)) continue;
    for (const [j, text] of fence.body.entries()) {
      const command = /^\s*(?:\$\s+)?npm\s+(?:install|i|add)\s+(.+?)\s*$/.exec(text);
      if (!command) continue;
      const packages = command[1]
        .split(/\s+/)
        .filter((arg) => arg && !arg.startsWith('-'))
        .map(withoutVersion);
      if (packages.length > 0) return { line: fence.line + 1 + j, packages };
    }
  }
  return undefined;
}

/** The parts of a README a user needs before the first example, each found or not. */
export interface ReadmeStructure {
  /** The install line (see {@link extractInstallLine}). */
  installLine: boolean;
  /** One paragraph saying the package is ESM (`ESM`, `ES module`) and naming Node 20.18. */
  esmForNode: boolean;
  /** A link to the typedoc site ({@link TYPEDOC_SITE}). */
  typedocLink: boolean;
  /** A markdown table (a header row and its `|---|` separator), outside code fences: the API table. */
  apiTable: boolean;
}

export function readmeStructure(markdown: string): ReadmeStructure {
  const text = splitFences(markdown).prose;
  const paragraphs = text.split(/\n\s*\n/);
  return {
    installLine: extractInstallLine(markdown) !== undefined,
    esmForNode: paragraphs.some((p) => /\bESM\b|\bES modules?\b|\bECMAScript modules?\b/i.test(p) && /\b20\.18\b/.test(p)),
    typedocLink: text.includes(TYPEDOC_SITE),
    apiTable: /^\s*\|.*\|\s*\r?\n\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$/m.test(text),
  };
}
