/**
 * A registry port whose answers are not HTTP (garbage instead of a status line, a control byte in
 * a header, a status that is no number), on a raw TCP server: every client path of the transport
 * tells it as the cause `BAD_RESPONSE`, final, and the CLI says so in plain words with a hint.
 * A TLS server's alert in the same place is still a TLS server (`TLS_SERVER`), and a status
 * line that a close cut short is a cut connection, retried like one.
 */
import { assert, assertEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { ExchangeError } from "../../src/transport/failure.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { everyPath, type RawServer, startRawServer } from "../transport/_raw_server.ts";
import { runCli } from "../cli/_cli.ts";

/** What a hostile server answers, instead of HTTP. */
const ANSWERS: Record<string, string | Uint8Array> = {
  "garbage instead of a status line": "GARBAGE NOT HTTP\r\n\r\n",
  "a control byte in a header value":
    "HTTP/1.1 200 OK\r\nX-Bad: a\x01b\r\nContent-Length: 0\r\n\r\n",
  "a control byte in a header name": "HTTP/1.1 200 OK\r\nX\x1bBad: ab\r\nContent-Length: 0\r\n\r\n",
  "a status that is no number": "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
  "binary bytes": new Uint8Array([0x00, 0x01, 0x02, 0xff, 0xfe, 0x0d, 0x0a, 0x0d, 0x0a]),
};

// A TLS alert (record type 21, TLS 1.2, "protocol version"): what a TLS server sends to HTTP.
const TLS_ALERT = new Uint8Array([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]);

/** A raw server that answers every request with `answer` and closes the connection. */
function answering(answer: string | Uint8Array): RawServer {
  return startRawServer(async (_request, writer) => {
    await writer.write(answer);
    writer.close();
  });
}

/** The whole report of a failed CLI run, each line without the `ocipart <command>: ` prefix. */
function reportLines(stderr: string, command: string): string[] {
  const prefix = `ocipart ${command}: `;
  const lines = stderr.trimEnd().split("\n");
  for (const line of lines) assert(line.startsWith(prefix), stderr);
  return lines.map((line) => line.slice(prefix.length));
}

Deno.test("an answer that is not HTTP is BAD_RESPONSE on every path; a TLS alert is TLS_SERVER", async () => {
  await using tmp = await tempDir();
  const file = `${tmp.path}/body.bin`;
  await Deno.writeFile(file, new Uint8Array([1, 2, 3, 4]));
  type Case = readonly [string, string | Uint8Array, string];
  const cases: Case[] = [
    ...Object.entries(ANSWERS).map(([what, answer]): Case => [what, answer, "BAD_RESPONSE"]),
    ["a TLS alert", TLS_ALERT, "TLS_SERVER"],
  ];
  for (const [what, answer, reason] of cases) {
    const server = answering(answer);
    const transport = new HttpTransport({ proxy: false });
    try {
      for (const [method, request] of everyPath(server.origin, file, { head: true })) {
        const err = await transport.fetch(request()).then(() => undefined, (e) => e);
        const label = `${method}, ${what}`;
        assert(err instanceof ExchangeError, `${label}: ${err}`);
        assertEquals([err.reason, err.retryable], [reason, false], `${label}: ${err.message}`);
        assert(!/127\.0\.0\.1|GARBAGE|X-Bad/.test(err.message), err.message);
      }
    } finally {
      transport.close();
      await server.close();
    }
  }
});

Deno.test("a status line cut short by a close is a cut connection on every path, retried, not BAD_RESPONSE", async () => {
  await using tmp = await tempDir();
  const file = `${tmp.path}/body.bin`;
  await Deno.writeFile(file, new Uint8Array([1, 2, 3, 4]));
  for (const cut of ["HTTP/1.1 200", "HTTP/1.1 200 O", "HTT"]) {
    const server = answering(cut);
    const transport = new HttpTransport({ proxy: false });
    try {
      for (const [method, request] of everyPath(server.origin, file, { head: true })) {
        const err = await transport.fetch(request()).then(() => undefined, (e) => e);
        const label = `${method}, ${JSON.stringify(cut)}`;
        assert(err instanceof ExchangeError, `${label}: ${err}`);
        assert(err.reason !== "BAD_RESPONSE", `${label}: ${err.message}`);
        assert(err.retryable, `${label}: ${err.message}`);
      }
    } finally {
      transport.close();
      await server.close();
    }
  }
});

Deno.test("cli: an answer that is not HTTP has a cause, plain words and a hint, at once", async () => {
  await using tmp = await tempDir();
  const source = `${tmp.path}/w.bin`;
  await writePatternFile(source, 1000);
  for (const [what, answer] of Object.entries(ANSWERS)) {
    const server = answering(answer);
    try {
      const host = `127.0.0.1:${server.port}`;
      const reference = `${host}/team/model:v1`;
      const runs = [
        ["inspect", "--plain-http", reference],
        ["pull", "--plain-http", "--progress", "none", reference, `${tmp.path}/out.bin`],
        ["push", "--plain-http", "--progress", "none", reference, source],
      ];
      for (const args of runs) {
        const before = server.connections.length;
        const run = await runCli(args, { tmp: tmp.path });
        assertStrictEquals(run.code, 1, `${what}: ${run.stderr}`);
        assertEquals(reportLines(run.stderr, args[0]), [
          `the answer of ${host} is not valid HTTP`,
          "hint: if that port speaks HTTPS, drop --plain-http; otherwise something other than a " +
          "registry answers there, or a proxy in between is broken",
          "HTTP request: the server's answer is not valid HTTP",
          "cause: BAD_RESPONSE",
          "no sentinel matched (exit 1)",
        ], what);
        // Not retried: a read of a manifest is asked once more, of a client that shows the
        // bytes; a push's first requests run side by side.
        if (args[0] === "inspect") assert(server.connections.length - before <= 2, what);
      }
    } finally {
      await server.close();
    }
  }
});
