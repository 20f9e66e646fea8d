// Bundles the widget front ends with esbuild.
//
// Every top-level file js/src/<name>.js is one widget's entry point and becomes the self-contained
// ES module xprof_widgets/static/<name>.js (anywidget's `_esm`). Folders under js/src/ (lib/,
// charts/, trace_viewer/, ...) hold the modules those entries import. An import of
// "./x.js?worker" is x.js bundled on its own into a string (the code of a Web Worker the view
// starts from a Blob URL): anywidget loads one file per widget, so no worker file is served.
//
//   node build.mjs                       build every entry into xprof_widgets/static/
//   node build.mjs IN.js=OUT.js [...]    build the given entries only (the e2e tests' echo widget)
import { readdirSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, "src");
const staticDir = resolve(here, "..", "xprof_widgets", "static");

function defaultEntries() {
  return readdirSync(srcDir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".js"))
    .map((e) => [join(srcDir, e.name), join(staticDir, e.name)]);
}

function explicitEntries(args) {
  return args.map((arg) => {
    const [input, output] = arg.split("=");
    if (!input || !output) throw new Error(`expected IN.js=OUT.js, got ${arg}`);
    return [resolve(input), resolve(output)];
  });
}

const WORKER_OPTIONS = { bundle: true, format: "iife", target: "es2020", minify: true, legalComments: "none", write: false };

/** "./x.js?worker" imports resolve to x.js's own bundle as a string. */
const workerText = {
  name: "worker-text",
  setup(build) {
    build.onResolve({ filter: /\?worker$/ }, (args) => ({
      path: resolve(args.resolveDir, args.path.replace(/\?worker$/, "")), namespace: "worker-text",
    }));
    build.onLoad({ filter: /.*/, namespace: "worker-text" }, async (args) => {
      const result = await esbuild.build({ ...WORKER_OPTIONS, entryPoints: [args.path] });
      return { contents: result.outputFiles[0].text, loader: "text", watchFiles: [args.path] };
    });
  },
};

const args = process.argv.slice(2);
const entries = args.length ? explicitEntries(args) : defaultEntries();
for (const [input, output] of entries) {
  mkdirSync(dirname(output), { recursive: true });
  await esbuild.build({
    entryPoints: [input],
    outfile: output,
    bundle: true,
    format: "esm",
    target: "es2020",
    minify: true,
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
    plugins: [workerText],
  });
  console.log(`built ${output}`);
}
if (!entries.length) console.log("no entry points in js/src/*.js");
