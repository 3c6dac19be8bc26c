/**
 * Builds the npm package (`deno task npm`): `dist/npm/` and its tarball `dist/<name>-<v>.tgz`.
 *
 * - The library: every entry point of `deno.json`'s `exports` as ES modules for Node 20
 *   (`esm/`), sharing one copy of each module (so `findError(err, NotFoundError)` matches
 *   across subpaths), with a declaration file per source file (`types/`).
 * - The CLI: `bin/ocipart.mjs`, one file, with `src/cli/node_deno.ts` standing in for the
 *   global `Deno` the CLI calls; `esm/cli.mjs` is the same for `import { main } from ".../cli"`.
 * - `smol-toml`, the one dependency, is declared and also bundled in the tarball (copied from
 *   Deno's cache), so the package installs without network.
 *
 * esbuild lowers the syntax Node 20 lacks (`using`, `await using`); TypeScript writes the
 * declarations file by file (`transpileDeclaration`: the code has no slow types, so no type
 * check is needed). Both are pinned here and in `deno.lock`.
 *
 * @module
 */
import * as esbuild from "npm:esbuild@0.25.5";
import ts from "npm:typescript@5.9.3";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const OUT = join(ROOT, "dist/npm");

interface DenoJson {
  name: string;
  version: string;
  license: string;
  exports: Record<string, string>;
  imports: Record<string, string>;
}

const config: DenoJson = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
const toml = /^npm:(smol-toml)@(.+)$/.exec(config.imports["smol-toml"])!;
const [dependency, dependencyVersion] = [toml[1], toml[2]];

/** `./src/parted/mod.ts` → `src/parted/mod`: the path of its output, without extension. */
function outName(source: string): string {
  return source.replace(/^\.\//, "").replace(/\.ts$/, "");
}

const shared: esbuild.BuildOptions = {
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: [dependency],
  logLevel: "warning",
};

async function buildLibrary(): Promise<void> {
  const entryPoints = Object.values(config.exports)
    .filter((source) => source !== "./cli.ts")
    .map((source) => ({ in: join(ROOT, source), out: outName(source) }));
  await esbuild.build({
    ...shared,
    entryPoints,
    outdir: join(OUT, "esm"),
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    outExtension: { ".js": ".mjs" },
  });
}

async function buildCli(): Promise<void> {
  const cli = {
    ...shared,
    entryPoints: [join(ROOT, "cli.ts")],
    inject: [join(ROOT, "src/cli/node_deno.ts")],
  };
  await esbuild.build({
    ...cli,
    outfile: join(OUT, "bin/ocipart.mjs"),
    define: { "import.meta.main": "true" },
    banner: { js: "#!/usr/bin/env node" },
  });
  await esbuild.build({
    ...cli,
    outfile: join(OUT, "esm/cli.mjs"),
    define: { "import.meta.main": "false" },
  });
}

async function* sources(dir: string): AsyncIterable<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* sources(path);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) yield path;
  }
}

/** Writes `types/<path>.d.ts` for each source file; imports of `.ts` files name `.js` ones. */
async function buildTypes(): Promise<void> {
  const files = [join(ROOT, "mod.ts"), join(ROOT, "cli.ts")];
  for await (const path of sources(join(ROOT, "src"))) {
    if (!path.endsWith("node_deno.ts")) files.push(path); // the CLI's Node build only
  }
  const problems: string[] = [];
  for (const path of files) {
    const result = ts.transpileDeclaration(await Deno.readTextFile(path), {
      fileName: path,
      compilerOptions: {
        allowImportingTsExtensions: true,
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        lib: ["lib.esnext.d.ts"],
      },
      reportDiagnostics: true,
    });
    for (const d of result.diagnostics ?? []) {
      const line = d.file && d.start !== undefined
        ? `:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}`
        : "";
      const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
      problems.push(`${relative(ROOT, path)}${line}: ${message}`);
    }
    const text = result.outputText.replace(/(["'])(\.\.?\/[^"']+)\.ts\1/g, "$1$2.js$1");
    const target = join(OUT, "types", relative(ROOT, path).replace(/\.ts$/, ".d.ts"));
    await Deno.mkdir(dirname(target), { recursive: true });
    await Deno.writeTextFile(target, text);
  }
  if (problems.length > 0) throw new Error(`declarations:\n${problems.join("\n")}`);
}

function packageJson(): Record<string, unknown> {
  const exports: Record<string, { types: string; import: string }> = {};
  for (const [subpath, source] of Object.entries(config.exports)) {
    const name = outName(source);
    exports[subpath] = { types: `./types/${name}.d.ts`, import: `./esm/${name}.mjs` };
  }
  return {
    name: config.name,
    version: config.version,
    description:
      "Move very large files and blobs through OCI registries: parted, resumable, verified.",
    license: config.license,
    type: "module",
    bin: { ocipart: "bin/ocipart.mjs" },
    exports,
    engines: { node: ">=20" },
    dependencies: { [dependency]: dependencyVersion },
    // In the tarball too: it installs without network.
    bundleDependencies: [dependency],
    files: ["bin/", "esm/", "types/", "README.md", "LICENSE", "CHANGELOG.md"],
    keywords: ["oci", "registry", "large-files", "docker", "distribution"],
  };
}

/** The dependency's files, from Deno's npm cache (filled by `deno install` or any run). */
async function copyDependency(): Promise<void> {
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  const npmCache: string = JSON.parse(new TextDecoder().decode(info.stdout)).npmCache;
  const from = join(npmCache, "registry.npmjs.org", dependency, dependencyVersion);
  const to = join(OUT, "node_modules", dependency);
  await Deno.mkdir(to, { recursive: true });
  const cp = await new Deno.Command("cp", { args: ["-R", `${from}/.`, to] }).output();
  if (!cp.success) throw new Error(`cannot copy ${dependency} from Deno's cache: ${from}`);
}

async function pack(): Promise<string> {
  const output = await new Deno.Command("npm", {
    args: ["pack", "--pack-destination", "..", "--json"],
    cwd: OUT,
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error("npm pack failed");
  return join(ROOT, "dist", JSON.parse(new TextDecoder().decode(output.stdout))[0].filename);
}

await Deno.remove(OUT, { recursive: true }).catch(() => {});
await Deno.mkdir(OUT, { recursive: true });
await Promise.all([buildLibrary(), buildCli(), buildTypes()]);
await esbuild.stop();
await Deno.chmod(join(OUT, "bin/ocipart.mjs"), 0o755);
await Deno.writeTextFile(join(OUT, "package.json"), JSON.stringify(packageJson(), null, 2) + "\n");
for (const file of ["README.md", "LICENSE", "CHANGELOG.md"]) {
  await Deno.copyFile(join(ROOT, file), join(OUT, file));
}
await copyDependency();
console.log(relative(ROOT, await pack()));
