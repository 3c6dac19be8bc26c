/**
 * A registry names the file of a directory pull (the title annotation): what is already in the
 * directory under that name is never replaced unless asked, and whatever has that name is found
 * before any part is downloaded. The CLI names the path; the library's message never renders
 * the registry's name. Against Distribution behind the fault proxy, which counts blob GETs.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { type FaultProxy, startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { failureLines, runCli } from "../cli/_cli.ts";
import { rawManifest } from "../parted/_helpers.ts";
import { findLeaks } from "../reliability/leak_scan.ts";
import {
  ANNOTATION_TITLE,
  DestinationExistsError,
  fromFile,
  PartedClient,
  PARTIAL_SUFFIX,
  toDirectory,
} from "../../src/parted/mod.ts";
import { findError } from "../../src/errors/find_error.ts";
import type { PullResult } from "../../src/parted/pull.ts";

const SIZE = 3 * 1024 * 1024 + 5;

/**
 * Pushes a file and re-tags its manifest with `title` as the file name (none when undefined), as
 * any tool could.
 */
async function artifactTitled(
  proxy: FaultProxy,
  registryUrl: string,
  dir: string,
  title: string | undefined,
): Promise<{ ref: string; digest: string }> {
  const src = `${dir}/source.bin`;
  const digest = await writePatternFile(src, SIZE, 17);
  using client = new PartedClient({ plainHttp: true });
  await client.push(`${proxy.host}/hostile/dir:base`, fromFile(src), { partSize: 1024 * 1024 });
  const { json } = await rawManifest(registryUrl, "hostile/dir", "base");
  const annotations = json.annotations as Record<string, string>;
  if (title === undefined) delete annotations[ANNOTATION_TITLE];
  else annotations[ANNOTATION_TITLE] = title;
  const tag = `t${Math.floor(Math.random() * 1e9)}`;
  const response = await fetch(`${registryUrl}/v2/hostile/dir/manifests/${tag}`, {
    method: "PUT",
    headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" },
    body: JSON.stringify(json),
  });
  await response.body?.cancel();
  assertEquals(response.status, 201);
  return { ref: `${proxy.host}/hostile/dir:${tag}`, digest };
}

const blobGets = (proxy: FaultProxy) => proxy.count({ method: "GET", route: "blob" });

async function names(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) found.push(entry.name);
  return found.sort();
}

registryTest(
  "hostile title: a file of that name in the directory is refused before any download and named by the CLI; --overwrite replaces it; the path written is printed",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const home = `${tmp.path}/home`;
    await Deno.mkdir(home);
    await Deno.writeTextFile(`${home}/.bashrc`, "alias ll='ls -l'\n");
    await Deno.writeTextFile(`${home}/notes.txt`, "mine\n");
    // A hidden name is never written into a directory, whatever is there.
    const hidden = await artifactTitled(proxy, registry.url, tmp.path, ".bashrc");
    proxy.log.length = 0;
    for (const flags of [[], ["--overwrite"]]) {
      const run = await runCli(["pull", "--plain-http", ...flags, hidden.ref, home], {
        tmp: tmp.path,
      });
      assertEquals(run.code, 1, run.stderr);
      assert(/title is not a plain file name/.test(run.stderr), run.stderr);
    }
    assertEquals(await Deno.readTextFile(`${home}/.bashrc`), "alias ll='ls -l'\n");
    assertEquals(blobGets(proxy), 0, "nothing downloaded");

    const { ref, digest } = await artifactTitled(proxy, registry.url, tmp.path, "notes.txt");
    proxy.log.length = 0;
    const refused = await runCli(["pull", "--plain-http", ref, home], { tmp: tmp.path });
    assertEquals(refused.code, 1, refused.stderr);
    assertEquals(refused.stdout, "");
    const [error, why] = failureLines(refused.stderr);
    assert(error.includes(`${home}/notes.txt`), `the path is named: ${error}`);
    assert(/already exists; refusing to replace it without overwrite/.test(error), error);
    assertEquals(why, "ocipart pull: no sentinel matched (exit 1)");
    assertEquals(await Deno.readTextFile(`${home}/notes.txt`), "mine\n");
    assertEquals(await names(home), [".bashrc", "notes.txt"], "no partial left behind");
    assertEquals(blobGets(proxy), 0, "nothing downloaded");

    const replaced = await runCli(["pull", "--plain-http", "--overwrite", ref, home], {
      tmp: tmp.path,
    });
    assertEquals(replaced.code, 0, replaced.stderr);
    assertEquals(replaced.stdout, `${home}/notes.txt\n`, "the path written, alone on stdout");
    assertEquals(await sha256File(`${home}/notes.txt`), digest);

    // --json has the path written and what the pull took.
    const other = `${tmp.path}/other`;
    await Deno.mkdir(other);
    const json = await runCli(["pull", "--plain-http", "--json", ref, other], { tmp: tmp.path });
    assertEquals(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout) as PullResult & { destination: string };
    assertEquals([result.destination, result.path], [other, `${other}/notes.txt`]);
    assertEquals([result.size, result.bytesFetched, result.partsFetched], [SIZE, SIZE, 4]);
  },
);

registryTest(
  "hostile title: one that lists like a file already there (a zero-width joiner) or looks blank is refused before any download, with or without --overwrite",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const home = `${tmp.path}/home`;
    await Deno.mkdir(home);
    await Deno.writeTextFile(`${home}/notes.txt`, "mine\n");
    // `ls` shows the first as notes.txt; the second as a blank name.
    for (const title of ["notes\u200d.txt", "\u3164", "notes\u00a0.txt", "\u2800.bin"]) {
      const { ref } = await artifactTitled(proxy, registry.url, tmp.path, title);
      for (const flags of [[], ["--overwrite"], ["--json"]]) {
        proxy.log.length = 0;
        const run = await runCli(["pull", "--plain-http", ...flags, ref, home], {
          tmp: tmp.path,
        });
        assertEquals(run.code, 1, run.stderr);
        assertEquals(run.stdout, "");
        if (flags[0] === "--json") {
          // A failure under --json is one object: the same first sentence, escaped for JSON.
          const failure = JSON.parse(run.stderr);
          assertEquals([failure.exitCode, failure.class], [1, "NoFileNameError"]);
          assertEquals(
            failure.message,
            `the title of ${ref} is not a plain file name (hidden, blank-looking, look-alike ` +
              `or reserved characters, or a leading - or ~), so nothing was written to ${home}`,
          );
          assertEquals(blobGets(proxy), 0, `${JSON.stringify(title)}: nothing downloaded`);
          continue;
        }
        assertEquals(run.stderr.split("\n"), [
          `ocipart pull: the title of ${ref} is not a plain file name (hidden, blank-looking, ` +
          `look-alike or reserved characters, or a leading - or ~), so nothing was written to ` +
          home,
          `ocipart pull: hint: pull it into a file you name (ocipart pull ${ref} ${home}/<name>); ` +
          `ocipart inspect ${ref} shows the title escaped`,
          "ocipart pull: invalid manifest: annotations: title is not a plain file name",
          "ocipart pull: no sentinel matched (exit 1)",
          "",
        ]);
        assertEquals(blobGets(proxy), 0, `${JSON.stringify(title)}: nothing downloaded`);
        assertEquals(await names(home), ["notes.txt"], "no second file, no partial");
      }
    }
    assertEquals(await Deno.readTextFile(`${home}/notes.txt`), "mine\n");
  },
);

registryTest(
  "no title: a pull into a directory says the artifact names no file, before any download; into a named file it pulls",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const { ref, digest } = await artifactTitled(proxy, registry.url, tmp.path, undefined);
    const into = `${tmp.path}/into`;
    await Deno.mkdir(into);
    proxy.log.length = 0;
    const run = await runCli(["pull", "--plain-http", ref, into], { tmp: tmp.path });
    assertEquals(run.code, 1, run.stderr);
    assertEquals(run.stderr.split("\n"), [
      `ocipart pull: ${ref} has no title to name a file in ${into}`,
      `ocipart pull: hint: pull it into a file you name (ocipart pull ${ref} ${into}/<name>)`,
      "ocipart pull: invalid manifest: annotations: no title to name the file; pull into a file",
      "ocipart pull: no sentinel matched (exit 1)",
      "",
    ]);
    assertEquals(blobGets(proxy), 0, "nothing downloaded");
    assertEquals(await names(into), []);
    const named = await runCli(["pull", "--plain-http", ref, `${into}/w.bin`], { tmp: tmp.path });
    assertEquals(named.code, 0, named.stderr);
    assertEquals(await sha256File(`${into}/w.bin`), digest);
  },
);

registryTest(
  "hostile title: a directory, a symbolic link (dangling too) or a FIFO of that name is refused before any download, even with --overwrite, and left as it was",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const { ref } = await artifactTitled(proxy, registry.url, tmp.path, "taken");
    const victim = `${tmp.path}/victim.txt`;
    await Deno.writeTextFile(victim, "precious");
    const cases: [string, (path: string) => Promise<void>][] = [
      ["a directory", (path) => Deno.mkdir(path)],
      ["a symbolic link", (path) => Deno.symlink(victim, path)],
      ["a symbolic link", (path) => Deno.symlink(`${tmp.path}/nowhere`, path)],
      ["a special file", async (path) => {
        const made = await new Deno.Command("mkfifo", { args: [path] }).output();
        assert(made.success, "mkfifo");
      }],
    ];
    for (const [i, [what, make]] of cases.entries()) {
      const dir = `${tmp.path}/d${i}`;
      await Deno.mkdir(dir);
      await make(`${dir}/taken`);
      const before = await Deno.lstat(`${dir}/taken`);
      for (const flags of [[], ["--overwrite"]]) {
        proxy.log.length = 0;
        const result = await runCli(["pull", "--plain-http", ...flags, ref, dir], {
          tmp: tmp.path,
        });
        assertEquals(result.code, 1, result.stderr);
        const [error] = failureLines(result.stderr);
        assert(error.includes(`${what} of that name already exists`), error);
        assertEquals(result.stderr.split("\n").slice(0, 2), [
          `ocipart pull: cannot pull into ${dir}: ${dir}/taken already exists (${what})`,
          "ocipart pull: hint: it is never replaced, even with --overwrite: move it away, or " +
          "pull into another directory",
        ]);
        assert(error.includes(`${dir}/taken`), error);
        assertEquals(blobGets(proxy), 0, `${what}: nothing downloaded`);
        assertEquals(await names(dir), ["taken"]);
        assertEquals((await Deno.lstat(`${dir}/taken`)).mtime, before.mtime);
      }
    }
    assertEquals(await Deno.readTextFile(victim), "precious");
  },
);

registryTest(
  "hostile title: the library refuses with DestinationExistsError whose message never renders the registry's name; a resume is not an overwrite",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const title = "planted-secret-name.bin";
    const { ref, digest } = await artifactTitled(proxy, registry.url, tmp.path, title);
    const dir = `${tmp.path}/models`;
    await Deno.mkdir(dir);
    await Deno.writeTextFile(`${dir}/${title}`, "mine");
    using client = new PartedClient({ plainHttp: true });

    const err = await client.pull(ref, toDirectory(dir)).then(() => undefined, (e) => e);
    const refused = findError(err, DestinationExistsError);
    assert(refused !== undefined, `${err}`);
    assertEquals([refused.path, refused.existing, refused.code], [
      `${dir}/${title}`,
      "file",
      "ERR_DESTINATION_EXISTS",
    ]);
    assert(!String(err).includes("planted"), String(err));
    assertEquals(findLeaks(String(err), [title, dir]), []);
    assertEquals(blobGets(proxy), 0);

    // An interrupted pull left `<title>.parted-partial` and no file: the rerun resumes it.
    await Deno.remove(`${dir}/${title}`);
    const stop = new AbortController();
    await client.pull(ref, toDirectory(dir), {
      workers: 1,
      signal: stop.signal,
      onProgress: (s) => s.completedBytes > 0 && stop.abort(new Error("stop")),
    }).catch(() => {});
    assertEquals(await names(dir), [`${title}${PARTIAL_SUFFIX}`]);
    const resumed = await client.pull(ref, toDirectory(dir));
    assertEquals(resumed.path, `${dir}/${title}`);
    assert(resumed.partsResumed > 0, "the partial was resumed");
    assertEquals(await sha256File(`${dir}/${title}`), digest);
  },
);

registryTest(
  "hostile title: a file of that name that appears during the pull is not replaced at the commit; the partial is kept and --overwrite finishes from it",
  async () => {
    await using registry = await startRegistry();
    await using proxy = await startFaultProxy({ target: registry.url });
    await using tmp = await tempDir();
    const { ref, digest } = await artifactTitled(proxy, registry.url, tmp.path, "late.bin");
    const dir = `${tmp.path}/models`;
    await Deno.mkdir(dir);
    using client = new PartedClient({ plainHttp: true });
    let planted = false;
    const err = await client.pull(ref, toDirectory(dir), {
      onProgress: (s) => {
        if (s.phase !== "downloading" || planted) return;
        planted = true;
        Deno.writeTextFileSync(`${dir}/late.bin`, "someone else's");
      },
    }).then(() => undefined, (e) => e);
    assert(planted);
    assertEquals(findError(err, DestinationExistsError)?.path, `${dir}/late.bin`, `${err}`);
    assertEquals(await Deno.readTextFile(`${dir}/late.bin`), "someone else's");
    assertEquals(await names(dir), ["late.bin", `late.bin${PARTIAL_SUFFIX}`]);

    proxy.log.length = 0;
    const result = await client.pull(ref, toDirectory(dir, { overwrite: true }));
    assertEquals([result.partsResumed, blobGets(proxy)], [4, 0], "finished from the partial");
    assertEquals(await sha256File(`${dir}/late.bin`), digest);
  },
);

Deno.test("toDirectory: overwrite must be a boolean", () => {
  let message = "";
  try {
    toDirectory("models", { overwrite: "yes" as unknown as boolean });
  } catch (err) {
    message = err instanceof TypeError ? err.message : "";
  }
  assertEquals(message, "toDirectory: overwrite must be a boolean, not yes");
  assertEquals(toDirectory("models").overwrite, false);
});
