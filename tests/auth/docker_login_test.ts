/**
 * Saving and erasing a login in the docker configuration: the file's other keys survive, the
 * file is replaced atomically with mode 0600, a malformed file is never overwritten, and a
 * configured helper receives the credential instead of the file.
 */
import { assert, assertEquals, assertRejects, assertStrictEquals } from "../fixtures/assert.ts";
import { eraseDockerLogin, saveDockerLogin } from "../../src/auth/docker_login.ts";
import { dockerConfigCredentials } from "../../src/auth/docker_config.ts";
import { CredentialError } from "../../src/errors/kinds.ts";
import { withPathEntry } from "../fixtures/path_env.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { HELPER_OS, killAll, waitForText, waitGone, writeHelper } from "./_helper_scripts.ts";

const CREDENTIAL = { username: "ci", password: "pa:ss wörd" };

Deno.test("saveDockerLogin keeps other keys, writes 0600, and the source reads it back", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/nested/dir/config.json`;
  const first = await saveDockerLogin("Registry.Example:5000", CREDENTIAL, { configPath });
  assertEquals(first, {
    registry: "registry.example:5000",
    configPath,
    helper: undefined,
    savedIn: "auths",
    removedFrom: [],
  });
  assertStrictEquals((await Deno.stat(configPath)).mode! & 0o777, 0o600);
  const other = { auths: { "a.example": { auth: btoa("x:y"), email: "kept" } }, psFormat: "t" };
  await Deno.writeTextFile(configPath, JSON.stringify(other));
  // The mode of an existing file is the user's choice, and is kept (as docker does).
  await Deno.chmod(configPath, 0o640);
  await saveDockerLogin("registry.example:5000", CREDENTIAL, { configPath });
  assertStrictEquals((await Deno.stat(configPath)).mode! & 0o777, 0o640);
  const saved = JSON.parse(await Deno.readTextFile(configPath));
  assertStrictEquals(saved.psFormat, "t");
  assertEquals(saved.auths["a.example"], other.auths["a.example"]);
  const source = dockerConfigCredentials({ configPath });
  assertEquals(await source.get("registry.example:5000"), CREDENTIAL);

  await eraseDockerLogin("registry.example:5000", { configPath });
  assertEquals(JSON.parse(await Deno.readTextFile(configPath)), other);
  assertEquals(await source.get("registry.example:5000"), {});
  assertEquals(
    (await Array.fromAsync(Deno.readDir(`${tmp.path}/nested/dir`))).map((e) => e.name),
    ["config.json"],
  );
});

Deno.test("a malformed configuration is refused and left as it was", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  await Deno.writeTextFile(configPath, '{"auths": [1, 2');
  await assertRejects(saveDockerLogin("r.example", CREDENTIAL, { configPath }), (err: unknown) => {
    assert(err instanceof CredentialError);
    assert(!String((err as Error).message).includes("pa:ss"));
    return true;
  });
  assertStrictEquals(await Deno.readTextFile(configPath), '{"auths": [1, 2');
});

Deno.test("with credsStore the helper stores and erases; the file keeps no secret", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  await Deno.writeTextFile(
    configPath,
    JSON.stringify({ credsStore: "vault", credHelpers: { "gh.example": "gh" } }),
  );
  const calls: unknown[] = [];
  const changeHelper = (name: string, server: string, credential: unknown) => {
    calls.push([name, server, credential]);
    return Promise.resolve();
  };
  const saved = await saveDockerLogin("r.example", CREDENTIAL, { configPath, changeHelper });
  assertStrictEquals(saved.helper, "vault");
  await saveDockerLogin("gh.example", CREDENTIAL, { configPath, changeHelper });
  await eraseDockerLogin("r.example", { configPath, changeHelper });
  assertEquals(calls, [
    ["vault", "r.example", CREDENTIAL],
    ["gh", "gh.example", CREDENTIAL],
    ["vault", "r.example", undefined],
  ]);
  assertEquals(JSON.parse(await Deno.readTextFile(configPath)), {
    credsStore: "vault",
    credHelpers: { "gh.example": "gh" },
  });
});

/** base64 of the UTF-8 bytes of `text`, as the `auth` field holds it. */
function basic(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

/** The names in `dir`, sorted. */
async function names(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name).sort();
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(path));
}

Deno.test("a configuration that is a symbolic link is written through to its target", async () => {
  await using tmp = await tempDir();
  await Deno.mkdir(`${tmp.path}/dotfiles`);
  await Deno.mkdir(`${tmp.path}/docker`);
  const target = `${tmp.path}/dotfiles/docker.json`;
  const configPath = `${tmp.path}/docker/config.json`;
  await Deno.writeTextFile(target, JSON.stringify({ psFormat: "t" }));
  await Deno.chmod(target, 0o640);
  await Deno.symlink("../dotfiles/docker.json", configPath); // relative, as dotfiles tools make

  await saveDockerLogin("r.example", CREDENTIAL, { configPath });
  assert((await Deno.lstat(configPath)).isSymlink, "the link stays a link");
  assertStrictEquals(await Deno.readLink(configPath), "../dotfiles/docker.json");
  assertEquals(await readJson(target), {
    psFormat: "t",
    auths: { "r.example": { auth: basic("ci:pa:ss wörd") } },
  });
  assertStrictEquals((await Deno.stat(target)).mode! & 0o777, 0o640, "the target's mode is kept");
  assertEquals(await names(`${tmp.path}/dotfiles`), ["docker.json"], "no temporary file");
  assertEquals(await names(`${tmp.path}/docker`), ["config.json"]);

  const erased = await eraseDockerLogin("r.example", { configPath });
  assertEquals(erased.removedFrom, ["auths"]);
  assert((await Deno.lstat(configPath)).isSymlink);
  assertEquals(await readJson(target), { psFormat: "t", auths: {} }, "gone from the target");

  // A dangling link (the dotfiles are not there yet) is created at its target.
  const dangling = `${tmp.path}/docker/other.json`;
  await Deno.symlink(`${tmp.path}/dotfiles/new/other.json`, dangling);
  await saveDockerLogin("r.example", CREDENTIAL, { configPath: dangling });
  assert((await Deno.lstat(dangling)).isSymlink);
  assertStrictEquals(
    (await Deno.stat(`${tmp.path}/dotfiles/new/other.json`)).mode! & 0o777,
    0o600,
    "a new file is 0600",
  );
  assertEquals(await dockerConfigCredentials({ configPath: dangling }).get("r.example"), {
    username: "ci",
    password: "pa:ss wörd",
  });
});

Deno.test("a new login replaces everything the file held for the registry", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  const other = { auth: btoa("x:y"), identitytoken: "other-registry-keeps-its-own" };
  await Deno.writeTextFile(
    configPath,
    JSON.stringify({
      auths: {
        "r.example": { auth: btoa("old:old"), identitytoken: "stale", email: "e@example" },
        "https://R.example/v1/": { registrytoken: "stale-token" },
        "r.example:5000": other,
      },
    }),
  );
  const source = dockerConfigCredentials({ configPath });
  await assertRejects(source.get("r.example"), /identity tokens are not supported/);
  const saved = await saveDockerLogin("r.example", CREDENTIAL, { configPath });
  assertEquals([saved.savedIn, saved.removedFrom], ["auths", []]);
  assertEquals(await readJson(configPath), {
    auths: { "r.example:5000": other, "r.example": { auth: basic("ci:pa:ss wörd") } },
  });
  assertEquals(await source.get("r.example"), CREDENTIAL);
});

Deno.test("a login through a helper leaves no plain-text copy in the file", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  await Deno.writeTextFile(
    configPath,
    JSON.stringify({
      credHelpers: { "r.example": "vault" },
      auths: { "r.example": { auth: btoa("old:old") }, "http://r.example": { auth: "eDp5" } },
    }),
  );
  const changeHelper = () => Promise.resolve(true);
  const saved = await saveDockerLogin("r.example", CREDENTIAL, { configPath, changeHelper });
  assertEquals([saved.savedIn, saved.removedFrom], ["helper", ["auths"]]);
  assertEquals(await readJson(configPath), {
    credHelpers: { "r.example": "vault" },
    auths: {},
  });
});

Deno.test("an erase says what it removed, and removes every spelling of the registry", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  const hostile = "https://r.example/\u001b]0;pwned\u0007\u202e";
  await Deno.writeTextFile(configPath, JSON.stringify({ auths: { [hostile]: { auth: "eDp5" } } }));
  const source = dockerConfigCredentials({ configPath });
  assertEquals(await source.get("r.example"), { username: "x", password: "y" });
  assertEquals((await eraseDockerLogin("r.example", { configPath })).removedFrom, ["auths"]);
  assertEquals(await source.get("r.example"), {}, "nothing is read for it any more");
  assertEquals((await eraseDockerLogin("r.example", { configPath })).removedFrom, []);

  await Deno.writeTextFile(configPath, JSON.stringify({ credsStore: "vault" }));
  const held = new Set(["r.example"]);
  const changeHelper = (_name: string, server: string) => Promise.resolve(held.delete(server));
  const first = await eraseDockerLogin("r.example", { configPath, changeHelper });
  assertEquals([first.helper, first.removedFrom], ["vault", ["helper"]]);
  const second = await eraseDockerLogin("r.example", { configPath, changeHelper });
  assertEquals(second.removedFrom, [], "the helper held nothing: nothing is claimed");
});

Deno.test("a leftover temporary file of ours is removed by the next write, nothing else", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  const deadWriter = `config.json.ocipart-${"0123456789abcdef".repeat(2)}.tmp`;
  const liveWriter = `config.json.ocipart-${"fedcba9876543210".repeat(2)}.tmp`;
  const notOurs = [
    "config.json.1234.tmp",
    "config.json.ocipart-xyz.tmp",
    "other.json.ocipart-0123456789abcdef0123456789abcdef.tmp",
    "config.json123456789",
  ];
  for (const name of [deadWriter, liveWriter, ...notOurs]) {
    await Deno.writeTextFile(`${tmp.path}/${name}`, "{}");
  }
  const anHourAgo = new Date(Date.now() - 3_600_000);
  for (const name of [deadWriter, ...notOurs]) {
    await Deno.utime(`${tmp.path}/${name}`, anHourAgo, anHourAgo);
  }
  await saveDockerLogin("r.example", CREDENTIAL, { configPath });
  assertEquals(await names(tmp.path), ["config.json", liveWriter, ...notOurs].sort());
});

Deno.test("a login stopped while the file is written leaves it as it was, with no temporary file", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  const before = JSON.stringify({ credsStore: "vault", auths: { "r.example": { auth: "eDp5" } } });
  await Deno.writeTextFile(configPath, before);
  const controller = new AbortController();
  // Ctrl-C arrives as the helper finishes: the file's update must not land half-way.
  const changeHelper = () => {
    controller.abort(new DOMException("stopped by SIGINT", "AbortError"));
    return Promise.resolve(true);
  };
  await assertRejects(
    saveDockerLogin("r.example", CREDENTIAL, {
      configPath,
      changeHelper,
      signal: controller.signal,
    }),
    (err) => err instanceof DOMException && err.message === "stopped by SIGINT",
  );
  assertStrictEquals(await Deno.readTextFile(configPath), before);
  assertEquals(await names(tmp.path), ["config.json"]);
});

Deno.test({
  name: "a login stopped while the helper hangs ends at once; the helper is killed",
  ignore: !HELPER_OS,
}, async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  const pidFile = `${tmp.path}/pid`;
  await writeHelper(tmp.path, "hang", `echo "$$" > '${pidFile}'\nexec sleep 100\n`);
  await Deno.writeTextFile(configPath, JSON.stringify({ credsStore: "hang" }));
  const controller = new AbortController();
  await withPathEntry(tmp.path, async () => {
    const saving = saveDockerLogin("r.example", CREDENTIAL, {
      configPath,
      signal: controller.signal,
    }).then(() => "saved", (err) => err);
    const pid = Number(await waitForText(pidFile));
    try {
      const stoppedAt = performance.now();
      controller.abort(new DOMException("stopped by SIGTERM", "AbortError"));
      const outcome = await saving;
      assert(outcome instanceof DOMException, String(outcome));
      assert(performance.now() - stoppedAt < 1_000);
      assertEquals(await waitGone([pid]), []);
    } finally {
      killAll([pid]);
    }
  });
  assertEquals(await readJson(configPath), { credsStore: "hang" });
});

Deno.test("login and logout leave the numbers of other keys as written (1e400, large integers)", async () => {
  await using dir = await tempDir();
  const configPath = `${dir.path}/config.json`;
  const others = '"proxies":{"limit":1e400,"id":12345678901234567890123,"ratio":1.50}';
  await Deno.writeTextFile(configPath, `{${others},"auths":{}}`);
  await saveDockerLogin("registry.example", CREDENTIAL, { configPath });
  const saved = await Deno.readTextFile(configPath);
  for (const number of ['"limit": 1e400', '"id": 12345678901234567890123', '"ratio": 1.50']) {
    assert(saved.includes(number), `after login, ${number} in ${saved}`);
  }
  await eraseDockerLogin("registry.example", { configPath });
  const erased = await Deno.readTextFile(configPath);
  assert(erased.includes('"limit": 1e400') && !erased.includes("null"), erased);
});

Deno.test("an empty config.json is an empty configuration: read, logged into, logged out of", async () => {
  await using dir = await tempDir();
  const configPath = `${dir.path}/config.json`;
  await Deno.writeTextFile(configPath, "");
  assertEquals(await dockerConfigCredentials({ configPath }).get("registry.example"), {});
  assertStrictEquals(
    (await eraseDockerLogin("registry.example", { configPath })).removedFrom.length,
    0,
  );
  await Deno.writeTextFile(configPath, "\n  \n");
  await saveDockerLogin("registry.example", CREDENTIAL, { configPath });
  assertStrictEquals(
    (await dockerConfigCredentials({ configPath }).get("registry.example")).username,
    "ci",
  );
});
