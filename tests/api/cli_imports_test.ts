/**
 * The CLI is a user of the package: `cli.ts` and every file under `src/cli/` import only the
 * package's entry points (the files `deno.json` exports), files of the CLI itself, and the
 * runtime's or npm's modules.
 */
import { assertEquals } from "../fixtures/assert.ts";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), "../.."));

async function entryPoints(): Promise<Set<string>> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))) as {
    exports: Record<string, string>;
  };
  return new Set(Object.values(config.exports).map((path) => normalize(path)));
}

async function* cliFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(join(ROOT, dir))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* cliFiles(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

/** The relative specifiers of `source`'s static and dynamic imports and re-exports. */
function relativeSpecifiers(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;
  // Example code inside JSDoc imports the package by name; only code lines count.
  const code = source.split("\n").filter((line) => !/^\s*\*/.test(line)).join("\n");
  for (const match of code.matchAll(pattern)) found.push(match[1]);
  return found;
}

Deno.test("the CLI imports only the package's entry points and its own files", async () => {
  const entries = await entryPoints();
  const files = ["cli.ts"];
  for await (const file of cliFiles("src/cli")) files.push(file);
  const outside: string[] = [];
  for (const file of files) {
    const source = await Deno.readTextFile(join(ROOT, file));
    for (const specifier of relativeSpecifiers(source)) {
      const target = relative(ROOT, join(ROOT, dirname(file), specifier));
      if (entries.has(target) || target.startsWith("src/cli/")) continue;
      outside.push(`${file} → ${target}`);
    }
  }
  assertEquals(outside, []);
});

Deno.test("the scan sees an import that goes around the entry points", () => {
  const source = 'import { a } from "../registry/reference.ts";\nconst b = await import("./x.ts");';
  assertEquals(relativeSpecifiers(source), ["../registry/reference.ts", "./x.ts"]);
});
