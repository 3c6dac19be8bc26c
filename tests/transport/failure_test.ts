import { assertEquals } from "../fixtures/assert.ts";
import * as http from "node:http";
import {
  causeCodes,
  connectError,
  ExchangeError,
  failureReason,
} from "../../src/transport/failure.ts";
import { nodeExchange } from "../../src/transport/node_exchange.ts";
import { ProxyRouter } from "../../src/transport/proxy.ts";

const raw = (message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), extra);

Deno.test("raw failures of every client path map to one safe reason", () => {
  const cases: Array<[unknown, string | undefined, boolean]> = [
    [raw("connect ECONNREFUSED 10.1.2.3:5000", { code: "ECONNREFUSED" }), "ECONNREFUSED", true],
    [raw("read ECONNRESET", { code: "ECONNRESET" }), "ECONNRESET", true],
    [raw("connect ETIMEDOUT 10.1.2.3:443", { code: "ETIMEDOUT" }), "ETIMEDOUT", true],
    [raw("getaddrinfo ENOTFOUND registry.internal", { code: "ENOTFOUND" }), "ENOTFOUND", true],
    [
      new TypeError("fetch failed", {
        cause: raw(
          "error sending request for url (https://r.example/v2/): client error (Connect): dns error: failed to lookup address information",
        ),
      }),
      "ENOTFOUND",
      true,
    ],
    [raw("Connection refused (os error 111)", { name: "ConnectionRefused" }), "ECONNREFUSED", true],
    [raw("invalid peer certificate: UnknownIssuer"), "TLS_UNKNOWN_AUTHORITY", false],
    [raw("invalid peer certificate: NotValidForName"), "TLS_NAME_MISMATCH", false],
    [raw("invalid peer certificate: Expired"), "TLS_EXPIRED", false],
    [raw("x", { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }), "TLS_UNKNOWN_AUTHORITY", false],
    [raw("x", { code: "ERR_TLS_CERT_ALTNAME_INVALID" }), "TLS_NAME_MISMATCH", false],
    [raw("x", { code: "CERT_HAS_EXPIRED" }), "TLS_EXPIRED", false],
    [raw("received corrupt message of type InvalidContentType"), "PLAIN_HTTP_SERVER", false],
    [raw("Parse Error: Expected HTTP/", { code: "HPE_INVALID_CONSTANT" }), "TLS_SERVER", false],
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
    assertEquals(/10\.1\.2\.3|r\.example|registry\.internal|https?:/.test(err.message), false);
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
