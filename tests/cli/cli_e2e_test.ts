/**
 * The CLI's exit-code contract end to end: each code reached by a real scenario against the
 * real registry (CNCF Distribution), with the CLI running as a child process under
 * `--allow-net=127.0.0.1` and read/write limited to the test's temp dir.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { startNginx } from "../fixtures/nginx.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { startTokenServer } from "../fixtures/token_server.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli, startSilentServer } from "./_cli.ts";
import { partDigests, pushByHand, tinyImage, writeOciLayout } from "./_images.ts";
import { exists, expectFailure } from "../fixtures/expect.ts";

const KiB = 1024;
const MiB = 1024 * KiB;
/** The error line of a push or pull that failed in the library. */
const PUSH_OR_PULL = /^ocipart (push|pull): \S/;

async function writeRandomFile(path: string, size: number): Promise<void> {
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  const chunk = new Uint8Array(64 * KiB);
  for (let written = 0; written < size;) {
    const n = Math.min(chunk.byteLength, size - written);
    crypto.getRandomValues(chunk.subarray(0, n));
    let offset = 0;
    while (offset < n) offset += await file.write(chunk.subarray(offset, n));
    written += n;
  }
}

async function fileDigest(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of (await Deno.open(path)).readable) hash.update(chunk);
  return hash.digest("hex");
}

/** Auto progress without a terminal: plain lines a log keeps, ending with the done state. */
function jsonLines(stderr: string): Array<Record<string, unknown>> {
  return stderr.trimEnd().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}

registryTest("0: push prints only the digest, pull reproduces the file", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 3 * MiB + 123);
  const ref = `${registry.host}/models/llm:v1`;

  const push = await runCli(
    ["push", "--plain-http", "--part-size", "1MiB", "--workers", "2", ref, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  assert(/^sha256:[0-9a-f]{64}\n$/.test(push.stdout), `stdout: ${JSON.stringify(push.stdout)}`);
  assertStrictEquals(push.stderr, "", "auto progress keeps a short transfer out of a log");
  assertStrictEquals((await partDigests(registry.url, "models/llm", "v1")).length, 4);

  const dest = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", "--plain-http", ref, dest], { tmp: tmp.path });
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(pull.stdout, `${dest}\n`, "the path written is the only line on stdout");
  assertStrictEquals(pull.stderr, "");
  assertStrictEquals(await fileDigest(dest), await fileDigest(source));
  assertStrictEquals(await exists(`${dest}.parted-partial`), false);

  // The same bytes and part size give the same manifest: --json shows its descriptor.
  const again = await runCli(
    ["push", "--plain-http", "--part-size=1MiB", "--json", ref, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(again.code, 0, again.stderr);
  const descriptor = JSON.parse(again.stdout);
  assertStrictEquals(again.stdout.trimEnd().split("\n").length, 1, "one JSON document");
  assertStrictEquals(descriptor.digest, push.stdout.trim());
  assertStrictEquals(descriptor.mediaType, "application/vnd.oci.image.manifest.v1+json");
  assert(Number.isSafeInteger(descriptor.size) && descriptor.size > 0);

  // Pull by digest into a fresh destination.
  const byDigest = `${tmp.path}/by-digest.bin`;
  const digestPull = await runCli(
    ["pull", "--plain-http", `${registry.host}/models/llm@${descriptor.digest}`, byDigest],
    { tmp: tmp.path },
  );
  assertStrictEquals(digestPull.code, 0, digestPull.stderr);
  assertStrictEquals(await fileDigest(byDigest), await fileDigest(source));
});

registryTest("0: --hash-threads 0, 1 and 2 push and pull the same bytes", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  // Past 16 MiB, so that the hashing threads are used when asked for.
  const source = `${tmp.path}/big.bin`;
  await writeRandomFile(source, 20 * MiB + 7);
  const digests = new Set<string>();
  for (const threads of ["0", "1", "2"]) {
    const ref = `${registry.host}/models/threads:t${threads}`;
    const push = await runCli(
      ["push", "--plain-http", "--part-size", "8MiB", "--hash-threads", threads, ref, source],
      { tmp: tmp.path },
    );
    assertStrictEquals(push.code, 0, push.stderr);
    digests.add(push.stdout);
    const dest = `${tmp.path}/out-${threads}.bin`;
    const pull = await runCli(
      ["pull", "--plain-http", "--hash-threads", threads, ref, dest],
      { tmp: tmp.path },
    );
    assertStrictEquals(pull.code, 0, pull.stderr);
    assertStrictEquals(await fileDigest(dest), await fileDigest(source));
  }
  assertStrictEquals(digests.size, 1, "one manifest whatever hashes where");
});

registryTest("0: --progress json lines parse, never go back, and the last agrees", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/data.bin`;
  const size = 2 * MiB + 7;
  await writeRandomFile(source, size);
  const ref = `${registry.host}/data/set:json`;

  const push = await runCli(
    ["push", "--plain-http", "--part-size", "512KiB", "--progress", "json", ref, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  const pull = await runCli(
    ["pull", "--plain-http", "--progress", "json", ref, `${tmp.path}/out.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(pull.code, 0, pull.stderr);
  for (const result of [push, pull]) {
    const records = jsonLines(result.stderr);
    assertStrictEquals(
      records.length,
      result.stderr.trimEnd().split("\n").length,
      "only JSON lines",
    );
    assert(records.length >= 2);
    let previous = 0;
    for (const record of records) {
      for (const field of ["completedBytes", "wireBytes", "totalBytes"]) {
        assert(Number.isSafeInteger(record[field]), `${field} in ${JSON.stringify(record)}`);
      }
      assertStrictEquals(typeof record.phase, "string");
      assert((record.completedBytes as number) >= previous, "completedBytes never decreases");
      previous = record.completedBytes as number;
    }
    const last = records.at(-1)!;
    assertStrictEquals(last.exitCode, 0);
    assertStrictEquals(last.phase, "done");
    assertStrictEquals(last.completedBytes, size);
    assertStrictEquals(last.totalBytes, size);
  }

  // A failing run ends with a line that carries its exit code too.
  const missing = await runCli(
    [
      "pull",
      "--plain-http",
      "--progress",
      "json",
      `${registry.host}/data/set:nope`,
      `${tmp.path}/x`,
    ],
    { tmp: tmp.path },
  );
  assertStrictEquals(missing.code, 3, missing.stderr);
  const last = jsonLines(missing.stderr).at(-1)!;
  assertStrictEquals(last.exitCode, 3);
  assert(last.phase !== "done");
});

registryTest("3: pulling a missing tag, and nothing is left behind", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const dest = `${tmp.path}/out.bin`;
  const result = await runCli(
    ["pull", "--plain-http", `${registry.host}/models/absent:v1`, dest],
    { tmp: tmp.path },
  );
  expectFailure(result, {
    code: 3,
    error: PUSH_OR_PULL,
    explanation: /^ocipart pull: matched NotFoundError \(ERR_NOT_FOUND\)/,
    tellsExit: true,
  });
  assertStrictEquals(await exists(dest), false);
  assertStrictEquals(await exists(`${dest}.parted-partial`), false);
});

registryTest("4: pulling an artifact of another kind pushed by hand", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  await pushByHand(registry.url, "other/kind", "v1", tinyImage("application/vnd.example.other"));
  const dest = `${tmp.path}/out.bin`;
  const result = await runCli(
    ["pull", "--plain-http", `${registry.host}/other/kind:v1`, dest],
    { tmp: tmp.path },
  );
  expectFailure(result, {
    code: 4,
    error: PUSH_OR_PULL,
    explanation: /matched NotPartedArtifactError \(ERR_NOT_PARTED_ARTIFACT\)/,
    tellsExit: true,
  });
  assertStrictEquals(await exists(dest), false);
});

registryTest("4: pulling an ordinary image pushed with skopeo", { needs: ["skopeo"] }, async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const layout = `${tmp.path}/layout`;
  await writeOciLayout(layout, "latest", tinyImage());
  const copy = await new Deno.Command("skopeo", {
    args: [
      "copy",
      "--dest-tls-verify=false",
      `oci:${layout}:latest`,
      `docker://${registry.host}/library/busybox:1`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertStrictEquals(copy.code, 0, new TextDecoder().decode(copy.stderr));
  const result = await runCli(
    ["pull", "--plain-http", `${registry.host}/library/busybox:1`, `${tmp.path}/out.bin`],
    { tmp: tmp.path },
  );
  expectFailure(result, {
    code: 4,
    error: PUSH_OR_PULL,
    explanation: /matched NotPartedArtifactError/,
    tellsExit: true,
  });
});

registryTest("5: a part blob tampered in the registry's storage", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 2 * MiB);
  const ref = `${registry.host}/models/tampered:v1`;
  const push = await runCli(
    ["push", "--plain-http", "--part-size", "1MiB", ref, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(push.code, 0, push.stderr);
  const [, second] = await partDigests(registry.url, "models/tampered", "v1");
  // Same length, different bytes: only the hash can tell.
  const stored = await Deno.readFile(registry.blobPath(second));
  stored[stored.byteLength >> 1] ^= 0xff;
  await Deno.writeFile(registry.blobPath(second), stored);

  const dest = `${tmp.path}/out.bin`;
  const result = await runCli(["pull", "--plain-http", ref, dest], { tmp: tmp.path });
  expectFailure(result, {
    code: 5,
    error: PUSH_OR_PULL,
    explanation: /matched DigestMismatchError \(ERR_DIGEST_MISMATCH\)/,
    tellsExit: true,
  });
  assertStrictEquals(await exists(dest), false, "the destination never holds unverified bytes");
  assertStrictEquals(await exists(`${dest}.parted-partial`), true, "the partial is kept");
});

registryTest("6: htpasswd registry without, with wrong and with right credentials", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 300 * KiB);
  const ref = `${registry.host}/private/llm:v1`;

  const anonymous = await runCli(["push", "--plain-http", ref, source], { tmp: tmp.path });
  expectFailure(anonymous, {
    code: 6,
    error: PUSH_OR_PULL,
    explanation: /matched UnauthorizedError \(ERR_UNAUTHORIZED\)/,
    tellsExit: true,
  });

  const login = ["--plain-http", "--username", "alice", "--password-stdin"];
  const wrong = await runCli(["push", ...login, ref, source], {
    tmp: tmp.path,
    stdin: "battery staple\n",
  });
  expectFailure(wrong, {
    code: 6,
    error: PUSH_OR_PULL,
    explanation: /matched UnauthorizedError/,
    tellsExit: true,
  });
  assert(!wrong.stderr.includes("battery"), "the password never appears");

  const right = await runCli(["push", ...login, ref, source], {
    tmp: tmp.path,
    stdin: "correct horse\n",
  });
  assertStrictEquals(right.code, 0, right.stderr);

  // Pull with credentials from the docker configuration named by DOCKER_CONFIG.
  const dockerConfig = `${tmp.path}/docker`;
  await Deno.mkdir(dockerConfig);
  await Deno.writeTextFile(
    `${dockerConfig}/config.json`,
    JSON.stringify({ auths: { [registry.host]: { auth: btoa("alice:correct horse") } } }),
  );
  const dest = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", "--plain-http", ref, dest], {
    tmp: tmp.path,
    env: { DOCKER_CONFIG: dockerConfig },
  });
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(await fileDigest(dest), await fileDigest(source));
  const anonymousPull = await runCli(["pull", "--plain-http", ref, `${tmp.path}/anon.bin`], {
    tmp: tmp.path,
  });
  expectFailure(anonymousPull, {
    code: 6,
    error: PUSH_OR_PULL,
    explanation: /matched UnauthorizedError/,
    tellsExit: true,
  });
});

registryTest("credential helpers run only with --allow-run for them", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { carol: "from-helper" } });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 100 * KiB);
  const bin = `${tmp.path}/bin`;
  await Deno.mkdir(bin);
  const helper = `${bin}/docker-credential-clitest`;
  await Deno.writeTextFile(
    helper,
    `#!/bin/sh\nread server\necho '{"ServerURL":"'"$server"'","Username":"carol","Secret":"from-helper"}'\n`,
  );
  await Deno.chmod(helper, 0o755);
  const dockerConfig = `${tmp.path}/docker`;
  await Deno.mkdir(dockerConfig);
  await Deno.writeTextFile(
    `${dockerConfig}/config.json`,
    JSON.stringify({ credHelpers: { [registry.host]: "clitest" } }),
  );
  const env = { DOCKER_CONFIG: dockerConfig, PATH: `${bin}:${Deno.env.get("PATH") ?? ""}` };
  const ref = `${registry.host}/helped/llm:v1`;
  const args = ["push", "--plain-http", ref, source];

  // Everything but the permission to run this one helper: a plain failure, not unauthorized.
  const withoutRun = await runCli(args, { tmp: tmp.path, env, run: ["docker-credential-other"] });
  expectFailure(withoutRun, {
    code: 1,
    error: PUSH_OR_PULL,
    explanation: /no sentinel matched/,
    tellsExit: true,
  });
  assert(
    withoutRun.stderr.includes(
      "credential helper docker-credential-clitest is not permitted to run " +
        "(grant it with --allow-run=docker-credential-clitest)",
    ),
    withoutRun.stderr,
  );
  const withRun = await runCli(args, { tmp: tmp.path, env, run: ["docker-credential-clitest"] });
  assertStrictEquals(withRun.code, 0, withRun.stderr);
});

registryTest("6: token registry without, with wrong and with right credentials", {
  needs: ["openssl"],
}, async () => {
  await using tokens = await startTokenServer({ users: { bob: "hunter2" } });
  await using registry = await startRegistry({
    token: {
      realm: tokens.realm,
      service: tokens.service,
      issuer: tokens.issuer,
      rootCertBundle: tokens.rootCertBundle,
    },
  });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 300 * KiB);
  const ref = `${registry.host}/team/llm:v1`;
  const login = ["--plain-http", "--username", "bob", "--password-stdin"];

  const anonymous = await runCli(["push", "--plain-http", ref, source], { tmp: tmp.path });
  expectFailure(anonymous, {
    code: 6,
    error: PUSH_OR_PULL,
    explanation: /matched UnauthorizedError \(ERR_UNAUTHORIZED\)/,
    tellsExit: true,
  });
  const wrong = await runCli(["push", ...login, ref, source], { tmp: tmp.path, stdin: "nope" });
  expectFailure(wrong, {
    code: 6,
    error: PUSH_OR_PULL,
    explanation: /matched UnauthorizedError/,
    tellsExit: true,
  });
  const right = await runCli(["push", ...login, ref, source], { tmp: tmp.path, stdin: "hunter2" });
  assertStrictEquals(right.code, 0, right.stderr);
  const dest = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", ...login, ref, dest], { tmp: tmp.path, stdin: "hunter2\n" });
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(await fileDigest(dest), await fileDigest(source));
});

registryTest("7: nginx in front with a small client_max_body_size", {
  needs: ["nginx"],
}, async () => {
  await using registry = await startRegistry();
  await using nginx = await startNginx({ upstream: registry.url, clientMaxBodySize: "64k" });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 300 * KiB);
  const ref = `${nginx.host}/models/big:v1`;
  const tooLarge = await runCli(
    ["push", "--plain-http", "--part-size", "128KiB", ref, source],
    { tmp: tmp.path },
  );
  expectFailure(tooLarge, {
    code: 7,
    error: PUSH_OR_PULL,
    explanation: /matched PartTooLargeError \(ERR_PART_TOO_LARGE\)/,
    tellsExit: true,
  });
  // The advice that follows from the error works: smaller parts pass.
  const smaller = await runCli(
    ["push", "--plain-http", "--part-size", "32KiB", ref, source],
    { tmp: tmp.path },
  );
  assertStrictEquals(smaller.code, 0, smaller.stderr);
});

registryTest("0 over TLS with --ca-file; 1 without the CA", async () => {
  await using registry = await startRegistry({ tls: true });
  await using tmp = await tempDir();
  const ca = `${tmp.path}/ca.pem`;
  await Deno.writeTextFile(ca, registry.caCert!);
  const source = `${tmp.path}/weights.bin`;
  await writeRandomFile(source, 200 * KiB);
  const ref = `${registry.host}/secure/llm:v1`;
  const untrusted = await runCli(["push", ref, source], { tmp: tmp.path });
  expectFailure(untrusted, {
    code: 1,
    error: PUSH_OR_PULL,
    explanation: /^ocipart push: no sentinel matched/,
    tellsExit: true,
  });
  const push = await runCli(["push", "--ca-file", ca, ref, source], { tmp: tmp.path });
  assertStrictEquals(push.code, 0, push.stderr);
  const dest = `${tmp.path}/out.bin`;
  const pull = await runCli(["pull", "--ca-file", ca, ref, dest], { tmp: tmp.path });
  assertStrictEquals(pull.code, 0, pull.stderr);
  assertStrictEquals(await fileDigest(dest), await fileDigest(source));
});

Deno.test("1: malformed reference, missing source, unreadable --ca-file", async () => {
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await Deno.writeTextFile(source, "x");
  for (const ref of ["Upper/Case:v1", "127.0.0.1:9/no-tag-or-digest", "no-registry:v1"]) {
    const result = await runCli(["pull", "--plain-http", ref, `${tmp.path}/out`], {
      tmp: tmp.path,
    });
    expectFailure(result, {
      code: 1,
      error: PUSH_OR_PULL,
      explanation: /^ocipart pull: no sentinel matched/,
      tellsExit: true,
    });
  }
  const missing = await runCli(
    ["push", "--plain-http", "127.0.0.1:9/a/b:v1", `${tmp.path}/absent.bin`],
    { tmp: tmp.path },
  );
  expectFailure(missing, {
    code: 1,
    error: PUSH_OR_PULL,
    explanation: /no sentinel matched/,
    tellsExit: true,
  });
  const badCa = await runCli(
    ["push", "--ca-file", `${tmp.path}/absent.pem`, "127.0.0.1:9/a/b:v1", source],
    { tmp: tmp.path },
  );
  expectFailure(badCa, {
    code: 1,
    error: PUSH_OR_PULL,
    explanation: /no sentinel matched/,
    tellsExit: true,
  });
  assert(badCa.stderr.includes("--ca-file"), badCa.stderr);
});

Deno.test("1: an expired --timeout against a registry that never answers", async () => {
  await using silent = startSilentServer();
  await using tmp = await tempDir();
  const dest = `${tmp.path}/out.bin`;
  const result = await runCli(
    ["pull", "--plain-http", "--timeout", "1s", `127.0.0.1:${silent.port}/a/b:v1`, dest],
    { tmp: tmp.path },
  );
  expectFailure(result, {
    code: 1,
    error: PUSH_OR_PULL,
    explanation: /^ocipart pull: --timeout 1s expired/,
    tellsExit: true,
  });
  assertStrictEquals(await exists(dest), false);
});
