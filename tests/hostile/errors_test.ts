/**
 * A hostile registry's error answers through the CLI: error bodies whose codes are not on the
 * distribution specification's list, or whose code, message and detail fields carry control
 * characters and terminal escape sequences. The CLI explains the failure in its own words and
 * repeats at most a code from the specification's list; nothing the registry wrote reaches the
 * terminal.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { HttpStatusError } from "../../src/errors/kinds.ts";
import { distributionErrorCodes } from "../../src/registry/error_codes.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { type CliResult, runCli } from "../cli/_cli.ts";

// Every marker a test plants; none may appear in what the CLI writes.
const MARK = "PWNED";
const ESCAPES = [
  `\u001b]0;${MARK}-title\u0007`, // set the window title
  `\u001b[2J\u001b[H${MARK}-clear`, // clear the screen
  `\u001b[31m${MARK}-red\u001b[0m`,
  `\r${MARK}-overwrite\u0008\u0008`,
  `\u0000${MARK}-nul\u009b31m`,
];
// Any control character but the line feed that ends each line.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

function errorBody(codes: unknown[]): string {
  return JSON.stringify({
    errors: codes.map((code, i) => ({
      code,
      message: ESCAPES[i % ESCAPES.length],
      detail: { [ESCAPES[(i + 1) % ESCAPES.length]]: ESCAPES[(i + 2) % ESCAPES.length] },
    })),
  });
}

function assertNothingRaw(result: CliResult): void {
  const all = `${result.stdout}${result.stderr}`;
  assert(!CONTROL.test(all), `a control character reached the terminal: ${JSON.stringify(all)}`);
  assert(!all.includes(MARK), `registry text reached the terminal: ${all}`);
  assert(!all.includes("message") && !all.includes("detail"), all);
}

Deno.test("a listed code among hostile fields: the CLI's words and the code, nothing raw", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  fake.fault({
    method: "GET",
    path: /manifests/,
    respond: { status: 404, body: errorBody(["NAME_UNKNOWN", MARK, "NAME_UNKNOWN"]) },
  });
  const ref = `${fake.host}/team/weights:v1`;
  const result = await runCli(["inspect", "--plain-http", ref], { tmp: tmp.path });
  assertStrictEquals(result.code, 3, result.stderr);
  assertNothingRaw(result);
  assertStrictEquals(
    result.stderr.split("\n")[0],
    `ocipart inspect: the repository team/weights does not exist on ${fake.host} ` +
      "(404 Not Found, NAME_UNKNOWN)",
  );
});

Deno.test("codes off the specification's list are never repeated, however close", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const codes = [
    `NAME_UNKNOWN\u001b[31m`,
    "name_unknown",
    " MANIFEST_UNKNOWN",
    `${MARK}_CODE`,
    `\u001b]0;${MARK}\u0007`,
    "__proto__",
    { code: "NAME_UNKNOWN" },
    12,
    null,
  ];
  // The manifest and the tag list (asked to tell a tag from a repository) answer alike.
  for (const path of [/manifests/, /tags\/list/]) {
    fake.fault({
      method: "GET",
      path,
      times: Infinity,
      respond: { status: 404, body: errorBody(codes) },
    });
  }
  const ref = `${fake.host}/team/weights:v1`;
  const result = await runCli(
    ["pull", "--plain-http", "--progress", "none", ref, `${tmp.path}/out.bin`],
    { tmp: tmp.path },
  );
  assertStrictEquals(result.code, 3, result.stderr);
  assertNothingRaw(result);
  assertStrictEquals(
    result.stderr.split("\n")[0],
    `ocipart pull: ${fake.host} has no ${ref}: the repository or its tag v1 does not exist ` +
      "(404 Not Found)",
  );
  assert(!/UNKNOWN|proto/i.test(result.stderr), result.stderr);
});

Deno.test("a refusal and a rejected manifest with hostile bodies: words of the CLI only", async () => {
  await using fake = await startFakeRegistry();
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const ref = `${fake.host}/team/weights:v1`;
  const push = ["push", "--plain-http", "--progress", "none", ref, file];

  fake.fault({
    method: "HEAD",
    times: Infinity,
    respond: { status: 401, headers: { "www-authenticate": `Basic realm="${MARK}"` } },
  });
  fake.fault({
    method: "POST",
    times: Infinity,
    respond: { status: 401, body: errorBody(["UNAUTHORIZED", MARK]) },
  });
  const refused = await runCli(push, { tmp: tmp.path });
  assertStrictEquals(refused.code, 6, refused.stderr);
  assertNothingRaw(refused);
  assert(
    refused.stderr.startsWith(`ocipart push: ${fake.host} needs credentials`),
    refused.stderr,
  );

  fake.clearFaults();
  // Listed codes among others: each listed one is named once.
  const some = Array.from({ length: 16 }, (_, i) => i % 2 ? "MANIFEST_BLOB_UNKNOWN" : MARK);
  fake.fault({
    method: "PUT",
    path: /manifests/,
    times: 1,
    respond: { status: 400, body: errorBody(some) },
  });
  const rejected = await runCli(push, { tmp: tmp.path });
  assertStrictEquals(rejected.code, 1, rejected.stderr);
  assertNothingRaw(rejected);
  assertStrictEquals(
    rejected.stderr.split("\n")[0],
    `ocipart push: ${fake.host} refused a request (400 Bad Request, MANIFEST_BLOB_UNKNOWN)`,
  );

  // A body past what is kept of it (a few KiB) is not read for codes at all.
  const many = Array.from({ length: 2000 }, () => "MANIFEST_BLOB_UNKNOWN");
  fake.fault({ method: "PUT", path: /manifests/, respond: { status: 400, body: errorBody(many) } });
  const long = await runCli(push, { tmp: tmp.path });
  assertStrictEquals(long.code, 1, long.stderr);
  assertNothingRaw(long);
  assertStrictEquals(
    long.stderr.split("\n")[0],
    `ocipart push: ${fake.host} refused a request (400 Bad Request)`,
  );
});

Deno.test("a reference pasted with escape sequences is repeated escaped", async () => {
  await using tmp = await tempDir();
  const result = await runCli(
    ["pull", `127.0.0.1:9/a/b:v1\u001b]0;${MARK}\u0007`, `${tmp.path}/o`],
    { tmp: tmp.path },
  );
  assertStrictEquals(result.code, 1, result.stderr);
  assert(!CONTROL.test(result.stderr), JSON.stringify(result.stderr));
  assertStrictEquals(
    result.stderr.split("\n")[0],
    `ocipart pull: "127.0.0.1:9/a/b:v1\\x1b]0;${MARK}\\x07" is not a valid reference: invalid tag`,
  );
});

Deno.test("only exact codes of the list come out of an error body", () => {
  const err = (body: string) =>
    new HttpStatusError("GET manifest", { status: 404, body: new TextEncoder().encode(body) });
  assertEquals(
    distributionErrorCodes(err(errorBody(["BLOB_UNKNOWN", "DENIED", "BLOB_UNKNOWN"]))),
    [
      "BLOB_UNKNOWN",
      "DENIED",
    ],
  );
  for (
    const body of [
      errorBody(["Blob_Unknown", "BLOB_UNKNOWN ", "BLOB_UNKNOWN\u0000", "constructor", "toString"]),
      '{"errors":{"code":"DENIED"}}',
      '{"errors":[["DENIED"]]}',
      "DENIED",
      "",
      "null",
    ]
  ) {
    assertEquals(distributionErrorCodes(err(body)), [], body);
  }
});
