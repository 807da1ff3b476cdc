// Bundles the console's third-party libraries into ES modules under static/console/vendor/.
// Run `npm ci && npm run build` here after changing a dependency, then commit the output:
// the controller serves these files itself, so the browser never needs the internet.
import { build } from "esbuild";

await build({
  entryPoints: ["src/codemirror.js", "src/chart.js", "src/papaparse.js"],
  outdir: "../static/console/vendor",
  bundle: true,
  format: "esm",
  minify: true,
  target: ["es2020"],
  legalComments: "linked",
  logLevel: "info",
});
