/**
 * The points of JSR's package score that can be checked before publishing
 * (docs/library.md#jsr-score): a README with an example, module docs with an example on every
 * entry point of `deno.json`, every exported symbol documented (`deno doc --lint`), and no slow
 * types (`deno publish --dry-run`).
 */
import { assertEquals, assertMatch } from "../fixtures/assert.ts";
import { PROJECT_ROOT } from "../cli/_cli.ts";

const config = JSON.parse(await Deno.readTextFile(`${PROJECT_ROOT}deno.json`));
const entryPoints: string[] = Object.values(config.exports);

async function deno(args: string[]): Promise<{ code: number; output: string }> {
  const result = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: PROJECT_ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: result.code,
    output: decoder.decode(result.stdout) + decoder.decode(result.stderr),
  };
}

Deno.test("jsr score: every entry point opens with module docs that show an example", async () => {
  for (const entry of entryPoints) {
    const text = await Deno.readTextFile(`${PROJECT_ROOT}${entry}`);
    const docs = /^\/\*\*([\s\S]*?)\*\//.exec(text.trimStart())?.[1] ?? "";
    assertMatch(docs, /@module/, `${entry}: no module doc first`);
    assertMatch(docs, /```(ts|sh)\n/, `${entry}: the module doc has no example`);
  }
});

Deno.test("jsr score: the README shows an example", async () => {
  const readme = await Deno.readTextFile(`${PROJECT_ROOT}README.md`);
  assertMatch(readme, /```ts\n[\s\S]*from "@ocipart\/ocipart"/);
});

Deno.test("jsr score: every exported symbol is documented", async () => {
  const lint = await deno(["doc", "--lint", ...entryPoints]);
  assertEquals(lint.code, 0, lint.output);
});

Deno.test("jsr score: no slow types, and the package publishes", async () => {
  const publish = await deno(["publish", "--dry-run", "--allow-dirty"]);
  assertEquals(publish.code, 0, publish.output);
  assertMatch(publish.output, /Dry run complete/);
});
