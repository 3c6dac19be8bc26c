/**
 * The first lines of a failure report, for every cause code the CLI prints and the cases the
 * end-to-end tests cannot reach cheaply (a copy's side, timeouts, signals, local files).
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import {
  HttpStatusError,
  LocalFileError,
  RetriesExhaustedError,
  StallError,
} from "../../src/errors/kinds.ts";
import {
  DigestMismatchError,
  NotFoundError,
  UnauthorizedError,
} from "../../src/errors/sentinels.ts";
import { failureWords } from "../../src/cli/words/failure_words.ts";
import { ExchangeError, type FailureReason } from "../../src/transport/failure.ts";
import { TokenServiceError } from "../../src/auth/token_service_error.ts";

const REASONS: FailureReason[] = [
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "TLS_UNKNOWN_AUTHORITY",
  "TLS_SELF_SIGNED",
  "TLS_NAME_MISMATCH",
  "TLS_EXPIRED",
  "TLS_CERTIFICATE",
  "PLAIN_HTTP_SERVER",
  "TLS_SERVER",
  "BAD_RESPONSE",
  "NET_PERMISSION",
  "READ_PERMISSION",
  "WRITE_PERMISSION",
  "ENV_PERMISSION",
];

const pull = { command: "pull", input: { reference: "r.example:5400/a/b:v1", destination: "o" } };

Deno.test("every transport reason has a sentence naming the registry typed and a hint", () => {
  for (const reason of REASONS) {
    const words = failureWords(new ExchangeError("HTTP request", "x", undefined, reason), pull);
    assert(words !== undefined && words.hint !== undefined, reason);
    // A file or environment permission is not about the registry.
    if (!/^(READ|WRITE|ENV)_PERMISSION$/.test(reason)) {
      assert(words.sentence.includes("r.example:5400"), `${reason}: ${words.sentence}`);
    }
  }
});

Deno.test("a copy between two registries names the side the failed request went to", () => {
  const copy = {
    command: "copy",
    input: { source: "a.example/x:v1", target: "b.example:5000/y:v1" },
  };
  const status = (operation: string) =>
    new NotFoundError("x", { cause: new HttpStatusError(operation, { status: 404 }) });
  assert(failureWords(status("GET manifest"), copy)!.sentence.startsWith("a.example has no"));
  const put = failureWords(status("HEAD blob"), copy)!.sentence;
  assert(put.startsWith("a part of b.example:5000/y:v1 is missing on b.example:5000"), put);
  const refused = new ExchangeError("HTTP request", "x", undefined, "ECONNREFUSED");
  assertStrictEquals(
    failureWords(refused, copy)!.sentence,
    "nothing is listening at a.example or b.example:5000: the connection was refused",
  );
  // One registry: one name, and the port a plain-HTTP or HTTPS dial used.
  const same = { command: "copy", input: { source: "a.example/x:v1", target: "a.example/y:v1" } };
  assertStrictEquals(
    failureWords(refused, same)!.hint,
    "is the registry running, and is 443 its port?",
  );
  const plain = { ...same, input: { ...same.input, plainHttp: true } };
  assertStrictEquals(
    failureWords(refused, plain)!.hint,
    "is the registry running, and is 80 its port?",
  );
});

Deno.test("a stop signal leaves the contract's lines alone; an expired --timeout says how to go on", () => {
  assertStrictEquals(failureWords(new Error("aborted"), pull, { signal: "SIGINT" }), undefined);
  assertEquals(failureWords(new Error("aborted"), pull, { timeout: "90s" }), {
    sentence: "could not pull r.example:5400/a/b:v1 into o within --timeout 90s",
    hint: "run it again (with a longer --timeout): it resumes from o.parted-partial",
  });
  // Into a directory, the partial is the artifact's file's, once the pull named it.
  const intoDirectory = {
    ...pull,
    input: { ...pull.input, destination: "d", intoDirectory: true },
  };
  assertStrictEquals(
    failureWords(new Error("aborted"), intoDirectory, { timeout: "90s" })?.hint,
    "run it again (with a longer --timeout): it resumes where it stopped",
  );
  assertStrictEquals(
    failureWords(new Error("aborted"), { ...intoDirectory, pulledFile: "d/w.bin" }, {
      timeout: "90s",
    })?.hint,
    "run it again (with a longer --timeout): it resumes from d/w.bin.parted-partial",
  );
});

Deno.test("bytes that did not match their digest: what a pull kept is said as it is", () => {
  const mismatch = new DigestMismatchError("part 2");
  // The parts were reached: the partial file stays, and a rerun checks what it reuses.
  assertEquals(failureWords(mismatch, { ...pull, pulledFile: "o" }), {
    sentence: "bytes of r.example:5400/a/b:v1 did not match their digest; o was not written",
    hint: "try again: a rerun reuses from o.parted-partial only what matches its digest; if it " +
      "keeps happening, the registry's copy is damaged",
  });
  const directory = { command: "pull", input: { reference: "r.example/a/b:v1", destination: "d" } };
  assertStrictEquals(
    failureWords(mismatch, { ...directory, pulledFile: "d/w.bin" })?.hint,
    "try again: a rerun reuses from d/w.bin.parted-partial only what matches its digest; if it " +
      "keeps happening, the registry's copy is damaged",
  );
  // The manifest did not match: no part was reached.
  assertEquals(failureWords(mismatch, pull), {
    sentence: "bytes of r.example:5400/a/b:v1 did not match their digest; o was not written",
    hint: "try again; if it keeps happening, the registry's copy is damaged",
  });
  // A copy never completes an upload whose bytes did not match.
  const copy = { command: "copy", input: { source: "a.example/x:v1", target: "b.example/y:v1" } };
  assertStrictEquals(
    failureWords(mismatch, copy)?.sentence,
    "bytes of a.example/x:v1 did not match their digest; nothing unverified was kept",
  );
});

Deno.test("bytes that did not match on standard output: what went out is said as it is", () => {
  const mismatch = new DigestMismatchError("part 2");
  const reference = "r.example/a/b:v1";
  // A part goes out only once verified.
  for (
    const subject of [
      { command: "pull", input: { reference, destination: "-" } },
      { command: "cat", input: { reference } },
    ]
  ) {
    assertStrictEquals(
      failureWords(mismatch, subject)?.sentence,
      "bytes of r.example/a/b:v1 did not match their digest; standard output ends with the last " +
        "part that verified, and nothing of the part that failed was written",
      subject.command,
    );
  }
  // A blob's bytes go out as they arrive.
  const blob = {
    command: "blob pull",
    input: { reference: "r.example/a/b@sha256:ab", destination: "-" },
  };
  assertStrictEquals(
    failureWords(new DigestMismatchError("blob"), blob)?.sentence,
    "bytes of r.example/a/b@sha256:ab did not match their digest after they went to standard " +
      "output: that output is not the blob, discard it",
  );
});

Deno.test("a local file error names the path typed and the system's reason", () => {
  const local = (code: string) =>
    new LocalFileError("pull destination: write failed", {
      cause: Object.assign(new Error("os"), { code }),
    });
  assertEquals(failureWords(local("ENOSPC"), pull), {
    sentence: "cannot use o: no space left on the device (ENOSPC)",
    hint: "free some space and run it again: the pull resumes where it stopped",
  });
  assertStrictEquals(
    failureWords(local("EWEIRD"), pull)!.sentence,
    "cannot use o (EWEIRD)",
  );
});

Deno.test("what was typed is escaped before it is repeated", () => {
  const typed = { command: "inspect", input: { reference: "r.example/a/b:v1\u001b[2J" } };
  const words = failureWords(new Error("x"), typed)!;
  assertStrictEquals(words.sentence, "could not inspect r.example/a/b:v1\\x1b[2J");
});

Deno.test("a token service out of reach is the token service's, unless a permission says more", () => {
  const at = (reason: FailureReason) =>
    new TokenServiceError({ cause: new ExchangeError("HTTP request", "x", undefined, reason) });
  assertEquals(failureWords(at("ENOTFOUND"), pull), {
    sentence: "r.example:5400 answered, but the token service it names could not be reached: " +
      "its host name does not resolve",
    hint: "the registry's authentication service is down or misconfigured (or not reachable " +
      "from this network): ask the registry's operators",
  });
  assert(
    failureWords(at("TLS_SELF_SIGNED"), pull)!.sentence.endsWith(
      ": its certificate is not trusted",
    ),
  );
  // A permission's own words already name the token service, and the flag to grant.
  assertStrictEquals(
    failureWords(at("NET_PERMISSION"), pull)!.sentence,
    "Deno's permissions do not allow connecting to r.example:5400 (or to its token service or " +
      "storage)",
  );
  // An unclassified failure still blames the token service.
  assertStrictEquals(
    failureWords(new TokenServiceError({ cause: new Error("x") }), pull)!.sentence,
    "r.example:5400 answered, but the token service it names could not be reached",
  );
});

Deno.test("a login a hint prints reaches the registry as the failed command did", () => {
  const unauthorized = (operation: string) =>
    new UnauthorizedError("x", { cause: new HttpStatusError(operation, { status: 401 }) });
  const push = {
    command: "push",
    input: {
      reference: "r.example:5000/a/b:v1",
      insecure: true,
      caFile: "my ca.pem",
      registryConfig: "ci/config.json",
    },
  };
  assertEquals(
    failureWords(unauthorized("HEAD blob"), push)?.command,
    "ocipart login --insecure --ca-file 'my ca.pem' --registry-config ci/config.json " +
      "--username USER --password-stdin r.example:5000",
  );
  // A copy: the side the refused request went to, with that side's own flags.
  const sides = {
    source: { plainHttp: true, insecure: false, caFile: undefined },
    target: { plainHttp: false, insecure: false, caFile: "corp.pem" },
  };
  const copy = {
    command: "copy",
    input: { source: "127.0.0.1:5000/x:v1", target: "b.example/y:v1", plainHttp: true, sides },
  };
  assertEquals(failureWords(unauthorized("HEAD blob"), copy), {
    sentence: "b.example needs credentials, and none it accepts were sent (401 Unauthorized)",
    hint: "log in to b.example first",
    command: "ocipart login --ca-file corp.pem --username USER --password-stdin b.example",
  });
  assertStrictEquals(
    failureWords(unauthorized("GET manifest"), copy)?.command,
    "ocipart login --plain-http --username USER --password-stdin 127.0.0.1:5000",
  );
});

Deno.test("the temporary directory of a pipe or of cat is named, not the output", () => {
  const full = new LocalFileError("temporary directory: cannot be created", {
    cause: Object.assign(new Error("os"), { code: "ENOSPC" }),
  });
  const reference = "r.example/a/b:v1";
  assertEquals(
    failureWords(full, {
      command: "pull",
      input: { reference, destination: "-", tempDir: "/big" },
    }),
    {
      sentence: "cannot keep parts in --temp-dir /big: no space left on the device (ENOSPC)",
      hint: "free some space, or give --temp-dir another directory on a disk with room",
    },
  );
  const denied = new LocalFileError("temporary part file: cannot be created", {
    cause: Object.assign(new Error("os"), { code: "EACCES" }),
  });
  assertStrictEquals(
    failureWords(denied, { command: "cat", input: { reference } })?.sentence,
    "cannot keep parts in the system's temporary directory: permission denied (EACCES)",
  );
  // Cat's cache directory is named as typed.
  assertStrictEquals(
    failureWords(denied, { command: "cat", input: { reference, cacheDir: "~/c" } })?.sentence,
    "cannot keep parts in --cache-dir ~/c: permission denied (EACCES)",
  );
  // A failure of cat or a blob command names what was asked.
  assertStrictEquals(
    failureWords(new Error("odd"), { command: "cat", input: { reference } })?.sentence,
    "could not read r.example/a/b:v1",
  );
});

Deno.test("a stall's hint names --workers only for a command that has it", () => {
  const stall = new StallError("no bytes for 60 s");
  const reference = "r.example/a/b:v1";
  assertStrictEquals(
    failureWords(stall, { command: "pull", input: { reference, destination: "o" } })?.hint,
    "on a slow or busy link, raise --stall-timeout or lower --workers",
  );
  assertStrictEquals(
    failureWords(stall, { command: "cat", input: { reference } })?.hint,
    "on a slow or busy link, raise --stall-timeout",
  );
});

Deno.test("answers broken off partway, every attempt: said as such, not only a count", () => {
  const cut = new ExchangeError("HTTP response", "body read failed", new TypeError("reading"));
  const exhausted = new RetriesExhaustedError("part 0: download", 4, { cause: cut });
  const words = failureWords(exhausted, {
    command: "cat",
    input: { reference: "r.example:5400/a/b:v1" },
  });
  assertStrictEquals(
    words?.sentence,
    "r.example:5400 broke off its answer partway, 4 times in a row",
  );
});
