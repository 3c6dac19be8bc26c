import { assertStrictEquals } from "../fixtures/assert.ts";
import { errorLine, EXIT_CODES, exitOutcome } from "../../src/cli/words/exit_code.ts";
import {
  DigestMismatchError,
  HttpStatusError,
  InvalidReferenceError,
  NetworkError,
  NotFoundError,
  NotPartedArtifactError,
  PartTooLargeError,
  RetriesExhaustedError,
  TooLargeError,
  UnauthorizedError,
} from "../../src/errors/mod.ts";

const wrap = (cause: unknown) => new Error("push failed", { cause });

Deno.test("each sentinel maps to its code, found anywhere in the chain", () => {
  const cases: Array<[Error, number, string]> = [
    [new NotFoundError("GET manifest: status 404"), 3, "NotFoundError (ERR_NOT_FOUND)"],
    [new NotPartedArtifactError("artifactType"), 4, "NotPartedArtifactError"],
    [new DigestMismatchError("part 0"), 5, "DigestMismatchError (ERR_DIGEST_MISMATCH)"],
    [new UnauthorizedError("GET manifest: status 401"), 6, "UnauthorizedError"],
    [new PartTooLargeError("part 1: PUT blob upload: status 413"), 7, "PartTooLargeError"],
    [new TooLargeError("PUT manifest: status 413"), 7, "TooLargeError (ERR_TOO_LARGE)"],
  ];
  for (const [sentinel, code, name] of cases) {
    for (const err of [sentinel, wrap(sentinel), wrap(wrap(sentinel))]) {
      const outcome = exitOutcome(err);
      assertStrictEquals(outcome.code, code, sentinel.name);
      assertStrictEquals(
        outcome.explanation.includes(`matched ${name}`),
        true,
        outcome.explanation,
      );
      assertStrictEquals(outcome.explanation.includes(`exit ${code}`), true);
    }
  }
});

Deno.test("sentinels are tested in table order", () => {
  // A chain never carries two sentinels in the library; if one did, the table order decides.
  const err = new UnauthorizedError("x", { cause: new NotFoundError("y") });
  assertStrictEquals(exitOutcome(err).code, EXIT_CODES.notFound);
});

Deno.test("an error with no sentinel exits 1 and says so", () => {
  for (
    const err of [
      new InvalidReferenceError("missing registry"),
      new RetriesExhaustedError("GET blob", 4, { cause: new NetworkError("reset") }),
      new HttpStatusError("GET blob", { status: 500 }),
      new Error("plain"),
      "a string",
      undefined,
    ]
  ) {
    const outcome = exitOutcome(err);
    assertStrictEquals(outcome.code, 1);
    assertStrictEquals(outcome.explanation, "no sentinel matched (exit 1)");
  }
});

Deno.test("a delivered signal outranks the error's shape", () => {
  const sentinel = wrap(new UnauthorizedError("x"));
  assertStrictEquals(exitOutcome(sentinel, { signal: "SIGINT" }).code, 130);
  assertStrictEquals(exitOutcome(sentinel, { signal: "SIGTERM" }).code, 143);
  assertStrictEquals(
    exitOutcome(new Error("aborted"), { signal: "SIGINT" }).explanation.includes("SIGINT"),
    true,
  );
  assertStrictEquals(exitOutcome(sentinel, { signal: "SIGTERM", timeout: "1s" }).code, 143);
});

Deno.test("an expired --timeout exits 1 whatever the error", () => {
  const outcome = exitOutcome(wrap(new NotFoundError("x")), { timeout: "90s" });
  assertStrictEquals(outcome.code, 1);
  assertStrictEquals(outcome.explanation, "--timeout 90s expired; no sentinel applies (exit 1)");
});

Deno.test("errorLine keeps the message on one line", () => {
  assertStrictEquals(errorLine(new Error("first\nsecond\r\n third")), "first second third");
  assertStrictEquals(
    errorLine(new NotFoundError("GET manifest: status 404")),
    "not found: GET manifest: status 404",
  );
  assertStrictEquals(errorLine("text"), "text");
});
