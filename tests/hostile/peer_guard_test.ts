/**
 * A hostile registry (the strict fake registry with scripted answers) points a token realm, a
 * blob redirect and an upload Location at addresses that reach this machine or no real peer:
 * IPv4 loopback dressed as IPv6 (compatible, NAT64, mapped), benchmarking, multicast and
 * broadcast addresses. Each is refused before dialing: the error is the peer refusal (not a
 * connection failure), nothing reaches the listener behind the address, no credential leaves,
 * and the message names none of it. The CLI, for a realm, a blob redirect and an upload
 * Location: exit 1 at once, nothing of the address on its output.
 */
import { assert, assertEquals, assertMatch, assertStrictEquals } from "../fixtures/assert.ts";
import { join } from "node:path";
import { findError } from "../../src/errors/find_error.ts";
import { PeerRefusedError } from "../../src/errors/kinds.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import { BlobClient } from "../../src/blob/client.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import {
  ErrorLedger,
  FAST_POLICY,
  SECRET,
  startCountingServer,
  writeRandomFile,
} from "../confidentiality/_helpers.ts";
import { causeLine, failureLines, runCli } from "../cli/_cli.ts";

/** Host parts a registry names; the first three would reach 127.0.0.1 if dialed as written. */
const TARGETS = [
  "[::127.0.0.1]",
  "[64:ff9b::7f00:1]",
  "[::ffff:127.0.0.1]",
  "198.18.0.1",
  "224.0.0.1",
  "255.255.255.255",
];

// What no error may render: the targets in every spelling the URL parser gives them.
const SPELLINGS = ["7f00", "64:ff9b", "198.18", "224.0.0", "255.255"];

// A refusal is immediate; a dial to a black-holed address would wait for the OS.
const PATIENCE_MS = 5_000;

async function refusedEverywhere(
  scenario: (target: string, ledger: ErrorLedger, signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const ledger = new ErrorLedger();
  const counter = startCountingServer("::");
  ledger.forbid(counter.port, ...SPELLINGS);
  try {
    for (const target of TARGETS) {
      const started = performance.now();
      const err = await ledger.rejection(
        scenario(`http://${target}:${counter.port}`, ledger, AbortSignal.timeout(PATIENCE_MS)),
      );
      assert(findError(err, PeerRefusedError), `${target}: refused, got ${err}`);
      assert(performance.now() - started < PATIENCE_MS, `${target}: refused before dialing`);
    }
    assertStrictEquals(counter.connections, 0, "nothing reached the listener");
    assertStrictEquals(counter.bytes, 0);
  } finally {
    await counter.close();
  }
}

Deno.test("hostile realm: a token realm at a disguised or non-unicast address", async () => {
  await using registry = await startFakeRegistry();
  const work = await makeTempDir("ocipart-hostile-");
  try {
    await refusedEverywhere(async (target, ledger, signal) => {
      const challenge = `Bearer realm="${target}/token?secret=${SECRET}",service="hostile"`;
      registry.clearFaults();
      registry.fault({
        path: /^\/v2\//,
        times: Infinity,
        respond: { status: 401, headers: { "www-authenticate": challenge } },
      });
      ledger.forbid(registry.port);
      using client = new PartedClient({
        plainHttp: true,
        credential: { username: "alice", password: SECRET },
        retryPolicy: FAST_POLICY,
      });
      await client.pull(`${registry.host}/hostile/realm:v1`, toFile(join(work, "out.bin")), {
        signal,
      });
    });
  } finally {
    await removeDir(work);
  }
});

Deno.test("hostile redirect: a blob redirect to a disguised or non-unicast address", async () => {
  await using registry = await startFakeRegistry();
  const bytes = new TextEncoder().encode("redirected blob");
  const digest = sha256Digest(bytes);
  registry.store.putBlob("hostile/redirect", bytes);
  await refusedEverywhere(async (target, ledger, signal) => {
    registry.clearFaults();
    registry.fault({
      method: "GET",
      path: /\/blobs\/sha256:/,
      times: Infinity,
      respond: {
        status: 307,
        headers: { location: `${target}/blob?X-Amz-Signature=${SECRET}` },
      },
    });
    ledger.forbid(registry.port);
    using client = new BlobClient({ plainHttp: true, retryPolicy: FAST_POLICY });
    const stream = await client.pull(`${registry.host}/hostile/redirect`, digest, { signal });
    await new Response(stream).arrayBuffer();
  });
});

Deno.test("hostile upload: an upload Location at a disguised or non-unicast address", async () => {
  await using registry = await startFakeRegistry();
  const work = await makeTempDir("ocipart-hostile-");
  const source = join(work, "source.bin");
  await writeRandomFile(source, 4096);
  try {
    await refusedEverywhere(async (target, ledger, signal) => {
      registry.clearFaults();
      registry.fault({
        method: "POST",
        path: /\/blobs\/uploads\/$/,
        times: Infinity,
        respond: {
          status: 202,
          headers: { location: `${target}/upload/1?X-Amz-Signature=${SECRET}` },
        },
      });
      ledger.forbid(registry.port);
      using client = new PartedClient({ plainHttp: true, retryPolicy: FAST_POLICY });
      await client.push(`${registry.host}/hostile/upload:v1`, fromFile(source), { signal });
    });
    const puts = registry.log.filter((r) => r.method === "PUT" || r.method === "PATCH");
    assertStrictEquals(puts.length, 0, "no upload body went anywhere");
  } finally {
    await removeDir(work);
  }
});

Deno.test("hostile realm through the CLI: refused at once, a safe message, exit 1", async () => {
  await using registry = await startFakeRegistry();
  const counter = startCountingServer("::");
  const work = await makeTempDir("ocipart-hostile-");
  try {
    registry.fault({
      path: /^\/v2\//,
      times: Infinity,
      respond: {
        status: 401,
        headers: {
          "www-authenticate": `Bearer realm="http://[::127.0.0.1]:${counter.port}/t",service="x"`,
        },
      },
    });
    const run = await runCli(
      ["pull", "--plain-http", "--progress", "none", `${registry.host}/a/b:v1`, `${work}/o`],
      { tmp: work },
    );
    assertStrictEquals(run.code, 1, run.stderr);
    const [error] = failureLines(run.stderr);
    assertMatch(error, /^ocipart pull: .*refused/, run.stderr);
    assertEquals(causeLine(run.stderr), [], run.stderr);
    assert(!/7f00|::|\[|\/t\b|http/.test(run.stderr), `registry-sent text: ${run.stderr}`);
    assertStrictEquals(counter.connections, 0);
  } finally {
    await counter.close();
    await removeDir(work);
  }
});

Deno.test("hostile redirect through the CLI: a blob redirect to [::127.0.0.1] is refused at once", async () => {
  await using registry = await startFakeRegistry();
  const counter = startCountingServer("::");
  const work = await makeTempDir("ocipart-hostile-");
  try {
    const source = join(work, "source.bin");
    await writeRandomFile(source, 4096);
    const reference = `${registry.host}/hostile/redirect:v1`;
    const pushed = await runCli(["push", "--plain-http", "--progress", "none", reference, source], {
      tmp: work,
    });
    assertStrictEquals(pushed.code, 0, pushed.stderr);
    registry.fault({
      method: "GET",
      path: /\/blobs\/sha256:/,
      times: Infinity,
      respond: {
        status: 307,
        headers: {
          location: `http://[::127.0.0.1]:${counter.port}/blob?X-Amz-Signature=${SECRET}`,
        },
      },
    });
    const run = await runCli(
      ["pull", "--plain-http", "--progress", "none", reference, `${work}/out.bin`],
      { tmp: work },
    );
    assertStrictEquals(run.code, 1, run.stderr);
    assertEquals(run.stderr.trimEnd().split("\n"), [
      `ocipart pull: could not pull ${reference} into ${work}/out.bin`,
      "ocipart pull: HTTP request: destination address refused by the peer guard",
      "ocipart pull: no sentinel matched (exit 1)",
    ]);
    assertStrictEquals(counter.connections, 0);
  } finally {
    await counter.close();
    await removeDir(work);
  }
});

Deno.test("hostile upload through the CLI: an upload Location at [64:ff9b::7f00:1] is refused", async () => {
  await using registry = await startFakeRegistry();
  const counter = startCountingServer("::");
  const work = await makeTempDir("ocipart-hostile-");
  try {
    const source = join(work, "source.bin");
    await writeRandomFile(source, 4096);
    registry.fault({
      method: "POST",
      path: /\/blobs\/uploads\/$/,
      times: Infinity,
      respond: {
        status: 202,
        headers: {
          location: `http://[64:ff9b::7f00:1]:${counter.port}/upload/1?X-Amz-Signature=${SECRET}`,
        },
      },
    });
    const run = await runCli(
      ["push", "--plain-http", "--progress", "none", `${registry.host}/hostile/upload:v1`, source],
      { tmp: work },
    );
    assertStrictEquals(run.code, 1, run.stderr);
    assertEquals(run.stderr.trimEnd().split("\n"), [
      `ocipart push: could not push ${source} to ${registry.host}/hostile/upload:v1`,
      "ocipart push: HTTP request: destination address refused by the peer guard",
      "ocipart push: no sentinel matched (exit 1)",
    ]);
    assertStrictEquals(counter.connections, 0);
    const bodies = registry.log.filter((r) => r.method === "PUT" || r.method === "PATCH");
    assertStrictEquals(bodies.length, 0, "no upload body went anywhere");
  } finally {
    await counter.close();
    await removeDir(work);
  }
});
