/**
 * One proxy decision for every request, through a real forward proxy (tinyproxy) whose own log
 * is the witness: for each documented `NO_PROXY` form, a push and a pull to a bypassed target
 * send the proxy nothing at all (uploads, manifests, HEADs and downloads alike), and to a target
 * the list does not name, every kind of request goes through it. Run by the library in a
 * process started with that environment, and by the CLI under its narrow permissions; upper-
 * and lower-case variable names, the lowercase form winning on every path. The same for a TLS
 * registry and `HTTPS_PROXY` through the CLI: a target the list does not name is reached through
 * `CONNECT` tunnels only, a bypassed one sends the proxy nothing.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { freePort } from "../fixtures/ports.ts";
import { toolTest } from "../fixtures/registry.ts";
import { startTinyproxy, type TinyproxyFixture } from "../fixtures/tinyproxy.ts";
import { makeTestCa } from "../fixtures/tls.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startMemoryRegistry } from "../../src/testing/memory_registry.ts";
import { RegistryHandler } from "../../src/testing/registry_handler.ts";
import { toWebRequest, writeWebResponse } from "../../src/testing/node_adapter.ts";
import { denoDirEnv, PROJECT_ROOT, runCli } from "../cli/_cli.ts";
import { randomBytes } from "../fixtures/random.ts";

const CLIENT = `${PROJECT_ROOT}tests/hostile/_proxy_client.ts`;

/** What a row's environment and targets are built from. */
interface Context {
  /** The tinyproxy URL. */
  proxy: string;
  /** A proxy URL where nothing listens: a client that takes it fails. */
  dead: string;
  /** The port of the registry (reachable as 127.0.0.1, 127.0.0.2, localhost and [::1]). */
  port: number;
  /** The port of a second registry. */
  otherPort: number;
}

interface Row {
  form: string;
  env: (c: Context) => Record<string, string>;
  /** host:port the list names: the proxy must hear nothing of it. */
  bypassed: (c: Context) => string;
  /** host:port it does not name: every kind of request goes through the proxy. */
  proxied?: (c: Context) => string;
}

const ROWS: Row[] = [
  {
    form: "*",
    env: (c) => ({ HTTP_PROXY: c.proxy, NO_PROXY: "*" }),
    bypassed: (c) => `127.0.0.1:${c.port}`,
  },
  {
    form: "host (lowercase variables win over uppercase ones)",
    env: (c) => ({
      http_proxy: c.proxy,
      HTTP_PROXY: c.dead,
      no_proxy: "localhost",
      NO_PROXY: "unrelated.invalid",
    }),
    bypassed: (c) => `localhost:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.port}`,
  },
  {
    form: ".domain",
    env: (c) => ({ HTTP_PROXY: c.proxy, no_proxy: ".localhost", NO_PROXY: "unrelated.invalid" }),
    bypassed: (c) => `localhost:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.port}`,
  },
  {
    form: "host:port",
    env: (c) => ({ http_proxy: c.proxy, no_proxy: `127.0.0.1:${c.port}` }),
    bypassed: (c) => `127.0.0.1:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.otherPort}`,
  },
  {
    form: "IPv4 CIDR",
    env: (c) => ({ HTTP_PROXY: c.proxy, NO_PROXY: "example.invalid, 127.0.0.0/31" }),
    bypassed: (c) => `127.0.0.1:${c.port}`,
    proxied: (c) => `127.0.0.2:${c.port}`,
  },
  {
    form: "IPv6 CIDR",
    env: (c) => ({ http_proxy: c.proxy, no_proxy: "::/120" }),
    bypassed: (c) => `[::1]:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.port}`,
  },
  {
    form: "[::1]",
    env: (c) => ({ HTTP_PROXY: c.proxy, NO_PROXY: "[::1]" }),
    bypassed: (c) => `[::1]:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.port}`,
  },
];

/** Two registries on every loopback address, a proxy, and a proxy address nobody serves. */
async function withSetup(fn: (c: Context, proxy: TinyproxyFixture) => Promise<void>) {
  await using registry = await startMemoryRegistry({ hostname: "::" });
  await using other = await startMemoryRegistry({ hostname: "::" });
  await using proxy = await startTinyproxy();
  const context = {
    proxy: proxy.url,
    dead: `http://127.0.0.1:${await freePort()}`,
    port: registry.port,
    otherPort: other.port,
  };
  await fn(context, proxy);
}

/** A push and a pull by the library, in a process started with `env`. */
async function libraryRoundTrip(
  host: string,
  env: Record<string, string>,
  mode: "env" | "none" = "env",
): Promise<void> {
  await using tmp = await tempDir();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLIENT, mode, `${host}/hostile/proxy:v1`, tmp.path],
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: tmp.path,
      NO_COLOR: "1",
      ...denoDirEnv(),
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertStrictEquals(out.code, 0, `library to ${host}: ${new TextDecoder().decode(out.stderr)}`);
}

/**
 * A push and a pull by the CLI under its narrow permissions, started with `env`; plain HTTP
 * unless `caFile` names the CA of a TLS registry.
 */
async function cliRoundTrip(
  host: string,
  env: Record<string, string>,
  caFile?: string,
): Promise<void> {
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  // Fresh content every run: blobs a registry already has would not be uploaded again.
  await Deno.writeFile(source, randomBytes(2 * 1024 * 1024 + 5));
  const net = ["localhost", "[::1]", "127.0.0.2"];
  const reference = `${host}/hostile/proxy-cli:v1`;
  const scheme = caFile === undefined ? ["--plain-http"] : ["--ca-file", caFile];
  const flags = [...scheme, "--progress", "none"];
  const read = caFile === undefined ? [] : [caFile];
  const push = await runCli(["push", ...flags, "--part-size", "1MiB", reference, source], {
    tmp: tmp.path,
    env,
    net,
    read,
  });
  assertStrictEquals(push.code, 0, `push to ${host}: ${push.stderr}`);
  const pull = await runCli(["pull", ...flags, reference, `${tmp.path}/out.bin`], {
    tmp: tmp.path,
    env,
    net,
    read,
  });
  assertStrictEquals(pull.code, 0, `pull from ${host}: ${pull.stderr}`);
}

async function assertSilent(proxy: TinyproxyFixture, what: string): Promise<void> {
  const lines = await proxy.requests();
  assertStrictEquals(lines.length, 0, `${what}: the proxy heard\n${lines.join("\n")}`);
}

async function assertCarried(proxy: TinyproxyFixture, host: string): Promise<void> {
  const lines = await proxy.requests();
  for (const method of ["POST", "PUT", "HEAD", "GET"]) {
    assert(
      lines.some((line) => line.startsWith(`${method} http://${host}/v2/`)),
      `${method} to ${host} through the proxy:\n${lines.join("\n")}`,
    );
  }
}

for (const [who, roundTrip] of [["library", libraryRoundTrip], ["CLI", cliRoundTrip]] as const) {
  for (const row of ROWS) {
    toolTest(`NO_PROXY ${row.form}, ${who}: bypassed means the proxy hears nothing`, {
      needs: ["tinyproxy"],
    }, async () => {
      await withSetup(async (context, proxy) => {
        const env = row.env(context);
        await roundTrip(row.bypassed(context), env);
        await assertSilent(proxy, `${row.bypassed(context)} with ${JSON.stringify(env)}`);
        if (row.proxied === undefined) return;
        await roundTrip(row.proxied(context), env);
        await assertCarried(proxy, row.proxied(context));
      });
    });
  }
}

toolTest("proxy: false is obeyed by every client, whatever the environment says", {
  needs: ["tinyproxy"],
}, async () => {
  await withSetup(async (context, proxy) => {
    const env = { HTTP_PROXY: context.proxy, http_proxy: context.proxy, NODE_USE_ENV_PROXY: "1" };
    await libraryRoundTrip(`127.0.0.1:${context.port}`, env, "none");
    await assertSilent(proxy, "proxy: false");
  });
});

/** An embedded registry over TLS on every loopback address, its certificate naming them. */
async function startTlsRegistry(certPath: string, keyPath: string) {
  const handler = new RegistryHandler();
  let host = "";
  const server = createServer({
    cert: await Deno.readTextFile(certPath),
    key: await Deno.readTextFile(keyPath),
  }, (req, res) => {
    handler.handle(toWebRequest(req, host))
      .then((response) => {
        // The handler names its own origin in http: (it sees a plain request): this one is TLS.
        const location = response.headers.get("location");
        if (location?.startsWith("http:")) {
          response.headers.set("location", `https:${location.slice("http:".length)}`);
        }
        return writeWebResponse(res, response);
      })
      .catch(() => res.destroy())
      .finally(() => req.resume());
  });
  await new Promise<void>((resolve) => server.listen(0, "::", resolve));
  const port = (server.address() as AddressInfo).port;
  host = `127.0.0.1:${port}`;
  return {
    port,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Rows for a TLS registry reached through `HTTPS_PROXY`, as `ROWS` for plain HTTP. */
const TLS_ROWS: Row[] = [
  {
    form: "none (every request tunnelled)",
    env: (c) => ({ HTTPS_PROXY: c.proxy, HTTP_PROXY: c.dead }),
    bypassed: () => "",
    proxied: (c) => `127.0.0.1:${c.port}`,
  },
  {
    form: "*",
    env: (c) => ({ HTTPS_PROXY: c.proxy, NO_PROXY: "*" }),
    bypassed: (c) => `127.0.0.1:${c.port}`,
  },
  {
    form: "host:port",
    env: (c) => ({ https_proxy: c.proxy, no_proxy: `127.0.0.1:${c.port}` }),
    bypassed: (c) => `127.0.0.1:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.otherPort}`,
  },
  {
    form: "IPv4 CIDR",
    env: (c) => ({ HTTPS_PROXY: c.proxy, NO_PROXY: "example.invalid, 127.0.0.0/31" }),
    bypassed: (c) => `127.0.0.1:${c.port}`,
    proxied: (c) => `127.0.0.2:${c.port}`,
  },
  {
    form: "[::1]",
    env: (c) => ({ HTTPS_PROXY: c.proxy, NO_PROXY: "[::1]" }),
    bypassed: (c) => `[::1]:${c.port}`,
    proxied: (c) => `127.0.0.1:${c.port}`,
  },
];

/** Every line the proxy logged is a tunnel to `host`, and there is one at least. */
async function assertTunnelled(proxy: TinyproxyFixture, host: string): Promise<void> {
  const lines = await proxy.requests();
  assert(lines.length > 0, `nothing went through the proxy to ${host}`);
  for (const line of lines) assertStrictEquals(line, `CONNECT ${host} HTTP/1.1`, lines.join("\n"));
}

for (const row of TLS_ROWS) {
  toolTest(`HTTPS_PROXY, NO_PROXY ${row.form}, CLI: a TLS registry, tunnelled or bypassed`, {
    needs: ["tinyproxy", "openssl"],
  }, async () => {
    await using tmp = await tempDir();
    const ca = await makeTestCa(tmp.path, "IP:127.0.0.1,IP:127.0.0.2,IP:::1,DNS:localhost");
    await using registry = await startTlsRegistry(ca.certPath, ca.keyPath);
    await using other = await startTlsRegistry(ca.certPath, ca.keyPath);
    await using proxy = await startTinyproxy();
    const context = {
      proxy: proxy.url,
      dead: `http://127.0.0.1:${await freePort()}`,
      port: registry.port,
      otherPort: other.port,
    };
    // Deno's own update check would go through HTTPS_PROXY too: the log is ocipart's alone.
    const env = { ...row.env(context), DENO_NO_UPDATE_CHECK: "1" };
    const bypassed = row.bypassed(context);
    if (bypassed !== "") {
      await cliRoundTrip(bypassed, env, ca.caCertPath);
      await assertSilent(proxy, `${bypassed} with ${JSON.stringify(env)}`);
    }
    if (row.proxied === undefined) return;
    await cliRoundTrip(row.proxied(context), env, ca.caCertPath);
    await assertTunnelled(proxy, row.proxied(context));
  });
}
