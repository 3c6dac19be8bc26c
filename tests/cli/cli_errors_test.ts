/**
 * The failure report a newcomer reads, through the CLI: a first sentence naming what was typed
 * (the reference, the registry's host and port, the file), a hint for the common mistakes, then
 * the library's line, the cause codes and the exit-code line of the contract. Against the real
 * registry (plain HTTP, TLS, htpasswd) and, for answers it never gives, the fake one.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { freePort } from "../fixtures/ports.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { cliArgv, cliEnv, type CliResult, completed, PROJECT_ROOT, runCli } from "./_cli.ts";

/** A failure report, line by line, without the `ocipart <command>: ` prefix. */
interface Report {
  sentence: string;
  hint: string | undefined;
  /** The command the hint says to run: an indented line right after it, without the prefix. */
  command: string | undefined;
  library: string;
  cause: string[];
  explanation: string;
}

/**
 * Splits the report of `command` and checks that every line of it carries the prefix, but the
 * command to run after a hint.
 */
function report(result: CliResult, command: string): Report {
  const prefix = `ocipart ${command}: `;
  const all = result.stderr.trimEnd().split("\n");
  const run = all[1]?.startsWith(`${prefix}hint: `) && all[2]?.startsWith("  ")
    ? all[2].slice(2)
    : undefined;
  const lines = run === undefined ? all : [...all.slice(0, 2), ...all.slice(3)];
  for (const line of lines) assert(line.startsWith(prefix), `unprefixed line: ${result.stderr}`);
  const body = lines.map((line) => line.slice(prefix.length));
  const hint = body[1]?.startsWith("hint: ") ? body[1].slice("hint: ".length) : undefined;
  const rest = body.slice(hint === undefined ? 1 : 2);
  const cause = rest.find((line) => line.startsWith("cause: "));
  const library = rest[0];
  assert(rest.length === (cause === undefined ? 2 : 3), `layout: ${result.stderr}`);
  return {
    sentence: body[0],
    hint,
    command: run,
    library,
    cause: cause === undefined ? [] : cause.slice("cause: ".length).split(", "),
    explanation: rest.at(-1)!,
  };
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Runs a command expected to fail with `code` and returns its report. */
async function failing(args: string[], code: number, tmp: string, stdin?: string) {
  const result = await runCli(args, { tmp, ...(stdin === undefined ? {} : { stdin }) });
  assertStrictEquals(result.code, code, `${args.join(" ")}\n${result.stderr}`);
  assertStrictEquals(result.stdout, "", result.stdout);
  return report(result, args[0]);
}

Deno.test("a wrong port: the host and port typed, and whether a registry runs there", async () => {
  await using tmp = await tempDir();
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const runs = [
    ["pull", "--plain-http", "--progress", "none", `${host}/a/b:v1`, `${tmp.path}/out.bin`],
    ["push", "--plain-http", "--progress", "none", `${host}/a/b:v1`, file],
    ["inspect", "--plain-http", `${host}/a/b:v1`],
    ["copy", "--plain-http", "--progress", "none", `${host}/a/b:v1`, `${host}/c/d:v1`],
  ];
  for (const args of runs) {
    const r = await failing(args, 1, tmp.path);
    assertStrictEquals(r.sentence, `nothing is listening at ${host}: the connection was refused`);
    assertStrictEquals(r.hint, `is the registry running, and is ${port} its port?`);
    assert(!r.library.includes("127.0.0.1"), r.library);
    assert(r.cause.includes("ECONNREFUSED"), r.cause.join());
    assertStrictEquals(r.explanation, "no sentinel matched (exit 1)");
  }
});

registryTest("a wrong or missing password: the registry named, `ocipart login` suggested", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const { host } = registry;
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const ref = `${host}/private/llm:v1`;
  const push = ["push", "--plain-http", "--progress", "none"];
  const credential = ["--username", "alice", "--password-stdin"];

  const anonymous = await failing([...push, ref, file], 6, tmp.path);
  assertStrictEquals(
    anonymous.sentence,
    `${host} needs credentials, and none it accepts were sent (401 Unauthorized)`,
  );
  assertStrictEquals(
    anonymous.hint,
    "give --username with --password-stdin, or log in once and every command uses the saved " +
      "login. Run:",
  );
  // The login reaches the registry as the push did: over plain HTTP.
  assertStrictEquals(
    anonymous.command,
    `ocipart login --plain-http --username USER --password-stdin ${host}`,
  );
  assertStrictEquals(
    anonymous.explanation,
    "matched UnauthorizedError (ERR_UNAUTHORIZED) (exit 6)",
  );

  const wrong = await failing([...push, ...credential, ref, file], 6, tmp.path, "battery staple\n");
  assertStrictEquals(
    wrong.sentence,
    `${host} refused the user name and password given with --username (401 Unauthorized)`,
  );
  assertStrictEquals(
    wrong.hint,
    "check the password; a login checks a credential before it saves it. Run:",
  );
  assertStrictEquals(
    wrong.command,
    `ocipart login --plain-http --username alice --password-stdin ${host}`,
  );

  const login = await failing(
    ["login", "--plain-http", ...credential, host],
    6,
    tmp.path,
    "battery staple\n",
  );
  assertStrictEquals(
    login.sentence,
    `${host} refused the user name and password (401 Unauthorized)`,
  );
  assertStrictEquals(login.hint, "check them and try again; nothing was saved");

  const right = await runCli([...push, ...credential, ref, file], {
    tmp: tmp.path,
    stdin: "correct horse\n",
  });
  assertStrictEquals(right.code, 0, right.stderr);
  const pull = await failing(
    ["pull", "--plain-http", "--progress", "none", ref, `${tmp.path}/out.bin`],
    6,
    tmp.path,
  );
  assertStrictEquals(pull.sentence, anonymous.sentence);
  // With the right password, a missing tag is told from a missing repository (the question
  // the report asks the registry is authenticated too).
  const missingTag = await failing(
    ["inspect", "--plain-http", ...credential, `${host}/private/llm:v2`],
    3,
    tmp.path,
    "correct horse\n",
  );
  assertStrictEquals(
    missingTag.sentence,
    `the repository private/llm on ${host} has no tag v2 (404 Not Found, MANIFEST_UNKNOWN)`,
  );
  for (const run of [anonymous, wrong, login, pull, missingTag]) {
    assert(!`${run.sentence}${run.hint}${run.library}`.includes("battery"), "no password");
    assert(!run.library.includes("127.0.0.1"), run.library);
  }
});

/**
 * Runs `line` in bash as a person pasting it would, with `ocipart` on PATH standing for the CLI
 * under test (same permissions and environment as `runCli`).
 */
async function runPasted(line: string, tmp: string, stdin: string): Promise<CliResult> {
  const bin = `${tmp}/bin`;
  await Deno.mkdir(bin, { recursive: true });
  const quoted = cliArgv([], { tmp }).map((word) => `'${word.replaceAll("'", `'\\''`)}'`);
  await Deno.writeTextFile(`${bin}/ocipart`, `#!/bin/sh\nexec ${quoted.join(" ")} "$@"\n`);
  await Deno.chmod(`${bin}/ocipart`, 0o755);
  const env = cliEnv({ tmp });
  const child = new Deno.Command("bash", {
    args: ["-c", line],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: { ...env, PATH: `${bin}:${env.PATH ?? "/usr/bin:/bin"}` },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return await completed(child, stdin);
}

registryTest("the login a 401's hint prints runs as printed, with the flags the command had", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { alice: "correct horse" } });
  await using tmp = await tempDir();
  const { host } = registry;
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  // A configuration file whose path a shell must have quoted.
  const config = `${tmp.path}/ci config.json`;
  await Deno.writeTextFile(config, "{}");
  const ref = `${host}/private/llm:v1`;
  const push = ["push", "--plain-http", "--progress", "none", "--registry-config", config];

  const anonymous = await failing([...push, ref, file], 6, tmp.path);
  assertStrictEquals(
    anonymous.command,
    `ocipart login --plain-http --registry-config '${config}' --username USER --password-stdin ` +
      host,
  );
  const login = await runPasted(
    anonymous.command!.replace("USER", "alice"),
    tmp.path,
    "correct horse\n",
  );
  assertStrictEquals(login.code, 0, login.stderr);
  assertStrictEquals(login.stdout, "Login succeeded; saved in the docker configuration\n");
  const again = await runCli([...push, ref, file], { tmp: tmp.path });
  assertStrictEquals(again.code, 0, again.stderr);

  // A password refused: the hint's login has the user name given, and runs as printed too.
  const pull = ["pull", "--plain-http", "--progress", "none", "--registry-config", config];
  const credential = ["--username", "alice", "--password-stdin"];
  const out = `${tmp.path}/out.bin`;
  const wrong = await failing([...pull, ...credential, ref, out], 6, tmp.path, "nope\n");
  assertStrictEquals(
    wrong.command,
    `ocipart login --plain-http --registry-config '${config}' --username alice --password-stdin ` +
      host,
  );
  const relogin = await runPasted(wrong.command!, tmp.path, "correct horse\n");
  assertStrictEquals(relogin.code, 0, relogin.stderr);
  const pulled = await runCli([...pull, ref, out], { tmp: tmp.path });
  assertStrictEquals(pulled.code, 0, pulled.stderr);
});

registryTest(
  "a part whose bytes do not match: the file was not written, and the partial kept for a rerun that checks it",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const part = 256 * 1024;
    const bytes = new Uint8Array(4 * part);
    crypto.getRandomValues(bytes.subarray(0, 65536));
    for (let i = 65536; i < bytes.length; i++) bytes[i] = (i * 31) & 0xff;
    const file = `${tmp.path}/w.bin`;
    await Deno.writeFile(file, bytes);
    const ref = `${registry.host}/damaged/w:v1`;
    const push = await runCli(["push", "--plain-http", "--part-size", "256KiB", ref, file], {
      tmp: tmp.path,
    });
    assertStrictEquals(push.code, 0, push.stderr);
    // The registry's copy of part 2 is damaged: same length, other bytes.
    const digest = `sha256:${sha256Hex(bytes.subarray(2 * part, 3 * part))}`;
    const damaged = bytes.slice(2 * part, 3 * part).map((b) => b ^ 0xff);
    await Deno.writeFile(registry.blobPath(digest), damaged);
    const dir = `${tmp.path}/models`;
    await Deno.mkdir(dir);
    const r = await failing(["pull", "--plain-http", "--progress", "none", ref, dir], 5, tmp.path);
    assertStrictEquals(
      r.sentence,
      `bytes of ${ref} did not match their digest; ${dir}/w.bin was not written`,
    );
    assertStrictEquals(
      r.hint,
      `try again: a rerun reuses from ${dir}/w.bin.parted-partial only what matches its digest; ` +
        "if it keeps happening, the registry's copy is damaged",
    );
    assertStrictEquals(r.explanation, "matched DigestMismatchError (ERR_DIGEST_MISMATCH) (exit 5)");
    // As the words say: nothing where the file goes, the partial file there for the rerun.
    await Deno.stat(`${dir}/w.bin`).then(() => assert(false, "the file must not exist"), () => {});
    await Deno.stat(`${dir}/w.bin.parted-partial`);
  },
);

registryTest("an unknown tag and an unknown repository are told apart", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const { host } = registry;
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const push = await runCli(["push", "--plain-http", `${host}/a/b:v1`, file], { tmp: tmp.path });
  assertStrictEquals(push.code, 0, push.stderr);
  const out = `${tmp.path}/out.bin`;

  const tag = await failing(["pull", "--plain-http", `${host}/a/b:v2`, out], 3, tmp.path);
  assertStrictEquals(
    tag.sentence,
    `the repository a/b on ${host} has no tag v2 (404 Not Found, MANIFEST_UNKNOWN)`,
  );
  assertStrictEquals(tag.hint, "the repository exists: check the tag");
  assertStrictEquals(tag.library, "not found: GET manifest: status 404");
  assertStrictEquals(tag.explanation, "matched NotFoundError (ERR_NOT_FOUND) (exit 3)");

  const unknownRepository = `the repository none/here does not exist on ${host} ` +
    "(404 Not Found, MANIFEST_UNKNOWN; its tag list: NAME_UNKNOWN)";
  const repository = await failing(
    ["pull", "--plain-http", `${host}/none/here:v1`, out],
    3,
    tmp.path,
  );
  assertStrictEquals(repository.sentence, unknownRepository);
  assertStrictEquals(repository.hint, "check its name (a push creates it)");
  const inspect = await failing(["inspect", "--plain-http", `${host}/none/here:v1`], 3, tmp.path);
  assertStrictEquals(inspect.sentence, unknownRepository);
  const copy = await failing(
    ["copy", "--plain-http", `${host}/none/here:v1`, `${host}/c/d:v1`],
    3,
    tmp.path,
  );
  assertStrictEquals(copy.sentence, unknownRepository);

  const digest = `sha256:${"0".repeat(64)}`;
  const manifest = await failing(["inspect", "--plain-http", `${host}/a/b@${digest}`], 3, tmp.path);
  assertStrictEquals(
    manifest.sentence,
    `the repository a/b on ${host} has no manifest ${digest} (404 Not Found, MANIFEST_UNKNOWN)`,
  );
});

Deno.test("a reference with a scheme, without a repository, registry or tag: the grammar, with an example from what was typed", async () => {
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 10);
  const grammar = "a reference is <registry>/<repository>:<tag> or " +
    "<registry>/<repository>@sha256:<digest>";
  const cases: Array<[string[], string, string]> = [
    [
      ["pull", "http://127.0.0.1:5000/a/b:v1", `${tmp.path}/o`],
      '"http://127.0.0.1:5000/a/b:v1" is not a reference: a reference has no scheme',
      "write 127.0.0.1:5000/a/b:v1, with --plain-http for a registry that speaks plain HTTP",
    ],
    [
      ["pull", "https://ghcr.io/acme/w:v1", `${tmp.path}/o`],
      '"https://ghcr.io/acme/w:v1" is not a reference: a reference has no scheme',
      "write ghcr.io/acme/w:v1",
    ],
    [
      ["pull", "127.0.0.1:5400", `${tmp.path}/o`],
      '"127.0.0.1:5400" names a registry but no repository',
      `${grammar}, e.g. 127.0.0.1:5400/models/weights:v1`,
    ],
    [
      ["push", "ubuntu:1", file],
      '"ubuntu:1" names no registry (there is no default registry)',
      `${grammar}, e.g. localhost:5000/ubuntu:1`,
    ],
    [
      ["inspect", "127.0.0.1:5000/a/b"],
      '"127.0.0.1:5000/a/b" names no tag or digest',
      `${grammar}, e.g. 127.0.0.1:5000/a/b:v1`,
    ],
    [
      ["copy", "127.0.0.1:5000/a/b:v1", "127.0.0.1:5000/Team/b:v1"],
      '"127.0.0.1:5000/Team/b:v1" has capital letters in its repository',
      "repositories are lowercase (a tag may have capitals)",
    ],
  ];
  for (const [args, sentence, hint] of cases) {
    const r = await failing(args, 1, tmp.path);
    assertEquals([r.sentence, r.hint], [sentence, hint]);
    assert(r.library.startsWith("invalid reference: "), r.library);
    assertStrictEquals(r.explanation, "no sentinel matched (exit 1)");
  }
});

registryTest(
  "--plain-http to a TLS registry: every command says drop it; a copy from a plain-HTTP registry names the side, its host and its flag",
  {
    needs: ["openssl"],
  },
  async () => {
    await using tls = await startRegistry({ tls: true });
    await using plain = await startRegistry();
    await using tmp = await tempDir();
    const file = `${tmp.path}/w.bin`;
    await writePatternFile(file, 1000);
    const onPlain = `${plain.host}/a/b:v1`;
    const pushed = await runCli(["push", "--plain-http", onPlain, file], { tmp: tmp.path });
    assertStrictEquals(pushed.code, 0, pushed.stderr);
    const ref = `${tls.host}/a/b:v1`;
    const runs = [
      // A push starts with HEAD requests, whose 400 has no body to say why.
      ["push", "--plain-http", "--progress", "none", ref, file],
      ["pull", "--plain-http", "--progress", "none", ref, `${tmp.path}/o`],
      ["inspect", "--plain-http", ref],
      ["verify", "--plain-http", ref, file],
      ["copy", "--plain-http", "--progress", "none", ref, `${tls.host}/c/d:v1`],
      ["login", "--plain-http", "--username", "u", "--password-stdin", tls.host],
    ];
    for (const args of runs) {
      const r = await failing(args, 1, tmp.path, "pw\n");
      assertStrictEquals(r.sentence, `${tls.host} speaks HTTPS, not plain HTTP`, args.join(" "));
      assertStrictEquals(
        r.hint,
        "drop --plain-http (and add --ca-file PEM if its certificate comes from your own CA)",
      );
      assertEquals(r.cause, ["TLS_SERVER"]);
    }
    // A copy from the plain-HTTP registry to the TLS one: the side and its host, and the side's
    // flag, since dropping --plain-http would break the source. (This line used to name both
    // registries and say "drop --plain-http".)
    const ca = `${tmp.path}/ca.pem`;
    await Deno.writeTextFile(ca, tls.caCert!);
    const copy = ["copy", "--plain-http", "--progress", "none", onPlain, `${tls.host}/c/d:v1`];
    for (
      const [flags, note] of [
        [[], " (and add --dest-ca-file PEM if its certificate comes from your own CA)"],
        [["--ca-file", ca], ""],
      ] as const
    ) {
      const r = await failing([...copy.slice(0, 1), ...flags, ...copy.slice(1)], 1, tmp.path);
      assertStrictEquals(
        r.sentence,
        `the destination registry ${tls.host} speaks HTTPS, not plain HTTP`,
      );
      assertStrictEquals(r.hint, `use --src-plain-http instead of --plain-http${note}`);
      assertStrictEquals(
        r.library,
        "the destination registry speaks TLS, not plain HTTP: use --src-plain-http instead of " +
          "--plain-http",
      );
      assertEquals(r.cause, ["TLS_SERVER"]);
    }
  },
);

registryTest("HTTPS to a plain-HTTP registry: every command says add --plain-http", async () => {
  await using registry = await startRegistry();
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const ref = `${registry.host}/a/b:v1`;
  const runs = [
    ["push", "--progress", "none", ref, file],
    ["pull", "--progress", "none", ref, `${tmp.path}/o`],
    ["inspect", ref],
    ["verify", ref, file],
    ["copy", "--progress", "none", ref, `${registry.host}/c/d:v1`],
    ["login", "--username", "u", "--password-stdin", registry.host],
  ];
  for (const args of runs) {
    const r = await failing(args, 1, tmp.path, "pw\n");
    assertStrictEquals(r.sentence, `${registry.host} speaks plain HTTP, not HTTPS`, args.join(" "));
    assertStrictEquals(
      r.hint,
      "add --plain-http (nothing is encrypted then: only for a registry on a network you trust)",
    );
    assertEquals(r.cause, ["PLAIN_HTTP_SERVER"]);
  }
});

registryTest(
  "a certificate this machine does not trust: --ca-file or --insecure, and --ca-file works",
  {
    needs: ["openssl"],
  },
  async () => {
    await using registry = await startRegistry({ tls: true });
    await using tmp = await tempDir();
    const file = `${tmp.path}/w.bin`;
    await writePatternFile(file, 1000);
    const ref = `${registry.host}/a/b:v1`;
    const r = await failing(["push", "--progress", "none", ref, file], 1, tmp.path);
    assertStrictEquals(
      r.sentence,
      `the certificate of ${registry.host} is signed by an authority this machine does not trust`,
    );
    assertStrictEquals(
      r.hint,
      "give the registry's CA certificate with --ca-file PEM; --insecure skips the check, and " +
        "then anyone on the path can read and change the transfer",
    );
    assertEquals(r.cause, ["TLS_UNKNOWN_AUTHORITY"]);
    // Following the hint works.
    const ca = `${tmp.path}/ca.pem`;
    await Deno.writeTextFile(ca, registry.caCert!);
    const trusted = await runCli(["push", "--progress", "none", "--ca-file", ca, ref, file], {
      tmp: tmp.path,
    });
    assertStrictEquals(trusted.code, 0, trusted.stderr);
  },
);

Deno.test("a host name that does not resolve, and one Deno may not reach", async () => {
  await using tmp = await tempDir();
  const run = async (allowNet: string) => {
    const argv = cliArgv(
      [
        "pull",
        "--plain-http",
        "--progress",
        "none",
        "registry.invalid:5000/a/b:v1",
        `${tmp.path}/o`,
      ],
      { tmp: tmp.path },
    ).map((arg) => arg === "--allow-net=127.0.0.1" ? allowNet : arg);
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd: PROJECT_ROOT,
      clearEnv: true,
      env: cliEnv({ tmp: tmp.path }),
      stdin: "null",
    }).output();
    const decoder = new TextDecoder();
    const result = {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
    assertStrictEquals(result.code, 1, result.stderr);
    return report(result, "pull");
  };
  const dns = await run("--allow-net=registry.invalid");
  assertStrictEquals(
    dns.sentence,
    "the host name of registry.invalid:5000 does not resolve (no such host)",
  );
  assertStrictEquals(dns.hint, "check the spelling of the registry in the reference");
  assert(dns.cause.includes("ENOTFOUND"), dns.cause.join());
  // The resolver's answer: one attempt, not "GET manifest: failed after 4 attempts".
  assertStrictEquals(dns.library, "HTTP request: connection failed (host name not found)");
  const denied = await run("--allow-net=127.0.0.1");
  assertStrictEquals(
    denied.sentence,
    "Deno's permissions do not allow connecting to registry.invalid:5000 " +
      "(or to its token service or storage)",
  );
  assert(denied.hint?.startsWith("run it with --allow-net "), denied.hint);
  assertEquals(denied.cause, ["NET_PERMISSION"]);
});

Deno.test("what Distribution never says: 403, 413, 429 and 503 each get their words", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const json = (code: string) => JSON.stringify({ errors: [{ code, message: "m" }] });
  const ref = `${fake.host}/team/w:v1`;
  const pull = ["pull", "--plain-http", "--progress", "none", ref, `${tmp.path}/o`];

  fake.fault({ method: "GET", path: /manifests/, respond: { status: 403, body: json("DENIED") } });
  const denied = await failing(pull, 6, tmp.path);
  assertStrictEquals(denied.sentence, `${fake.host} denied access to team/w (403 Forbidden)`);
  assertStrictEquals(
    denied.hint,
    "the credential is accepted but may not pull there: ask for access, or log in as another " +
      "user. Run:",
  );
  assertStrictEquals(
    denied.command,
    `ocipart login --plain-http --username USER --password-stdin ${fake.host}`,
  );

  fake.clearFaults();
  fake.fault({ method: "PUT", path: /uploads/, times: Infinity, respond: { status: 413 } });
  const large = await failing(
    ["push", "--plain-http", "--progress", "none", ref, file],
    7,
    tmp.path,
  );
  // A 413 on a part names the refused size, a smaller one to push with, and the command.
  assertStrictEquals(
    large.sentence,
    `${fake.host} refused a part of 1000 bytes as too large (413 Content Too Large)`,
  );
  // 1000 bytes refused: at most half, a power of two (a guess, and the hint says so).
  assert(large.hint?.startsWith("push again with --part-size 256 (a guess"), large.hint);
  assertStrictEquals(
    large.command,
    `ocipart push --part-size 256 --plain-http --progress none ${ref} ${file}`,
  );

  fake.clearFaults();
  fake.fault({ method: "GET", path: /manifests/, times: Infinity, respond: { status: 503 } });
  const down = await failing(pull, 1, tmp.path);
  assertStrictEquals(down.sentence, `${fake.host} kept failing (503 Service Unavailable)`);

  fake.clearFaults();
  fake.fault({
    method: "GET",
    path: /manifests/,
    times: Infinity,
    respond: { status: 429, body: json("TOOMANYREQUESTS") },
  });
  const limited = await failing(pull, 1, tmp.path);
  assertStrictEquals(
    limited.sentence,
    `${fake.host} is limiting the rate of requests (429 Too Many Requests)`,
  );
  assertStrictEquals(limited.hint, "wait and try again, or use fewer --workers");
});
