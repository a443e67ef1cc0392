// Bundles the kubelet binary into one minified ES module, dist/kubelet.mjs, after tsc has built dist/.
//
// Why: loaded as ~1,100 separate modules (client-node alone is ~2,500 files, most of them API classes the kubelet
// never calls), the kubelet kept every module's source text in its heap (V8 needs it for lazy compilation) and took
// ~0.7 s to load. One tree-shaken, minified module holds a fraction of that text; see the memory bench.
//
// The bundle runs from apps/kubelet/dist inside this repository: each module that finds a file next to itself
// (`new URL('../package.json', import.meta.url)`, the CRI .proto) keeps finding it, because its import.meta.url is
// replaced by its own original location relative to the bundle. gRPC and protobufjs stay in node_modules: they load
// parts of themselves at run time by path.
import { build } from 'esbuild';
import { chmodSync, readFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outfile = `${here}/../dist/kubelet.mjs`;
const outdir = dirname(outfile);

/** import.meta.url of a bundled module: its original file, resolved against the bundle's own URL. */
const moduleUrlPlugin = {
  name: 'module-url',
  setup(builder) {
    builder.onLoad({ filter: /\.[cm]?js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const own = JSON.stringify(relative(outdir, args.path).split('\\').join('/'));
      return { contents: source.replaceAll('import.meta.url', `new URL(${own}, import.meta.url).href`), loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

await build({
  entryPoints: [`${here}/../dist/main.js`],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minify: true,
  // Kept beside the bundle: dist/kubelet.mjs.LEGAL.txt.
  legalComments: 'external',
  // Non-ASCII escaped: V8 then stores the bundle's source as one byte per character, not two.
  charset: 'ascii',
  external: ['@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs', 'protobufjs/*'],
  // Bundled CommonJS modules call require() for Node's built-ins and the externals above.
  banner: { js: "import { createRequire as __kubeletCreateRequire } from 'node:module'; const require = __kubeletCreateRequire(import.meta.url);" },
  plugins: [moduleUrlPlugin],
  logLevel: 'warning',
});
chmodSync(outfile, 0o755);
