/**
 * Runs every `bench/*_bench.ts` script in sequence, each as its own `deno run -A` process, and
 * prints their output (each prints a markdown table). Extra arguments are passed to every script.
 *
 * Usage: `deno task bench` or `deno run -A bench/run.ts [args…]`.
 *
 * @module
 */
const dir = new URL(".", import.meta.url);
const scripts: string[] = [];
for await (const entry of Deno.readDir(dir)) {
  if (entry.isFile && entry.name.endsWith("_bench.ts")) scripts.push(entry.name);
}
scripts.sort();
let failed = 0;
for (const name of scripts) {
  console.log(`\n## ${name}\n`);
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(name, dir).pathname, ...Deno.args],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  if (!status.success) {
    failed++;
    console.log(`\n${name} failed (exit ${status.code})`);
  }
}
if (failed > 0) Deno.exitCode = 1;
