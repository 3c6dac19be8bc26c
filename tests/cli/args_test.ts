import { assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { type CommandName, UsageError } from "../../src/cli/arguments/usage_error.ts";

const REF = "127.0.0.1:5000/models/llm:v1";

function usageError(args: string[], command: CommandName | undefined, pattern: RegExp) {
  assertThrows(() => parseCommandLine(args), (err: unknown) => {
    if (!(err instanceof UsageError)) return false;
    assertStrictEquals(err.command, command, `command of ${JSON.stringify(args)}`);
    if (!pattern.test(err.message)) throw new Error(`message ${err.message} !~ ${pattern}`);
    return true;
  });
}

Deno.test("push with every flag parses into a push command", () => {
  const args = [
    "push",
    "--part-size",
    "64MiB",
    "--workers=3",
    "--timeout",
    "1m30s",
    "--stall-timeout",
    "2m",
    "--plain-http",
    "--ca-file",
    "ca.pem",
    "--username",
    "alice",
    "--password-stdin",
    "--progress",
    "json",
    "--debug",
    "--limit-rate",
    "10M/s",
    "--hash-threads",
    "2",
    "--json",
    "--annotation",
    "org.opencontainers.image.source=https://example.test/a=b",
    "--annotation=team=",
    REF,
    "file.bin",
  ];
  const command = parseCommandLine(args);
  assertEquals(command, {
    kind: "push",
    workers: 3,
    timeoutMs: 90_000,
    timeoutText: "1m30s",
    stallTimeoutMs: 120_000,
    plainHttp: true,
    insecure: false,
    caFile: "ca.pem",
    registryConfig: undefined,
    username: "alice",
    progress: "json",
    limitRate: 10_000_000,
    hashThreads: 2,
    debug: true,
    reference: REF,
    file: "file.bin",
    partSize: 64 * 1024 * 1024,
    json: true,
    annotations: { "org.opencontainers.image.source": "https://example.test/a=b", team: "" },
    args: args.slice(1),
  });
});

Deno.test("pull defaults leave library defaults in place", () => {
  assertEquals(parseCommandLine(["pull", REF, "out.bin"]), {
    kind: "pull",
    workers: undefined,
    timeoutMs: 0,
    timeoutText: "0",
    stallTimeoutMs: undefined,
    plainHttp: false,
    insecure: false,
    caFile: undefined,
    registryConfig: undefined,
    username: undefined,
    progress: "auto",
    limitRate: undefined,
    hashThreads: undefined,
    debug: false,
    json: false,
    reference: REF,
    destination: "out.bin",
    verifyFileDigest: false,
    overwrite: false,
    waitMs: undefined,
    mirrors: [],
    registriesConf: undefined,
  });
  // `--wait` alone waits without a limit; only `--wait=DURATION` takes a value.
  const waits = (args: string[]) => (parseCommandLine(args) as { waitMs?: number }).waitMs;
  assertStrictEquals(waits(["pull", "--wait", REF, "out.bin"]), 0);
  assertStrictEquals(waits(["pull", "--wait=90s", REF, "out.bin"]), 90_000);
  const verify = parseCommandLine(["pull", "--verify-file-digest", REF, "out.bin"]);
  assertStrictEquals(verify.kind === "pull" && verify.verifyFileDigest, true);
  const overwrite = parseCommandLine(["pull", "--overwrite", REF, "models/"]);
  assertStrictEquals(overwrite.kind === "pull" && overwrite.overwrite, true);
  usageError(["push", "--overwrite", REF, "f"], "push", /overwrite/);
});

Deno.test("--annotation: key=value, reserved and repeated keys refused; push only", () => {
  const push = (flag: string) => ["push", "--annotation", flag, REF, "f"];
  usageError(push("novalue"), "push", /--annotation: expected key=value/);
  usageError(push("=v"), "push", /--annotation: expected key=value/);
  usageError(push("org.opencontainers.image.title=x"), "push", /reserved/);
  usageError(push("dev.ocipart.parted.v1.file-digest=x"), "push", /reserved/);
  usageError(["push", "--annotation", "a=1", "--annotation", "a=2", REF, "f"], "push", /twice/);
  usageError(["pull", "--annotation", "a=1", REF, "f"], "pull", /annotation/);
  usageError(["push", "--verify-file-digest", REF, "f"], "push", /verify-file-digest/);
});

Deno.test("flags may follow operands and -- ends flags", () => {
  const command = parseCommandLine(["pull", REF, "--workers", "2", "--", "-weird-name"]);
  assertStrictEquals(command.kind, "pull");
  if (command.kind === "pull") {
    assertStrictEquals(command.workers, 2);
    assertStrictEquals(command.destination, "-weird-name");
  }
});

Deno.test("help and version requests", () => {
  assertEquals(parseCommandLine(["--help"]), { kind: "help", command: undefined });
  assertEquals(parseCommandLine(["-h"]), { kind: "help", command: undefined });
  assertEquals(parseCommandLine(["help", "pull"]), { kind: "help", command: "pull" });
  assertEquals(parseCommandLine(["push", "-h"]), { kind: "help", command: "push" });
  assertEquals(parseCommandLine(["blob", "-h"]), { kind: "help", command: "blob" });
  assertEquals(parseCommandLine(["help", "blob"]), { kind: "help", command: "blob" });
  assertEquals(parseCommandLine(["blob", "push", "--help"]), {
    kind: "help",
    command: "blob push",
  });
  // Help wins over an otherwise incomplete command line.
  assertEquals(parseCommandLine(["pull", "--help", "x"]), { kind: "help", command: "pull" });
  assertEquals(parseCommandLine(["--version"]), { kind: "version" });
});

Deno.test("command-level usage errors name no command", () => {
  usageError([], undefined, /missing command/);
  usageError(["fetch", REF, "x"], undefined, /unknown command/);
  usageError(["--bogus"], undefined, /unknown global flag/);
  usageError(["help", "nope"], undefined, /help takes/);
});

Deno.test("unknown flags and flags of the other command are usage errors", () => {
  usageError(["push", "--bogus", REF, "f"], "push", /^unknown flag --bogus$/);
  usageError(["pull", "--part-size", "1MiB", REF, "f"], "pull", /--part-size/);
  usageError(["inspect", "--workers", "2", REF], "inspect", /--workers/);
  usageError(["logout", "--username", "u", "r.example"], "logout", /--username/);
  usageError(["pull", "-x", REF, "f"], "pull", /-x/);
  usageError(["pull", "--plain-http=yes", REF, "f"], "pull", /does not take an argument/);
});

Deno.test("wrong operand counts are usage errors", () => {
  usageError(["push"], "push", /expected 2 operands.*got 0/);
  usageError(["push", REF], "push", /got 1/);
  usageError(["pull", REF, "a", "b"], "pull", /<dest>.*got 3/);
  usageError(["pull", "", "a"], "pull", /<ref> must not be empty/);
});

Deno.test("bad values are usage errors naming the flag", () => {
  usageError(["pull", "--workers", "0", REF, "f"], "pull", /--workers: must be a positive/);
  usageError(["pull", "--workers", "2.5", REF, "f"], "pull", /--workers/);
  usageError(["pull", "--workers", "many", REF, "f"], "pull", /--workers/);
  usageError(["pull", "--workers", "", REF, "f"], "pull", /--workers/);
  usageError(["pull", "--workers"], "pull", /--workers/);
  usageError(["push", "--part-size", "0", REF, "f"], "push", /--part-size: size must be positive/);
  usageError(["push", "--part-size", "10XB", REF, "f"], "push", /--part-size: unknown size unit/);
  usageError(["pull", "--timeout", "soon", REF, "f"], "pull", /--timeout/);
  usageError(["pull", "--timeout", "5", REF, "f"], "pull", /--timeout/);
  usageError(["pull", "--progress", "fancy", REF, "f"], "pull", /--progress: must be one of/);
  usageError(["pull", "--ca-file=", REF, "f"], "pull", /--ca-file/);
  usageError(
    ["pull", "--limit-rate", "0/s", REF, "f"],
    "pull",
    /--limit-rate: size must be positive/,
  );
  usageError(["pull", "--limit-rate", "1MiB/h", REF, "f"], "pull", /--limit-rate: expected a rate/);
});

Deno.test("copy takes two references and the transfer flags, but no --username", () => {
  const command = parseCommandLine(["copy", "--limit-rate", "512KiB/s", REF, "b.example/x:v1"]);
  if (command.kind !== "copy") throw new Error(`parsed as ${command.kind}`);
  assertEquals([command.source, command.target, command.limitRate], [
    REF,
    "b.example/x:v1",
    512 * 1024,
  ]);
  usageError(["copy", REF], "copy", /expected 2 operands, <src-ref> and <dst-ref>; got 1/);
  usageError(
    ["copy", "--username", "alice", "--password-stdin", REF, "b.example/x:v1"],
    "copy",
    /--username/,
  );
});

Deno.test("negative durations are usage errors in both spellings", () => {
  usageError(
    ["pull", "--timeout=-5s", REF, "f"],
    "pull",
    /--timeout: duration must not be negative/,
  );
  // Separated too: the flag's own sentence, not the parser's "argument is ambiguous".
  usageError(
    ["pull", "--timeout", "-5s", REF, "f"],
    "pull",
    /^--timeout: duration must not be negative \(got "-5s"\)$/,
  );
});

Deno.test("a negative rate, size or count separated from its flag gets the flag's own sentence", () => {
  usageError(
    ["pull", "--limit-rate", "-1", REF, "f"],
    "pull",
    /^--limit-rate: must be a positive byte count .*not negative \(got "-1"\)$/,
  );
  usageError(["push", "--part-size", "-64MiB", REF, "f"], "push", /^--part-size: .*not negative/);
  usageError(["pull", "--workers", "-2", REF, "f"], "pull", /^--workers: must be a positive/);
  // After `--` a word starting with `-` is an operand, never a flag's value.
  const command = parseCommandLine(["push", REF, "--", "-5s"]);
  assertStrictEquals(command.kind === "push" && command.file, "-5s");
});

Deno.test("--timeout 0 means no limit", () => {
  const command = parseCommandLine(["pull", "--timeout", "0", REF, "f"]);
  assertStrictEquals(command.kind === "pull" && command.timeoutMs, 0);
});

Deno.test("--timeout and --stall-timeout take up to 365 days, kept as typed; longer is a usage error", () => {
  const command = parseCommandLine(["pull", "--timeout", "600h", "--stall-timeout=720h", REF, "f"]);
  assertStrictEquals(command.kind === "pull" && command.timeoutMs, 600 * 3_600_000);
  assertStrictEquals(command.kind === "pull" && command.timeoutText, "600h");
  assertStrictEquals(command.kind === "pull" && command.stallTimeoutMs, 720 * 3_600_000);
  const year = parseCommandLine(["pull", "--timeout", "8760h", REF, "f"]);
  assertStrictEquals(year.kind === "pull" && year.timeoutMs, 8760 * 3_600_000);
  usageError(["pull", "--timeout", "8761h", REF, "f"], "pull", /--timeout: must be at most 8760h/);
  usageError(["pull", "--stall-timeout", "9000h", REF, "f"], "pull", /--stall-timeout: must be/);
  usageError(["pull", "--stall-timeout", "soon", REF, "f"], "pull", /--stall-timeout/);
});

Deno.test("--hash-threads takes 0 to 256; anything else is a usage error", () => {
  const none = parseCommandLine(["pull", "--hash-threads", "0", REF, "f"]);
  assertStrictEquals(none.kind === "pull" && none.hashThreads, 0);
  usageError(["pull", "--hash-threads", "257", REF, "f"], "pull", /--hash-threads: must be/);
  usageError(["push", "--hash-threads=-1", REF, "f"], "push", /--hash-threads: must be/);
  usageError(["pull", "--hash-threads", "two", REF, "f"], "pull", /--hash-threads: must be/);
});

Deno.test("--username and --password-stdin only work together", () => {
  usageError(["pull", "--username", "u", REF, "f"], "pull", /--password-stdin/);
  usageError(["pull", "--password-stdin", REF, "f"], "pull", /needs --username/);
  usageError(["pull", "--username=", "--password-stdin", REF, "f"], "pull", /--username/);
});

Deno.test("inspect, verify, login and logout parse with their own flags", () => {
  assertEquals(
    parseCommandLine(["inspect", "--json", "--insecure", REF]),
    {
      kind: "inspect",
      timeoutMs: 0,
      timeoutText: "0",
      stallTimeoutMs: undefined,
      plainHttp: false,
      insecure: true,
      caFile: undefined,
      registryConfig: undefined,
      username: undefined,
      debug: false,
      json: true,
      mirrors: [],
      registriesConf: undefined,
      reference: REF,
    },
  );
  const verify = parseCommandLine(["verify", "--workers", "3", REF, "w.bin"]);
  assertStrictEquals(verify.kind === "verify" && verify.workers, 3);
  assertStrictEquals(verify.kind === "verify" && verify.file, "w.bin");
  const login = parseCommandLine([
    "login",
    "--username",
    "ci",
    "--password-stdin",
    "--registry-config",
    "c.json",
    "127.0.0.1:5000",
  ]);
  assertStrictEquals(login.kind === "login" && login.registry, "127.0.0.1:5000");
  assertStrictEquals(login.kind === "login" && login.registryConfig, "c.json");
  assertEquals(parseCommandLine(["logout", "--json", "ghcr.io"]), {
    kind: "logout",
    timeoutMs: 0,
    timeoutText: "0",
    registry: "ghcr.io",
    registryConfig: undefined,
    json: true,
  });
  assertEquals(parseCommandLine(["logout", "--timeout", " 5s", "ghcr.io"]), {
    kind: "logout",
    timeoutMs: 5000,
    timeoutText: "5s",
    registry: "ghcr.io",
    registryConfig: undefined,
    json: false,
  });
  assertEquals(parseCommandLine(["help", "verify"]), { kind: "help", command: "verify" });
});

Deno.test("command-specific usage errors of the new commands", () => {
  usageError(["inspect"], "inspect", /expected 1 operand, <ref>; got 0/);
  usageError(["verify", REF], "verify", /expected 2 operands, <ref> and <file>; got 1/);
  // Without --password-stdin, login asks on the terminal: for the user name too when missing.
  const asks = (args: string[]) => (parseCommandLine(args) as { prompt?: string }).prompt;
  assertStrictEquals(asks(["login", "127.0.0.1:5000"]), "");
  assertStrictEquals(asks(["login", "--username", "alice", "127.0.0.1:5000"]), "alice");
  assertStrictEquals(
    asks(["login", "-u", "alice", "--password-stdin", "127.0.0.1:5000"]),
    undefined,
  );
  usageError(["login", "--password-stdin", "127.0.0.1:5000"], "login", /needs --username/);
  usageError(
    ["login", "--username", "u", "--password-stdin", "https://x/"],
    "login",
    /registry host/,
  );
  usageError(["logout", "a/b"], "logout", /registry host/);
  usageError(["logout", "--registry-config=", "ghcr.io"], "logout", /--registry-config/);
  usageError(["pull", "--insecure", "--plain-http", REF, "f"], "pull", /--insecure/);
});

Deno.test("--part-size takes SI and IEC suffixes", () => {
  const si = parseCommandLine(["push", "--part-size", "100M", REF, "f"]);
  assertStrictEquals(si.kind === "push" && si.partSize, 100_000_000);
  const siB = parseCommandLine(["push", "--part-size", "100MB", REF, "f"]);
  assertStrictEquals(siB.kind === "push" && siB.partSize, 100_000_000);
  const iec = parseCommandLine(["push", "--part-size", "100MiB", REF, "f"]);
  assertStrictEquals(iec.kind === "push" && iec.partSize, 100 * 1024 * 1024);
});

Deno.test("aliases of oras and skopeo: -u, -d, --concurrency, --format json", () => {
  const push = parseCommandLine([
    "push",
    "-u",
    "alice",
    "--password-stdin",
    "-d",
    "--concurrency",
    "3",
    "--format",
    "json",
    REF,
    "f",
  ]);
  if (push.kind !== "push") throw new Error(`parsed as ${push.kind}`);
  assertEquals(
    [push.username, push.debug, push.workers, push.json],
    ["alice", true, 3, true],
  );
  // The same command line spelled with our own flags parses to the same command, but for the
  // words typed, which push keeps as spelled (its rerun command repeats them).
  const own = [
    "--username=alice",
    "--password-stdin",
    "--debug",
    "--workers=3",
    "--json",
    REF,
    "f",
  ];
  const spelled = parseCommandLine(["push", ...own]);
  if (spelled.kind !== "push") throw new Error(`parsed as ${spelled.kind}`);
  assertEquals({ ...push, args: [] }, { ...spelled, args: [] });
  assertEquals(push.args, [
    "-u",
    "alice",
    "--password-stdin",
    "-d",
    "--concurrency",
    "3",
    "--format",
    "json",
    REF,
    "f",
  ]);
  assertEquals(spelled.args, own);
  const verify = parseCommandLine(["verify", "--concurrency=2", REF, "f"]);
  assertStrictEquals(verify.kind === "verify" && verify.workers, 2);
  assertStrictEquals(parseCommandLine(["inspect", "--format", "text", REF]).kind, "inspect");
  const logout = parseCommandLine(["logout", "--format=json", "ghcr.io"]);
  assertStrictEquals(logout.kind === "logout" && logout.json, true);
  const copy = parseCommandLine(["copy", "-d", "--concurrency", "4", REF, "b.example/x:v1"]);
  assertEquals(copy.kind === "copy" && [copy.debug, copy.workers], [true, 4]);
});

Deno.test("an alias's value is checked under the name typed; alias and flag together refused", () => {
  usageError(
    ["pull", "--concurrency", "0", REF, "f"],
    "pull",
    /^--concurrency: must be a positive/,
  );
  usageError(
    ["pull", "--concurrency", "2", "--workers", "2", REF, "f"],
    "pull",
    /--concurrency is another name for --workers/,
  );
  usageError(["inspect", "--format", "yaml", REF], "inspect", /^--format: must be json or text$/);
  usageError(["inspect", "--format", "text", "--json", REF], "inspect", /contradicts --json/);
  usageError(["pull", "-u", "alice", REF, "f"], "pull", /--username needs --password-stdin/);
});

Deno.test("near misses of flags and commands get a suggestion", () => {
  usageError(
    ["pull", "--plain-htpp", REF, "f"],
    "pull",
    /^unknown flag --plain-htpp \(did you mean --plain-http\?\)$/,
  );
  usageError(["push", "--part-szie", "1M", REF, "f"], "push", /did you mean --part-size\?/);
  usageError(["verify", "--worker", "2", REF, "f"], "verify", /did you mean --workers\?/);
  usageError(["pull", "--timout", "1s", REF, "f"], "pull", /did you mean --timeout\?/);
  usageError(["pul", REF, "f"], undefined, /^unknown command "pul" \(did you mean pull\?\)$/);
  usageError(["inpsect", REF], undefined, /did you mean inspect\?/);
  usageError(["cp", REF, REF], undefined, /did you mean copy\?/);
  usageError(["version"], undefined, /did you mean --version\?/);
  // Too far from anything: no guess.
  usageError(["push", "--frobnicate", REF, "f"], "push", /^unknown flag --frobnicate$/);
  usageError(["frobnicate"], undefined, /^unknown command "frobnicate"$/);
});

Deno.test("a flag of another command, or before the command, says where it belongs", () => {
  usageError(
    ["pull", "--part-size", "1MiB", REF, "f"],
    "pull",
    /^unknown flag --part-size: it is a flag of push, not of pull$/,
  );
  usageError(
    ["--plain-http", "pull", REF, "f"],
    undefined,
    /^unknown global flag --plain-http: flags go after the command, as in ocipart pull --plain-http …$/,
  );
  usageError(
    ["--plain-http", "copy", REF, REF],
    undefined,
    /^unknown global flag --plain-http: flags go after the command, as in ocipart copy --plain-http …$/,
  );
  // The command typed does not take it: the command that does is named.
  usageError(
    ["--part-size", "1MiB", "pull", REF, "f"],
    undefined,
    /^unknown global flag --part-size: flags go after the command, as in ocipart push --part-size …$/,
  );
});

Deno.test("flags of oras, skopeo and curl get a pointed hint", () => {
  const cases: Array<[string[], CommandName, RegExp]> = [
    [
      ["pull", "-o", "out.bin", REF],
      "pull",
      /^-o is not a flag of ocipart: the destination is the second operand, as in ocipart pull <ref> <dest>$/,
    ],
    [["pull", "--output", "out.bin", REF], "pull", /the destination is the second operand/],
    [["push", "-o", "x", REF, "f"], "push", /the file is the second operand/],
    [
      ["pull", "-k", REF, "f"],
      "pull",
      /^-k is not a flag of ocipart: use --insecure to skip certificate verification, or give --ca-file PEM to trust the registry's CA instead$/,
    ],
    [
      ["pull", "--tls-verify=false", REF, "f"],
      "pull",
      /^--tls-verify is not a flag of ocipart: use --insecure to skip/,
    ],
    [
      ["pull", "--tls-verify", REF, "f"],
      "pull",
      /^--tls-verify is not a flag of ocipart: certificates are verified by default; drop it$/,
    ],
    [
      ["pull", "--authfile", "a.json", REF, "f"],
      "pull",
      /^--authfile is not a flag of ocipart: use --registry-config FILE/,
    ],
    [
      ["pull", "-p", "secret", REF, "f"],
      "pull",
      /^-p is not a flag of ocipart: a password never goes on the command line: give --username USER --password-stdin/,
    ],
    [["push", "--password", "secret", REF, "f"], "push", /--password-stdin/],
    [["copy", "--creds", "u:p", REF, REF], "copy", /never goes on the command line/],
    [
      ["copy", "-u", "alice", REF, REF],
      "copy",
      /^-u is not a flag of copy: each registry's credential comes from the docker configuration/,
    ],
    [["inspect", "--verbose", REF], "inspect", /use --debug \(-d\)/],
  ];
  for (const [args, command, pattern] of cases) usageError(args, command, pattern);
  // A password typed after -p or --password is never repeated.
  for (const flag of ["-p", "--password", "--password=typed-secret"]) {
    const args = ["pull", flag, ...(flag.includes("=") ? [] : ["typed-secret"]), REF, "f"];
    assertThrows(
      () => parseCommandLine(args),
      (err: Error) => !err.message.includes("typed-secret"),
    );
  }
});

Deno.test("typed control characters are escaped in usage messages", () => {
  usageError(["pull", "--x\u001b[2J", REF, "f"], "pull", /^unknown flag --x\\x1b\[2J$/);
  usageError(["\u001b]0;t\u0007"], undefined, /^unknown command "\\x1b\]0;t\\x07"$/);
});
