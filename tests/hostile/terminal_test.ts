/**
 * A hostile registry chooses the text the CLI would print: titles, annotation keys and values,
 * media types, error bodies. None of it may reach the terminal raw (no ESC, C1, bidirectional
 * or other invisible control character on stdout or stderr); it shows escaped, `--json` keeps it
 * as `\u` escapes, and a title holding such characters names no file.
 *
 * The fake registry serves any manifest (`store.putManifest`); the CLI runs as a child process.
 */
import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, runCli } from "../cli/_cli.ts";
import { InvalidManifestError } from "../../src/errors/kinds.ts";
import { findError } from "../../src/errors/find_error.ts";
import { isPlainFileName, PartedClient, toDirectory, toFile } from "../../src/parted/mod.ts";
import { encodeManifest } from "../../src/parted/manifest.ts";
import { EMPTY_CONFIG_BYTES, OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import type { MemoryStore } from "../../src/testing/memory_store.ts";
import { jsonText, terminalText } from "../../src/registry/untrusted_text.ts";
import { errorLine } from "../../src/cli/words/exit_code.ts";

/** Sets the window title, clears the screen, turns text red, and forges a line of output. */
const TERMINAL_ATTACK = "\x1b]0;owned\x07\x1b[2J\x1b[31mweights\r\nfakeline";
/** The one-byte CSI (C1) and a right-to-left override: `\u202egnp.exe` shows as `exe.png`. */
const C1_AND_BIDI = "\u009b2J \u202egnp.exe";
const HOSTILE_TITLE = `${TERMINAL_ATTACK} ${C1_AND_BIDI} \u2028\ufeff\u200e`;
const HOSTILE_ANNOTATIONS = {
  "org.example.\x1b[2Jkey": "value\x1b]0;owned\x07",
  "org.example.note": "\u202egnp.exe\u009b31m\u2066",
};

// Everything the terminal would obey or hide, listed independently of the code under test;
// `\n` ends the CLI's own lines and is allowed. Then what shows as nothing or a blank: the joiner
// between two Latin letters, Hangul and Braille fillers, no-break and other wide spaces.
const RAW_UNSAFE =
  // deno-lint-ignore no-control-regex
  /[\x00-\x09\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]|[a-z]\u200d[.a-z]|[\u00a0\u034f\u115f\u1160\u2000-\u200a\u2800\u3000\u3164\uffa0\ufffc\uffff\ue000-\uf8ff]/;

function assertClean(text: string, what: string): void {
  const hit = RAW_UNSAFE.exec(text);
  assert(hit === null, `${what} holds U+${hit?.[0].codePointAt(0)?.toString(16)}:\n${text}`);
}

const FILE = new TextEncoder().encode("weights, three parts of them, 40 bytes!");

/** Serves a parted artifact of {@linkcode FILE} (16-byte parts) with `title` and `annotations`. */
function seedArtifact(
  store: MemoryStore,
  repository: string,
  tag: string,
  options: { title?: string; annotations?: Record<string, string> },
): void {
  const partSize = 16;
  const partDigests = [];
  for (let at = 0; at < FILE.length; at += partSize) {
    partDigests.push(store.putBlob(repository, FILE.subarray(at, at + partSize)));
  }
  store.putBlob(repository, EMPTY_CONFIG_BYTES);
  const bytes = encodeManifest({
    partSize,
    fileSize: FILE.length,
    fileDigest: sha256Digest(FILE),
    partDigests,
    ...options,
  });
  store.putManifest(repository, tag, bytes, OCI_MANIFEST_MEDIA_TYPE);
}

/** Serves a hand-written manifest (hostile media types), as another tool could have pushed. */
function seedRawManifest(store: MemoryStore, repository: string, tag: string, json: unknown) {
  const bytes = new TextEncoder().encode(JSON.stringify(json));
  store.putManifest(repository, tag, bytes, OCI_MANIFEST_MEDIA_TYPE);
}

Deno.test("terminalText and jsonText escape every control, bidi and invisible character", () => {
  assertEquals(
    terminalText(HOSTILE_TITLE),
    String
      .raw`\x1b]0;owned\x07\x1b[2J\x1b[31mweights\x0d\x0afakeline \x9b2J \u202egnp.exe \u2028\ufeff\u200e`,
  );
  assertEquals(
    terminalText("a\x7fb\u061c\u200f\u2029\u{e0041}c"),
    String.raw`a\x7fb\u061c\u200f\u2029\u{e0041}c`,
  );
  // Joiners stay: Persian words and emoji sequences need them; so does every ordinary letter.
  const ordinary = "می‌خواهم 👩‍💻 Grüße 模型.bin a\\b";
  assertEquals(terminalText(ordinary), ordinary);
  const json = jsonText({ [HOSTILE_TITLE]: HOSTILE_TITLE, tag: "\u{e0041}" });
  assertClean(json, "jsonText");
  assertEquals(JSON.parse(json), { [HOSTILE_TITLE]: HOSTILE_TITLE, tag: "\u{e0041}" });
  for (const escape of ["\\u001b", "\\u009b", "\\u202e", "\\u2028", "\\ufeff", "\\udb40\\udc41"]) {
    assert(json.includes(escape), `${escape} in ${json}`);
  }
});

Deno.test("the failure line of any error is one line with nothing raw", () => {
  // Library messages hold fixed words only; anything else reaching the report is escaped.
  const line = errorLine(new Error(`refused: ${HOSTILE_TITLE}`));
  assertClean(line, "errorLine");
  assertEquals(line.split("\n").length, 1);
  assert(line.includes(String.raw`\x1b]0;owned\x07\x1b[2J`), line);
});

Deno.test("inspect shows a hostile title and annotations escaped; --json keeps them as \\u escapes", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  seedArtifact(registry.store, "evil/art", "v1", {
    title: HOSTILE_TITLE,
    annotations: HOSTILE_ANNOTATIONS,
  });
  const ref = `${registry.host}/evil/art:v1`;

  const table = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
  assertEquals(table.code, 0, table.stderr);
  assertClean(table.stdout, "inspect stdout");
  assertClean(table.stderr, "inspect stderr");
  const lines = table.stdout.split("\n");
  assertEquals(
    lines[0],
    `name:         ${terminalText(HOSTILE_TITLE)} ` +
      "(not a plain file name: a pull into a directory refuses it)",
  );
  assert(lines[0].includes(String.raw`\x1b]0;owned\x07\x1b[2J`), lines[0]);
  assert(!lines.some((line) => line.startsWith("fakeline")), "no forged output line");
  assert(lines.includes(String.raw`annotation:   org.example.\x1b[2Jkey=value\x1b]0;owned\x07`));
  assert(lines.includes(String.raw`annotation:   org.example.note=\u202egnp.exe\x9b31m\u2066`));

  const json = await runCli(["inspect", "--plain-http", "--json", ref], { tmp: tmp.path });
  assertEquals(json.code, 0, json.stderr);
  assertClean(json.stdout, "inspect --json stdout");
  for (const escape of ["\\u001b]0;owned\\u0007", "\\u009b2J", "\\u202egnp.exe", "\\u2028"]) {
    assert(json.stdout.includes(escape), `${escape} in ${json.stdout}`);
  }
  const description = JSON.parse(json.stdout);
  assertEquals(description.title, HOSTILE_TITLE);
  assertEquals(description.annotations, HOSTILE_ANNOTATIONS);
});

Deno.test("inspect marks and escapes a title that lists like another or looks blank; --json escapes it", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  const titles: [string, string, string][] = [
    ["notes\u200d.txt", String.raw`notes\u200d.txt`, String.raw`notes\u200d.txt`],
    ["\u3164", String.raw`\u3164`, String.raw`\u3164`],
    ["\u2800.bin", String.raw`\u2800.bin`, String.raw`\u2800.bin`],
    ["notes\u00a0.txt", String.raw`notes\xa0.txt`, String.raw`notes\u00a0.txt`],
    ["a\u034fb\ufe0f.bin", String.raw`a\u034fb\ufe0f.bin`, String.raw`a\u034fb\ufe0f.bin`],
  ];
  for (const [i, [title, shown, json]] of titles.entries()) {
    seedArtifact(registry.store, "evil/art", `blank${i}`, {
      title,
      annotations: { "org.example.note": title },
    });
    const ref = `${registry.host}/evil/art:blank${i}`;
    const table = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
    assertEquals(table.code, 0, table.stderr);
    assertClean(table.stdout, `inspect ${shown}`);
    const lines = table.stdout.split("\n");
    assertEquals(
      lines[0],
      `name:         ${shown} (not a plain file name: a pull into a directory refuses it)`,
    );
    assert(lines.includes(`annotation:   org.example.note=${shown}`), table.stdout);
    const described = await runCli(["inspect", "--plain-http", "--json", ref], { tmp: tmp.path });
    assertEquals(described.code, 0, described.stderr);
    assertClean(described.stdout, `inspect --json ${shown}`);
    assert(described.stdout.includes(`"title":"${json}"`), described.stdout);
    assertEquals(JSON.parse(described.stdout).title, title);
  }
  // Joiners that shape a word or an emoji are shown as they are (but name no file).
  seedArtifact(registry.store, "evil/art", "joined", { title: "می‌خواهم 👩‍💻.bin" });
  const joined = await runCli(["inspect", "--plain-http", `${registry.host}/evil/art:joined`], {
    tmp: tmp.path,
  });
  assertEquals(
    joined.stdout.split("\n")[0],
    "name:         می‌خواهم 👩‍💻.bin (not a plain file name: a pull into a directory refuses it)",
  );
});

Deno.test("pull, verify, copy, --debug and --progress over a hostile artifact: nothing raw, no file named by it", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  // Only C1 and bidi: control characters below U+0020 were refused as file names already.
  seedArtifact(registry.store, "evil/art", "v1", {
    title: C1_AND_BIDI,
    annotations: HOSTILE_ANNOTATIONS,
  });
  const ref = `${registry.host}/evil/art:v1`;
  const options = { tmp: tmp.path };
  const into = `${tmp.path}/into`;
  await Deno.mkdir(into);

  const intoDirectory = await runCli(["pull", "--plain-http", ref, into], options);
  assertEquals(intoDirectory.code, 1, intoDirectory.stderr);
  assertEquals(
    failureLines(intoDirectory.stderr)[0],
    "ocipart pull: invalid manifest: annotations: title is not a plain file name",
  );
  assertEquals([...Deno.readDirSync(into)], [], "nothing written");

  const runs = [
    ["pull", "--plain-http", "--debug", "--progress", "plain", ref, `${tmp.path}/a.bin`],
    ["pull", "--plain-http", "--progress", "json", "--json", ref, `${tmp.path}/b.bin`],
    ["verify", "--plain-http", "--debug", ref, `${tmp.path}/a.bin`],
    ["verify", "--plain-http", "--json", ref, `${tmp.path}/a.bin`],
    [
      "copy",
      "--plain-http",
      "--debug",
      "--progress",
      "plain",
      ref,
      `${registry.host}/evil/copy:v1`,
    ],
    ["copy", "--plain-http", "--json", "--progress", "json", ref, `${registry.host}/evil/copy:v2`],
    ["inspect", "--plain-http", "--debug", `${registry.host}/evil/copy:v2`],
  ];
  for (const args of runs) {
    const result = await runCli(args, options);
    assertEquals(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
    assertClean(result.stdout, `${args.join(" ")}: stdout`);
    assertClean(result.stderr, `${args.join(" ")}: stderr`);
  }
  assertEquals(await Deno.readFile(`${tmp.path}/a.bin`), FILE);
  assertEquals(await Deno.readFile(`${tmp.path}/b.bin`), FILE);
});

Deno.test("hostile media types and error bodies never reach stderr raw", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  seedArtifact(registry.store, "evil/art", "v1", {});
  const good = JSON.parse(
    new TextDecoder().decode(registry.store.getManifest("evil/art", "v1")!.bytes),
  );
  const hostile = `${TERMINAL_ATTACK}${C1_AND_BIDI}`;
  seedRawManifest(registry.store, "evil/art", "artifact-type", { ...good, artifactType: hostile });
  seedRawManifest(registry.store, "evil/art", "media-type", { ...good, mediaType: hostile });
  seedRawManifest(registry.store, "evil/art", "layer", {
    ...good,
    layers: [{ ...good.layers[0], mediaType: hostile }, ...good.layers.slice(1)],
  });
  seedRawManifest(registry.store, "evil/art", "config", {
    ...good,
    config: { ...good.config, mediaType: hostile },
  });
  const body = JSON.stringify({ errors: [{ code: hostile, message: hostile, detail: hostile }] });
  registry.fault({
    method: "GET",
    path: /manifests\/missing$/,
    times: Infinity,
    respond: { status: 404, body },
  });
  registry.fault({
    method: "GET",
    path: /manifests\/refused$/,
    times: Infinity,
    respond: {
      status: 401,
      // Latin-1 bytes on the wire: a one-byte CSI and the UTF-8 of U+202E.
      headers: { "www-authenticate": 'Basic realm="\u009b2J\u00e2\u0080\u00ae"' },
      body,
    },
  });
  const expected: [string, number][] = [
    ["artifact-type", 4],
    ["media-type", 4],
    ["layer", 1],
    ["config", 1],
    ["missing", 3],
    ["refused", 6],
  ];
  for (const [tag, code] of expected) {
    for (const json of [[], ["--json"]]) {
      const args = ["inspect", "--plain-http", ...json, `${registry.host}/evil/art:${tag}`];
      const result = await runCli(args, { tmp: tmp.path });
      assertEquals(result.code, code, `${tag}: ${result.stderr}`);
      assertEquals(result.stdout, "");
      assertClean(result.stderr, `${tag}: stderr`);
    }
  }
});

Deno.test("a pull into a directory refuses a title that is not a plain file name, before writing", async () => {
  await using registry = await startFakeRegistry();
  await using tmp = await tempDir();
  using client = new PartedClient({ plainHttp: true });
  const refused = [
    "\u202egnp.exe", // shows as exe.png
    "a\u009bb.bin",
    "line\u2028break.bin",
    "\ufeffbom.bin",
    "zero\u200bwidth.bin",
    "mark\u200e.bin",
    "tag\u{e0041}.bin",
    "notes\u200d.txt", // lists as notes.txt
    "a\u200cb.bin",
    "cgj\u034f.bin",
    "vs\ufe0f.bin",
    "\u3164", // looks blank
    "\u115f.bin",
    "\uffa0.bin",
    "\u2800.bin",
    "obj\ufffc.bin",
    "non\uffff.bin",
    "private\ue000.bin",
    "nbsp\u00a0.bin",
    "em\u2003space.bin",
    "wide\u3000space.bin",
    // A joiner names no file even where it shapes a word or an emoji: a name that looks the
    // same can be written without it.
    "می‌خواهم.bin",
    "👩‍💻.bin",
    ".bashrc",
    "NUL",
    "con.txt",
    "com1.tar.gz",
    "stream.bin:hidden",
    'quote".bin',
    "trailing.",
    "trailing ",
    " leading.bin",
    "...",
    "   ",
    "x".repeat(241),
    "weights.bin.parted-partial",
  ];
  for (const [i, title] of refused.entries()) {
    assert(!isPlainFileName(title), JSON.stringify(title));
    seedArtifact(registry.store, "names/hostile", `t${i}`, { title });
    const err = await assertRejects(() =>
      client.pull(`${registry.host}/names/hostile:t${i}`, toDirectory(tmp.path))
    );
    assertInstanceOf(findError(err, InvalidManifestError), InvalidManifestError, String(err));
    assertEquals([...Deno.readDirSync(tmp.path)], [], `nothing written for ${jsonText(title)}`);
  }
  // Ordinary names of every script still pull into a directory.
  const accepted = [
    "模型 v1.bin",
    "میخواهم.bin",
    "🚀 launch.bin",
    "Grüße-2024.tar.gz",
    "x".repeat(240),
    "CONFIG.bin",
  ];
  for (const [i, title] of accepted.entries()) {
    seedArtifact(registry.store, "names/fine", `t${i}`, { title });
    await client.pull(`${registry.host}/names/fine:t${i}`, toDirectory(tmp.path));
    assertEquals(await Deno.readFile(`${tmp.path}/${title}`), FILE);
  }
  // Into a named file the title is irrelevant.
  await client.pull(`${registry.host}/names/hostile:t0`, toFile(`${tmp.path}/named.bin`));
  assertEquals(await Deno.readFile(`${tmp.path}/named.bin`), FILE);
});
