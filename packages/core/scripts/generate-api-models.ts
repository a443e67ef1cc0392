// Writes src/api-models.generated.ts: the attribute maps of the client-node models the kubelet reads and writes
// (the closure of the root kinds below), so core can convert them to and from wire JSON exactly as client-node's
// ObjectSerializer does without loading client-node (~0.7 s and ~75 MiB at import).
//
// Run after upgrading @kubernetes/client-node: `npm run generate -w @kubelet-ts/core`. The core test
// api-serializer.test.ts fails when the committed table no longer matches the installed client-node.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderApiModels } from './api-models.js';

const out = fileURLToPath(new URL('../src/api-models.generated.ts', import.meta.url));
writeFileSync(out, await renderApiModels());
console.log(`wrote ${out}`);
