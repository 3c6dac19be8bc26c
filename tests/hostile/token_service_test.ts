/**
 * A registry whose challenge names a token service that cannot be reached (a realm whose host
 * does not resolve, or whose port refuses): the failure is told as the token service's, not the
 * registry's, without the realm's host or URL (text the registry chose). A name that does not
 * resolve is the resolver's answer and costs one attempt, for the realm and for the registry
 * itself; a refused connection stays worth retrying.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { causeChain, findError } from "../../src/errors/find_error.ts";
import { OciError } from "../../src/errors/oci_error.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { TokenServiceError } from "../../src/auth/token_service_error.ts";
import { PartedClient } from "../../src/parted/mod.ts";
import { failureReason } from "../../src/transport/failure.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { type FakeRegistry, startFakeRegistry } from "../fixtures/fake_registry.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { freePort } from "../fixtures/ports.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { runCli } from "../cli/_cli.ts";

// A name that never resolves (RFC 6761 reserves .invalid).
const NOWHERE = "no-such-host.invalid";
const FAST = { maxAttempts: 4, baseDelayMs: 50, maxDelayMs: 200 };
const HINT = "hint: the registry's authentication service is down or misconfigured (or not " +
  "reachable from this network): ask the registry's operators";

/** The fake registry, answering every request with a Bearer challenge naming `realm`. */
async function challenging(realm: string): Promise<FakeRegistry> {
  const fake = await startFakeRegistry();
  fake.fault({
    path: /^\/v2\//,
    times: Infinity,
    respond: {
      status: 401,
      headers: { "www-authenticate": `Bearer realm="${realm}",service="fake"` },
    },
  });
  return fake;
}

/** Every message the library built along the chain of `err`, for what none of them may name. */
function messages(err: unknown): string {
  return [...causeChain(err)].filter((one) => one instanceof OciError).map((one) => one.message)
    .join("\n");
}

/** A client of the fake registry that counts the exchanges that got no answer. */
function countingClient(): { client: PartedClient; unanswered: () => number } {
  let unanswered = 0;
  const client = new PartedClient({
    plainHttp: true,
    retryPolicy: FAST,
    onExchange: (record) => {
      if (record.status === 0) unanswered++;
    },
  });
  return { client, unanswered: () => unanswered };
}

/** The whole report of a failed CLI run, each line without the `ocipart <command>: ` prefix. */
function reportLines(stderr: string, command: string): string[] {
  const prefix = `ocipart ${command}: `;
  const lines = stderr.trimEnd().split("\n");
  for (const line of lines) assert(line.startsWith(prefix), stderr);
  return lines.map((line) => line.slice(prefix.length));
}

Deno.test("library: a realm that does not resolve is the token service's failure, tried once", async () => {
  await using fake = await challenging(`http://${NOWHERE}:5396/token`);
  const counted = countingClient();
  using client = counted.client;
  const err = await client.inspect(`${fake.host}/team/model:v1`).then(() => undefined, (e) => e);
  const service = findError(err, TokenServiceError);
  assert(service !== undefined, String(err));
  assertStrictEquals(
    service.message,
    "token request: the registry's token service could not be reached",
  );
  assertStrictEquals(failureReason(err), "ENOTFOUND");
  assertStrictEquals(retryable(err).retryable, false);
  assertStrictEquals(counted.unanswered(), 1, "one token request, not retried");
  assert(!/no-such-host|invalid|5396|token\?|http:/.test(messages(err)), messages(err));
});

Deno.test("library: a realm that refuses on first contact is the token service's failure, tried once", async () => {
  const port = await freePort();
  await using fake = await challenging(`http://127.0.0.1:${port}/token`);
  const counted = countingClient();
  using client = counted.client;
  const err = await client.inspect(`${fake.host}/team/model:v1`).then(() => undefined, (e) => e);
  assert(findError(err, TokenServiceError) !== undefined, String(err));
  assertStrictEquals(failureReason(err), "ECONNREFUSED");
  // A refused first connection is a wrong address, told at once (as for a registry's port).
  assertStrictEquals(counted.unanswered(), 1);
  assert(!messages(err).includes(String(port)), messages(err));
});

Deno.test("library: a registry whose name does not resolve costs one attempt", async () => {
  const transport = new HttpTransport({ proxy: false });
  let requests = 0;
  try {
    using client = new PartedClient({
      transport: (request) => {
        requests++;
        return transport.fetch(request);
      },
      retryPolicy: FAST,
    });
    const err = await client.inspect(`${NOWHERE}/team/model:v1`).then(() => undefined, (e) => e);
    assertStrictEquals(failureReason(err), "ENOTFOUND", String(err));
    assertStrictEquals(retryable(err).retryable, false);
    assertStrictEquals(requests, 1);
  } finally {
    transport.close();
  }
});

Deno.test("cli: push, pull and inspect blame the token service, at once, without its host", async () => {
  await using fake = await challenging(`http://${NOWHERE}:5396/token`);
  await using tmp = await tempDir();
  const file = `${tmp.path}/w.bin`;
  await writePatternFile(file, 1000);
  const reference = `${fake.host}/team/model:v1`;
  const runs = [
    ["push", "--plain-http", "--progress", "none", reference, file],
    ["pull", "--plain-http", "--progress", "none", reference, `${tmp.path}/out.bin`],
    ["inspect", "--plain-http", reference],
  ];
  for (const args of runs) {
    const run = await runCli(args, { tmp: tmp.path, net: [NOWHERE] });
    assertStrictEquals(run.code, 1, run.stderr);
    assertEquals(reportLines(run.stderr, args[0]), [
      `${fake.host} answered, but the token service it names could not be reached: its host ` +
      "name does not resolve",
      HINT,
      "token request: the registry's token service could not be reached",
      "cause: ENOTFOUND",
      "no sentinel matched (exit 1)",
    ]);
    assert(!/no-such-host|\.invalid|5396/.test(`${run.stdout}${run.stderr}`), run.stderr);
  }
  // One token request that got no answer: nothing was retried.
  const debug = await runCli(["inspect", "--plain-http", "--debug", reference], {
    tmp: tmp.path,
    net: [NOWHERE],
  });
  const unanswered = debug.stderr.split("\n").filter((line) => / no-answer .* failed$/.test(line));
  assertStrictEquals(unanswered.length, 1, debug.stderr);
});

Deno.test("cli: a realm that refuses on first contact is told as the token service's, at once", async () => {
  const port = await freePort();
  await using fake = await challenging(`http://127.0.0.1:${port}/token`);
  await using tmp = await tempDir();
  const run = await runCli(["inspect", "--plain-http", `${fake.host}/team/model:v1`], {
    tmp: tmp.path,
  });
  assertStrictEquals(run.code, 1, run.stderr);
  assertEquals(reportLines(run.stderr, "inspect"), [
    `${fake.host} answered, but the token service it names could not be reached: the ` +
    "connection was refused",
    HINT,
    "token request: the registry's token service could not be reached",
    "cause: ECONNREFUSED",
    "no sentinel matched (exit 1)",
  ]);
  assert(!run.stderr.includes(String(port)), run.stderr);
});

for (const [what, body] of [["no token", '{"nope":1}'], ["garbage", "<html>oops</html>"]]) {
  Deno.test(`cli: a token service that answers ${what} is the registry's authentication, not the docker configuration`, async () => {
    await using tokens = await startFakeRegistry();
    tokens.fault({
      path: /^\/token/,
      times: Infinity,
      respond: { status: 200, headers: { "content-type": "application/json" }, body },
    });
    await using fake = await challenging(`${tokens.url}/token`);
    await using tmp = await tempDir();
    const run = await runCli(["inspect", "--plain-http", `${fake.host}/team/model:v1`], {
      tmp: tmp.path,
    });
    assertStrictEquals(run.code, 1, run.stderr);
    const [sentence, hint] = reportLines(run.stderr, "inspect");
    assertStrictEquals(
      sentence,
      `${fake.host} answered, but its token service sent no usable token`,
    );
    assert(/not your docker configuration/.test(hint), hint);
    assert(!/check the docker configuration/.test(run.stderr), run.stderr);
  });
}
