// proto-loader-gen-types writes extensionless relative imports; NodeNext ESM needs explicit `.js`.
import { readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.ts')) {
      const text = readFileSync(path, 'utf8');
      const fixed = text.replace(/from '(\.{1,2}\/[^']+?)(?<!\.js)'/g, "from '$1.js'");
      if (fixed !== text) writeFileSync(path, fixed);
    }
  }
}
walk(new URL('../src/generated', import.meta.url).pathname);
