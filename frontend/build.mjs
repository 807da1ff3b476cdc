// Bundles the console's third-party libraries into ES modules under static/console/vendor/.
// Run `npm ci && npm run build` here after changing a dependency, then commit the output:
// the controller serves these files itself, so the browser never needs the internet.
import { build } from "esbuild";
import { readFileSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const OUT = "../static/console/vendor";

const result = await build({
  entryPoints: ["src/codemirror.js", "src/chart.js", "src/papaparse.js"],
  outdir: OUT,
  bundle: true,
  format: "esm",
  minify: true,
  target: ["es2020"],
  legalComments: "linked",
  metafile: true,
  logLevel: "info",
});

// The name, version and license text of every package that ended up in a bundle.
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (match) packages.add(match[1]);
}
const sections = [...packages].sort().map((name) => {
  const dir = join("node_modules", name);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const licenseFile = existsSync(dir) && readdirSync(dir).find((f) => /^licen[sc]e/i.test(f));
  const text = licenseFile ? readFileSync(join(dir, licenseFile), "utf8").trim() : `License: ${meta.license}`;
  return `${name} ${meta.version} (${meta.license})\n${"-".repeat(60)}\n${text}\n`;
});
writeFileSync(join(OUT, "LICENSES.txt"), `Third-party code bundled in this directory.\n\n${sections.join("\n")}`);
