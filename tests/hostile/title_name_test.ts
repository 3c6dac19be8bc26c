/**
 * Titles that would name a file that looks like something else in the user's directory: a
 * leading `-` (a later `rm *` there reads `-rf` as an option) or `~`, characters drawn like a
 * slash, Cyrillic letters among Latin ones, and a second normalization form of a name. A pull
 * into a directory refuses them before anything is written, and says how to name the file.
 */
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { type FakeRegistry, startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "../cli/_cli.ts";
import { ANNOTATION_TITLE, fromFile, PartedClient, toDirectory } from "../../src/parted/mod.ts";
import { OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";

const LOOKALIKES: Record<string, string> = {
  "an option": "-rf",
  "a home directory": "~",
  "a fullwidth slash": "a\uff0fb.bin",
  "a division slash": "a\u2215b.bin",
  "a fraction slash": "etc\u2044passwd",
  "a fullwidth backslash": "a\uff3cb.bin",
  "Cyrillic among Latin": "p\u0430yp\u0430l.bin",
  "a Cyrillic stem before a Latin letter": "\u0440\u0430\u0443\u0440\u0430l.bin",
  "a decomposed accent (NFD)": "e\u0301cole.bin",
};

/** The registry's `:v1` re-tagged as `:<tag>` with `title`. */
function retitle(registry: FakeRegistry, tag: string, title: string): void {
  const stored = registry.store.getManifest("org/w", "v1")!;
  const json = JSON.parse(new TextDecoder().decode(stored.bytes));
  json.annotations = { ...json.annotations, [ANNOTATION_TITLE]: title };
  const bytes = new TextEncoder().encode(JSON.stringify(json));
  registry.store.putManifest("org/w", tag, bytes, OCI_MANIFEST_MEDIA_TYPE);
}

async function setup() {
  const registry = await startFakeRegistry();
  const dir = await tempDir();
  await writePatternFile(`${dir.path}/w.bin`, 10_000);
  using pusher = new PartedClient({ plainHttp: true });
  await pusher.push(`${registry.host}/org/w:v1`, fromFile(`${dir.path}/w.bin`));
  const out = `${dir.path}/out`;
  await Deno.mkdir(out);
  return {
    registry,
    dir,
    out,
    async [Symbol.asyncDispose]() {
      await registry.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

Deno.test("hostile titles: look-alike names are refused before anything is written; plain ones pass", async () => {
  await using env = await setup();
  using client = new PartedClient({ plainHttp: true });
  for (const [what, title] of Object.entries(LOOKALIKES)) {
    const tag = `t${Object.keys(LOOKALIKES).indexOf(what)}`;
    retitle(env.registry, tag, title);
    const err = await assertRejects(() =>
      client.pull(`${env.registry.host}/org/w:${tag}`, toDirectory(env.out))
    );
    assert(/title is not a plain file name/.test((err as Error).message), `${what}: ${err}`);
    assertEquals([...Deno.readDirSync(env.out)], [], `nothing written for ${what}`);
  }
  // Names in one script (or Latin with Japanese) and the composed form are plain names.
  for (const [i, title] of ["модель.bin", "école.bin", "モデルv2.bin", "x-1.bin"].entries()) {
    retitle(env.registry, `ok${i}`, title);
    await client.pull(`${env.registry.host}/org/w:ok${i}`, toDirectory(env.out));
    assert(Deno.statSync(`${env.out}/${title}`).isFile, title);
  }
});

Deno.test("hostile titles: the CLI refuses a title of -rf and says how to name the file", async () => {
  await using env = await setup();
  retitle(env.registry, "dash", "-rf");
  const ref = `${env.registry.host}/org/w:dash`;
  const result = await runCli(
    ["pull", "--plain-http", "--progress", "none", ref, env.out],
    { tmp: env.dir.path },
  );
  assertEquals(result.code, 1, result.stderr);
  const [sentence, hint] = result.stderr.split("\n");
  assertStringIncludes(sentence, `the title of ${ref} is not a plain file name`);
  assertStringIncludes(
    hint,
    `pull it into a file you name (ocipart pull ${ref} ${env.out}/<name>)`,
  );
  assertEquals([...Deno.readDirSync(env.out)], []);
});

Deno.test("hostile titles: push records a decomposed file name in its NFC form", async () => {
  await using env = await setup();
  const nfd = `${env.dir.path}/e\u0301cole.bin`;
  await Deno.copyFile(`${env.dir.path}/w.bin`, nfd);
  using client = new PartedClient({ plainHttp: true });
  await client.push(`${env.registry.host}/org/w:nfd`, fromFile(nfd));
  const description = await client.inspect(`${env.registry.host}/org/w:nfd`);
  assertEquals(description.title, "\u00e9cole.bin");
});

Deno.test("hostile titles: inspect shows an escaped ESC and a literal backslash-x1b differently", async () => {
  await using env = await setup();
  retitle(env.registry, "esc", "a\x1bb.bin");
  retitle(env.registry, "literal", "a\\x1bb.bin");
  const names: string[] = [];
  for (const tag of ["esc", "literal"]) {
    const result = await runCli(
      ["inspect", "--plain-http", `${env.registry.host}/org/w:${tag}`],
      { tmp: env.dir.path },
    );
    assertEquals(result.code, 0, result.stderr);
    names.push(result.stdout.split("\n")[0]);
  }
  assertEquals(names, [
    "name:         a\\x1bb.bin (not a plain file name: a pull into a directory refuses it)",
    "name:         a\\\\x1bb.bin (not a plain file name: a pull into a directory refuses it)",
  ]);
});
