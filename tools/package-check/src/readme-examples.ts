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
