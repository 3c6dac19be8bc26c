import {
  dockerConfigCredentials,
  dockerConfigPath,
  parseDockerConfig,
} from "../../src/auth/docker_config.ts";
import { runCredentialHelper } from "../../src/auth/credential_helper.ts";
import { CredentialError } from "../../src/errors/kinds.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../fixtures/assert.ts";
import { withPathEntry } from "../fixtures/path_env.ts";
import { tempDir } from "../fixtures/tmp.ts";

const SECRET = "pl4nted-s3cret";

/** Writes `config` as `<dir>/config.json` and returns a source reading it via DOCKER_CONFIG. */
async function sourceWith(dir: string, config: unknown) {
  await Deno.writeTextFile(
    `${dir}/config.json`,
    typeof config === "string" ? config : JSON.stringify(config),
  );
  const env = (name: string) => (name === "DOCKER_CONFIG" ? dir : undefined);
  return dockerConfigCredentials({ env });
}

/**
 * Puts `docker-credential-ocitest` on PATH for the duration of `fn`. The helper logs the server
 * URL it was given (stdin) and answers per server.
 */
async function withHelper(fn: (log: () => Promise<string[]>) => Promise<void>): Promise<void> {
  await using dir = await tempDir("ocipart-helper-");
  const logFile = `${dir.path}/log`;
  const script = `#!/bin/sh
[ "$1" = "get" ] || exit 3
server=$(cat)
printf '%s\\n' "$server" >> '${logFile}'
case "$server" in
  helper.example:5000) printf '{"ServerURL":"%s","Username":"helper-user","Secret":"helper-pass"}' "$server" ;;
  https://index.docker.io/v1/) printf '{"ServerURL":"%s","Username":"hub-user","Secret":"hub-pass"}' "$server" ;;
  identity.example) printf '{"ServerURL":"%s","Username":"<token>","Secret":"${SECRET}"}' "$server" ;;
  broken.example) echo "boom ${SECRET}" >&2; echo "${SECRET}"; exit 2 ;;
  garbage.example) echo "not json ${SECRET}" ;;
  *) echo "credentials not found in native keychain"; exit 1 ;;
esac
`;
  await Deno.writeTextFile(`${dir.path}/docker-credential-ocitest`, script, { mode: 0o755 });
  await withPathEntry(dir.path, () =>
    fn(async () => {
      try {
        return (await Deno.readTextFile(logFile)).split("\n").filter((l) => l !== "");
      } catch {
        return [];
      }
    }));
}

Deno.test("docker config: DOCKER_CONFIG wins over HOME", () => {
  const both = (name: string) => ({ DOCKER_CONFIG: "/cfg", HOME: "/home/u" })[name];
  assertEquals(dockerConfigPath(both), "/cfg/config.json");
  const home = (name: string) => (name === "HOME" ? "/home/u" : undefined);
  assertEquals(dockerConfigPath(home), "/home/u/.docker/config.json");
});

Deno.test("docker config: base64 auth, username/password, and server-address keys", async () => {
  await using dir = await tempDir();
  const source = await sourceWith(dir.path, {
    auths: {
      "registry.example": { auth: btoa("ci:pa:ss") },
      "https://other.example/v1/": { username: "u2", password: "p2" },
      "plain.example:5000": {},
    },
  });
  assertEquals(await source.get("registry.example"), { username: "ci", password: "pa:ss" });
  assertEquals(await source.get("other.example"), { username: "u2", password: "p2" });
  assertEquals(await source.get("plain.example:5000"), {}, "an empty entry is anonymous");
  assertEquals(await source.get("unknown.example"), {}, "an unknown registry is anonymous");
});

Deno.test("docker config: a registry token is kept, an identity token is refused", async () => {
  await using dir = await tempDir();
  const source = await sourceWith(dir.path, {
    auths: {
      "token.example": { registrytoken: "reg-token" },
      "identity.example": { auth: btoa("00000000-0000:"), identitytoken: SECRET },
    },
  });
  assertEquals(await source.get("token.example"), { registryToken: "reg-token" });
  const err = await assertRejects(() => source.get("identity.example"), CredentialError);
  assert(!err.message.includes(SECRET));
  assertEquals(err.retryable, false);
});

Deno.test("docker config: the public hub's special server address", async () => {
  await using dir = await tempDir();
  const source = await sourceWith(dir.path, {
    auths: { "https://index.docker.io/v1/": { auth: btoa("hub:pw") } },
  });
  for (const host of ["registry-1.docker.io", "docker.io", "index.docker.io"]) {
    assertEquals(await source.get(host), { username: "hub", password: "pw" }, host);
  }
});

Deno.test("docker config: a missing file is anonymous, a broken one is an error", async () => {
  await using dir = await tempDir();
  const missing = dockerConfigCredentials({
    env: (name) => (name === "DOCKER_CONFIG" ? `${dir.path}/absent` : undefined),
  });
  assertEquals(await missing.get("registry.example"), {});
  const broken = await sourceWith(dir.path, `{"auths": {"registry.example": {"auth": "${SECRET}`);
  const err = await assertRejects(() => broken.get("registry.example"), CredentialError);
  assert(!err.message.includes(SECRET));
  const badAuth = await sourceWith(dir.path, { auths: { "r.example": { auth: "%%%" } } });
  await assertRejects(() => badAuth.get("r.example"), CredentialError);
  const noColon = await sourceWith(dir.path, { auths: { "r.example": { auth: btoa("x") } } });
  await assertRejects(() => noColon.get("r.example"), CredentialError);
  assertThrows(() => parseDockerConfig('{"auths": []}'), CredentialError);
  assertThrows(() => parseDockerConfig('{"credHelpers": {"a": 1}}'), CredentialError);
});

Deno.test("credential helper: credHelpers and credsStore through the get protocol", async () => {
  await withHelper(async (log) => {
    await using dir = await tempDir();
    const source = await sourceWith(dir.path, {
      auths: { "helper.example:5000": { auth: btoa("file-user:file-pass") } },
      credHelpers: { "helper.example:5000": "ocitest", "docker.io": "ocitest" },
    });
    // The helper answers, not the file entry.
    assertEquals(await source.get("helper.example:5000"), {
      username: "helper-user",
      password: "helper-pass",
    });
    // The hub is asked for under its special server address.
    assertEquals(await source.get("registry-1.docker.io"), {
      username: "hub-user",
      password: "hub-pass",
    });
    // Not a helper host: the file entry (none here) decides.
    assertEquals(await source.get("elsewhere.example"), {});
    assertEquals(await log(), ["helper.example:5000", "https://index.docker.io/v1/"]);

    const store = await sourceWith(dir.path, { credsStore: "ocitest" });
    assertEquals(await store.get("helper.example:5000"), {
      username: "helper-user",
      password: "helper-pass",
    });
    assertEquals(await store.get("nothing.example"), {}, "not found in the store is anonymous");
  });
});

Deno.test("credential helper: identity tokens, failures and garbage are refused", async () => {
  await withHelper(async () => {
    for (const server of ["identity.example", "broken.example", "garbage.example"]) {
      const err = await assertRejects(
        () => runCredentialHelper("ocitest", server),
        CredentialError,
      );
      assert(!err.message.includes(SECRET), "helper output stays out of the message");
    }
    const missing = await assertRejects(
      () => runCredentialHelper("ocitest-absent", "x.example"),
      CredentialError,
    );
    assertEquals(
      missing.message,
      "credentials: credential helper docker-credential-ocitest-absent not found " +
        "(is it installed and on PATH?)",
    );
    await assertRejects(() => runCredentialHelper("../evil", "x.example"), CredentialError);
    const abort = new AbortController();
    abort.abort(new DOMException("stop", "AbortError"));
    await assertRejects(
      () => runCredentialHelper("ocitest", "helper.example:5000", { signal: abort.signal }),
      DOMException,
    );
  });
});
