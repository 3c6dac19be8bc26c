import { assertEquals } from "../fixtures/assert.ts";
import * as http from "node:http";
import {
  causeCodes,
  connectError,
  ExchangeError,
  failureReason,
} from "../../src/transport/failure.ts";
import { nodeExchange } from "../../src/transport/engine/node_exchange.ts";
import { ProxyRouter } from "../../src/transport/engine/proxy.ts";
import { HttpTransport } from "../../src/transport/engine/http_transport.ts";
import { makeSelfSigned, makeTestCa } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { everyPath } from "./_raw_server.ts";

const raw = (message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), extra);

Deno.test("raw failures of every client path map to one safe reason", () => {
  const cases: Array<[unknown, string | undefined, boolean]> = [
    [raw("connect ECONNREFUSED 10.1.2.3:5000", { code: "ECONNREFUSED" }), "ECONNREFUSED", true],
    [raw("read ECONNRESET", { code: "ECONNRESET" }), "ECONNRESET", true],
    [raw("connect ETIMEDOUT 10.1.2.3:443", { code: "ETIMEDOUT" }), "ETIMEDOUT", true],
    // A name the resolver says does not exist is its answer: not retried. A resolver that could
    // not answer may answer next time.
    [raw("getaddrinfo ENOTFOUND registry.internal", { code: "ENOTFOUND" }), "ENOTFOUND", false],
    [
      new TypeError("fetch failed", {
        cause: raw(
          "error sending request for url (https://r.example/v2/): client error (Connect): dns error: failed to lookup address information: Name or service not known",
        ),
      }),
      "ENOTFOUND",
      false,
    ],
    [raw("failed to lookup address information: Name or service not known"), "ENOTFOUND", false],
    [raw("getaddrinfo EAI_AGAIN registry.internal", { code: "EAI_AGAIN" }), "EAI_AGAIN", true],
    [
      new TypeError("fetch failed", {
        cause: raw(
          "error sending request for url (https://r.example/v2/): client error (Connect): dns error: failed to lookup address information: Temporary failure in name resolution",
        ),
      }),
      "EAI_AGAIN",
      true,
    ],
    [
      raw("failed to lookup address information: Non-recoverable failure in name resolution"),
      "EAI_AGAIN",
      true,
    ],
    [raw("Connection refused (os error 111)", { name: "ConnectionRefused" }), "ECONNREFUSED", true],
    [raw("invalid peer certificate: UnknownIssuer"), "TLS_UNKNOWN_AUTHORITY", false],
    [raw("invalid peer certificate: NotValidForName"), "TLS_NAME_MISMATCH", false],
    // The runtime's own words (Deno 2.9), for an address and for a name.
    [
      raw(
        'invalid peer certificate: certificate not valid for name "::1"; certificate is only valid for DnsName("registry.example")',
      ),
      "TLS_NAME_MISMATCH",
      false,
    ],
    [
      new TypeError("fetch failed", {
        cause: raw(
          'error sending request for url (https://localhost:5000/v2/): client error (Connect): invalid peer certificate: certificate not valid for name "localhost"; certificate is only valid for IpAddress(127.0.0.1)',
        ),
      }),
      "TLS_NAME_MISMATCH",
      false,
    ],
    [raw("invalid peer certificate: Expired"), "TLS_EXPIRED", false],
    [
      raw("invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))"),
      "TLS_SELF_SIGNED",
      false,
    ],
    // Node's code for a server presenting a self-signed certificate: self-signed, not an unknown
    // authority (a chain ending in an untrusted root is that).
    [
      raw("self-signed certificate", { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }),
      "TLS_SELF_SIGNED",
      false,
    ],
    [raw("x", { code: "SELF_SIGNED_CERT_IN_CHAIN" }), "TLS_UNKNOWN_AUTHORITY", false],
    [raw("x", { code: "ERR_TLS_CERT_ALTNAME_INVALID" }), "TLS_NAME_MISMATCH", false],
    [raw("x", { code: "CERT_HAS_EXPIRED" }), "TLS_EXPIRED", false],
    [raw("received corrupt message of type InvalidContentType"), "PLAIN_HTTP_SERVER", false],
    // node:http's parser: a TLS alert where the status line should be is a TLS server; other
    // bytes that are not HTTP are a malformed answer, as are the runtime client's refusals.
    [
      raw("Parse Error: Expected HTTP/", {
        code: "HPE_INVALID_CONSTANT",
        rawPacket: new Uint8Array([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]),
      }),
      "TLS_SERVER",
      false,
    ],
    [
      raw("Parse Error: Expected HTTP/", {
        code: "HPE_INVALID_CONSTANT",
        rawPacket: new TextEncoder().encode("GARBAGE\r\n"),
      }),
      "BAD_RESPONSE",
      false,
    ],
    [raw("Parse Error: Expected HTTP/", { code: "HPE_INVALID_CONSTANT" }), "BAD_RESPONSE", false],
    [
      raw("Parse Error: Invalid header value char", { code: "HPE_INVALID_HEADER_TOKEN" }),
      "BAD_RESPONSE",
      false,
    ],
    [
      raw("Parse Error: Invalid status code", { code: "HPE_INVALID_STATUS" }),
      "BAD_RESPONSE",
      false,
    ],
    [raw("Parse Error: Invalid EOF state", { code: "HPE_INVALID_EOF_STATE" }), undefined, true],
    [
      new TypeError("fetch failed", {
        cause: raw(
          "error sending request from 127.0.0.1:46852 for http://10.1.2.3:5000/v2/ (10.1.2.3:5000): client error (SendRequest): invalid HTTP header parsed",
        ),
      }),
      "BAD_RESPONSE",
      false,
    ],
    [raw("client error (SendRequest): invalid HTTP version parsed"), "BAD_RESPONSE", false],
    [raw("client error (SendRequest): invalid HTTP status-code parsed"), "BAD_RESPONSE", false],
    [
      raw('Requires net access to "10.1.2.3:5000"', { name: "NotCapable" }),
      "NET_PERMISSION",
      false,
    ],
    [raw('Requires read access to "/x"', { name: "NotCapable" }), "READ_PERMISSION", false],
    [raw('Requires write access to "/x"', { name: "NotCapable" }), "WRITE_PERMISSION", false],
    ...permissionDenials(),
    ...osRefusals(),
    [raw("something else"), undefined, true],
  ];
  for (const [cause, reason, retryable] of cases) {
    assertEquals(failureReason(cause), reason, String(cause));
    const err = connectError(cause);
    assertEquals(err.reason, reason);
    assertEquals(err.retryable, retryable, String(cause));
    // The message is fixed text: nothing of the raw error's host, address or URL.
    assertEquals(
      /10\.1\.2\.3|r\.example|registry\.(internal|example)|localhost|::1|https?:/.test(err.message),
      false,
    );
    if (reason !== undefined) assertEquals(causeCodes(err).includes(reason), true);
  }
});

/** Deno's refusals, as it words them, for every flag: named by the flag, never retried. */
function permissionDenials(): Array<[unknown, string, boolean]> {
  const denial = (access: string, target: string, flag: string) =>
    raw(`Requires ${access} access to ${target}, run again with the --allow-${flag} flag`, {
      name: "NotCapable",
    });
  return [
    [denial("net", '"10.1.2.3:443"', "net"), "NET_PERMISSION", false],
    [denial("read", '"/srv/x"', "read"), "READ_PERMISSION", false],
    [denial("write", '"/srv/x"', "write"), "WRITE_PERMISSION", false],
    [denial("env", '"HTTP_PROXY"', "env"), "ENV_PERMISSION", false],
    [denial("sys", '"ca"', "sys"), "SYS_PERMISSION", false],
    [denial("run", '"docker-credential-pass"', "run"), "RUN_PERMISSION", false],
    [denial("ffi", '"/lib/x.so"', "ffi"), "FFI_PERMISSION", false],
    [denial("import", '"https://x"', "import"), "IMPORT_PERMISSION", false],
    [denial("all", '"/proc/x"', "all"), "ALL_PERMISSION", false],
    [raw("Requires something else", { name: "NotCapable" }), "PERMISSION", false],
  ];
}

/** The operating system's refusals keep their own code (Deno's and node:fs's errors). */
function osRefusals(): Array<[unknown, string, boolean]> {
  return [
    [
      raw("Permission denied (os error 13): open '/x'", {
        name: "PermissionDenied",
        code: "EACCES",
      }),
      "EACCES",
      false,
    ],
    [
      raw("Operation not permitted (os error 1)", { name: "PermissionDenied", code: "EPERM" }),
      "EPERM",
      false,
    ],
    [raw("EROFS: read-only file system, open '/x'", { code: "EROFS" }), "EROFS", false],
    [raw("EACCES: permission denied, open '/x'", { code: "EACCES" }), "EACCES", false],
  ];
}

Deno.test("a refusal is never called a network permission unless it is one", () => {
  for (const [cause, reason] of [...permissionDenials(), ...osRefusals()]) {
    const codes = causeCodes(new Error("wrapped", { cause }));
    assertEquals(codes.includes("NET_PERMISSION"), reason === "NET_PERMISSION", String(cause));
    assertEquals(codes.includes(reason), true, String(cause));
  }
});

Deno.test("NO_PROXY: hosts, domains, ports and *", () => {
  const router = new ProxyRouter({
    http: "http://proxy.example:3128",
    https: "http://user:p%40ss@proxy.example:3129",
    noProxy: "internal.example, .corp.example, 10.0.0.5:5000, [::1]",
  });
  const via = (url: string) => router.route(new URL(url))?.port;
  assertEquals(via("http://registry.example/v2/"), 3128);
  assertEquals(via("https://registry.example/v2/"), 3129);
  assertEquals(via("https://internal.example/v2/"), undefined);
  assertEquals(via("https://a.internal.example/v2/"), undefined);
  assertEquals(via("https://corp.example/v2/"), undefined);
  assertEquals(via("https://x.corp.example/v2/"), undefined);
  assertEquals(via("http://10.0.0.5:5000/v2/"), undefined);
  assertEquals(via("http://10.0.0.5:5001/v2/"), 3128);
  assertEquals(via("http://[::1]:5000/v2/"), undefined);
  assertEquals(via("https://notinternal.example/v2/"), 3129);
  assertEquals(
    router.route(new URL("https://registry.example/"))?.authorization,
    `Basic ${btoa("user:p@ss")}`,
  );
  assertEquals(
    new ProxyRouter({ http: "http://p:1", noProxy: "*" }).route(new URL("http://a/")),
    undefined,
  );
});

Deno.test("a refusal thrown while the agent dials is classified, and terminal", async () => {
  const agent = new http.Agent();
  (agent as unknown as { createConnection: () => never }).createConnection = () => {
    throw raw('Requires sys access to "ca", run again with the --allow-sys flag', {
      name: "NotCapable",
    });
  };
  try {
    const err = await nodeExchange({
      request: new Request("http://127.0.0.1:9/v2/"),
      secure: false,
      declared: undefined,
      options: { hostname: "127.0.0.1", port: 9, path: "/v2/", method: "GET", agent },
    }).then(() => undefined, (e) => e);
    assertEquals(err instanceof ExchangeError, true, String(err));
    assertEquals(err.reason, "SYS_PERMISSION");
    assertEquals(err.retryable, false);
    assertEquals(
      err.message,
      "HTTP request: system information access not permitted (grant it with --allow-sys)",
    );
  } finally {
    agent.destroy();
  }
});

/** The innermost error of a chain: the runtime's or node's own text. */
function innermost(err: unknown): string {
  let one = err;
  while ((one as { cause?: unknown }).cause !== undefined) one = (one as { cause: unknown }).cause;
  const code = (one as { code?: unknown }).code;
  return `${typeof code === "string" ? code : ""} ${one instanceof Error ? one.message : ""}`;
}

Deno.test("real certificates: a name the certificate lacks, a self-signed one, on every path", async () => {
  await using tmp = await tempDir();
  const file = `${tmp.path}/body.bin`;
  await Deno.writeFile(file, new Uint8Array([1, 2, 3, 4]));
  // Names that are not the loopback's: the host dialed is never among them.
  const elsewhere = "DNS:registry.example";
  const ca = await makeTestCa(tmp.path, elsewhere);
  const pinned = await makeSelfSigned(tmp.path, "pinned", elsewhere);
  const own = await makeSelfSigned(tmp.path, "own");
  const cases = [
    {
      what: "a CA-signed certificate without the host, its CA trusted",
      cert: ca.certPath,
      key: ca.keyPath,
      caCerts: [ca.caCert],
      reason: "TLS_NAME_MISMATCH",
    },
    {
      what: "a pinned self-signed certificate made out to another name",
      cert: pinned.certPath,
      key: pinned.keyPath,
      caCerts: [pinned.cert],
      reason: "TLS_NAME_MISMATCH",
    },
    {
      what: "a self-signed certificate, nothing given",
      cert: own.certPath,
      key: own.keyPath,
      caCerts: undefined,
      reason: "TLS_SELF_SIGNED",
    },
  ];
  const seen = new Set<string>();
  for (const hostname of ["127.0.0.1", "::1"]) {
    for (const { what, cert, key, caCerts, reason } of cases) {
      const server = Deno.serve({
        hostname,
        port: 0,
        cert: await Deno.readTextFile(cert),
        key: await Deno.readTextFile(key),
        onListen() {},
        onError: () => new Response(null, { status: 500 }),
      }, () => new Response("{}"));
      const origin = `https://${
        hostname.includes(":") ? `[${hostname}]` : hostname
      }:${server.addr.port}`;
      const transport = new HttpTransport({ ...(caCerts ? { caCerts } : {}), proxy: false });
      try {
        for (const [method, request] of everyPath(origin, file)) {
          const label = `${hostname} ${method}: ${what}`;
          const err = await transport.fetch(request()).then(() => undefined, (e) => e);
          assertEquals(err instanceof ExchangeError, true, `${label}: ${err}`);
          assertEquals([err.reason, err.retryable], [reason, false], `${label}: ${innermost(err)}`);
          assertEquals(causeCodes(err).includes(reason), true, label);
          assertEquals(/127\.0\.0\.1|::1|registry\.example|https:/.test(err.message), false);
          seen.add(innermost(err));
        }
      } finally {
        transport.close();
        await server.shutdown();
      }
    }
  }
  // The texts met are the runtime's and node's own, not made-up ones.
  const texts = [
    'certificate not valid for name "127.0.0.1"',
    'certificate not valid for name "::1"',
    "ERR_TLS_CERT_ALTNAME_INVALID",
    "CaUsedAsEndEntity",
    "DEPTH_ZERO_SELF_SIGNED_CERT",
  ];
  for (const text of texts) {
    assertEquals([...seen].some((one) => one.includes(text)), true, `${text} in ${[...seen]}`);
  }
});
