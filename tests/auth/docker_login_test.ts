/**
 * Saving and erasing a login in the docker configuration: the file's other keys survive, the
 * file is replaced atomically with mode 0600, a malformed file is never overwritten, and a
 * configured helper receives the credential instead of the file.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { eraseDockerLogin, saveDockerLogin } from "../../src/auth/docker_login.ts";
import { dockerConfigCredentials } from "../../src/auth/docker_config.ts";
import { CredentialError } from "../../src/errors/kinds.ts";
import { tempDir } from "../fixtures/tmp.ts";

const CREDENTIAL = { username: "ci", password: "pa:ss wörd" };

Deno.test("saveDockerLogin keeps other keys, writes 0600, and the source reads it back", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/nested/dir/config.json`;
  const first = await saveDockerLogin("Registry.Example:5000", CREDENTIAL, { configPath });
  deepStrictEqual(first, {
    registry: "registry.example:5000",
    configPath,
    helper: undefined,
    savedIn: "auths",
    removedFrom: [],
  });
  strictEqual((await Deno.stat(configPath)).mode! & 0o777, 0o600);
  const other = { auths: { "a.example": { auth: btoa("x:y"), email: "kept" } }, psFormat: "t" };
  await Deno.writeTextFile(configPath, JSON.stringify(other));
  // The mode of an existing file is the user's choice, and is kept (as docker does).
  await Deno.chmod(configPath, 0o640);
  await saveDockerLogin("registry.example:5000", CREDENTIAL, { configPath });
  strictEqual((await Deno.stat(configPath)).mode! & 0o777, 0o640);
  const saved = JSON.parse(await Deno.readTextFile(configPath));
  strictEqual(saved.psFormat, "t");
  deepStrictEqual(saved.auths["a.example"], other.auths["a.example"]);
  const source = dockerConfigCredentials({ configPath });
  deepStrictEqual(await source.get("registry.example:5000"), CREDENTIAL);

  await eraseDockerLogin("registry.example:5000", { configPath });
  deepStrictEqual(JSON.parse(await Deno.readTextFile(configPath)), other);
  deepStrictEqual(await source.get("registry.example:5000"), {});
  deepStrictEqual(
    (await Array.fromAsync(Deno.readDir(`${tmp.path}/nested/dir`))).map((e) => e.name),
    ["config.json"],
  );
});

Deno.test("a malformed configuration is refused and left as it was", async () => {
  await using tmp = await tempDir();
  const configPath = `${tmp.path}/config.json`;
  await Deno.writeTextFile(configPath, '{"auths": [1, 2');
  await rejects(saveDockerLogin("r.example", CREDENTIAL, { configPath }), (err: unknown) => {
    ok(err instanceof CredentialError);
    ok(!String((err as Error).message).includes("pa:ss"));
    return true;
  });
  strictEqual(await Deno.readTextFile(configPath), '{"auths": [1, 2');
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
  strictEqual(saved.helper, "vault");
  await saveDockerLogin("gh.example", CREDENTIAL, { configPath, changeHelper });
  await eraseDockerLogin("r.example", { configPath, changeHelper });
  deepStrictEqual(calls, [
    ["vault", "r.example", CREDENTIAL],
    ["gh", "gh.example", CREDENTIAL],
    ["vault", "r.example", undefined],
  ]);
  deepStrictEqual(JSON.parse(await Deno.readTextFile(configPath)), {
    credsStore: "vault",
    credHelpers: { "gh.example": "gh" },
  });
});
