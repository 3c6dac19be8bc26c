import { assert, assertEquals } from "../fixtures/assert.ts";
import {
  ContentEncodingError,
  DigestMismatchError,
  findError,
  HttpStatusError,
  NetworkError,
  NotFoundError,
  NotPartedArtifactError,
  OciError,
  PartTooLargeError,
  RetriesExhaustedError,
  retryable,
  SentinelError,
  statusCode,
  TooLargeError,
  UnauthorizedError,
} from "../../src/errors/mod.ts";
import { isAbortError } from "../../src/errors/find_error.ts";
import { isRetryableStatus } from "../../src/errors/retryable.ts";

Deno.test("sentinel is found anywhere in the cause chain, never by equality", () => {
  const status = new HttpStatusError("GET manifest", { status: 404, body: new Uint8Array([1]) });
  const sentinel = new NotFoundError(status.message, { cause: status });
  const outer = new Error("pull failed", { cause: sentinel });
  assertEquals(findError(outer, NotFoundError), sentinel);
  assertEquals(findError(outer, SentinelError), sentinel);
  assertEquals(findError(outer, HttpStatusError), status);
  assertEquals(findError(outer, UnauthorizedError), undefined);
  assert(outer !== (sentinel as unknown));
});

Deno.test("every sentinel has a distinct stable code; PartTooLarge is also TooLarge", () => {
  const codes = [
    new NotFoundError().code,
    new UnauthorizedError().code,
    new TooLargeError().code,
    new PartTooLargeError().code,
    new DigestMismatchError().code,
    new NotPartedArtifactError().code,
  ];
  assertEquals(codes, [
    "ERR_NOT_FOUND",
    "ERR_UNAUTHORIZED",
    "ERR_TOO_LARGE",
    "ERR_PART_TOO_LARGE",
    "ERR_DIGEST_MISMATCH",
    "ERR_NOT_PARTED_ARTIFACT",
  ]);
  const part = new PartTooLargeError("part 7: PUT blob upload: status 413");
  assert(findError(part, TooLargeError) === part);
  assertEquals(part.message, "part too large: part 7: PUT blob upload: status 413");
  assertEquals(part.name, "PartTooLargeError");
});

Deno.test("statusCode finds the retained status through wrapping", () => {
  const err = new RetriesExhaustedError("HEAD blob", 4, {
    cause: new HttpStatusError("HEAD blob", { status: 503, retryable: true }),
  });
  assertEquals(statusCode(err), 503);
  assertEquals(statusCode(new Error("x")), undefined);
});

Deno.test("retryable exposes classification and Retry-After after exhaustion", () => {
  const last = new HttpStatusError("GET blob", {
    status: 429,
    retryable: true,
    retryAfterMs: 7000,
  });
  const exhausted = new RetriesExhaustedError("GET blob", 4, { cause: last });
  assertEquals(retryable(new Error("wrapped", { cause: exhausted })), {
    retryable: true,
    retryAfterMs: 7000,
  });
  assertEquals(retryable(new NetworkError("GET blob: connection failed")).retryable, true);
  assertEquals(retryable(new ContentEncodingError("GET blob")).retryable, false);
  assertEquals(retryable(new Error("unclassified")).retryable, false);
  const abort = new DOMException("stop", "AbortError");
  assertEquals(retryable(new NetworkError("x", { cause: abort })).retryable, false);
  assert(isAbortError(new Error("x", { cause: abort })));
});

Deno.test("status classification per both specs", () => {
  for (const s of [429, 500, 502, 503, 504]) assert(isRetryableStatus(s), String(s));
  for (const s of [400, 401, 403, 404, 405, 410, 413, 416]) assert(!isRetryableStatus(s));
  for (const s of [401, 403, 404, 410]) assert(isRetryableStatus(s, true));
  assert(!isRetryableStatus(400, true));
});

Deno.test("rendered messages never carry the retained body", () => {
  const body = new TextEncoder().encode("https://secret.example/?token=abc");
  const err = new HttpStatusError("PUT manifest", { status: 400, body });
  assertEquals(err.message, "PUT manifest: status 400");
  assertEquals(err.body, body);
  assert(err instanceof OciError);
});

Deno.test("cause chains with cycles terminate", () => {
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  (a as { cause?: unknown }).cause = b;
  assertEquals(findError(b, NotFoundError), undefined);
});
