import { assert, assertEquals } from "../fixtures/assert.ts";
import { findError } from "../../src/errors/find_error.ts";
import { LocationError, RedirectError } from "../../src/errors/kinds.ts";
import { retryable } from "../../src/errors/retryable.ts";
import { followRedirects } from "../../src/remote/repository.ts";
import type { Fetch } from "../../src/transport/fetch.ts";
import { assertSafeError } from "../blob/_helpers.ts";

const ORIGIN = new URL("https://registry.example");
const SECRET_HEADERS = {
  authorization: "Bearer secret-token",
  "proxy-authorization": "Basic cHJveHk=",
  cookie: "session=s3cret",
  referer: "https://registry.example/page",
  "x-keep": "kept",
};

interface Seen {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** A transport answering from `answer` and recording every request it gets. */
function recorder(answer: (request: Request, index: number) => Response): Fetch & { seen: Seen[] } {
  const seen: Seen[] = [];
  const fetch = async (request: Request) => {
    const body = request.body === null ? "" : await request.text();
    seen.push({
      url: request.url,
      method: request.method,
      headers: Object.fromEntries(request.headers),
      body,
    });
    return answer(request, seen.length - 1);
  };
  return Object.assign(fetch, { seen });
}

const redirect = (location: string, status = 307) =>
  new Response("redirect body", { status, headers: { location } });

async function refusal(promise: Promise<unknown>): Promise<RedirectError> {
  try {
    await promise;
  } catch (err) {
    assertSafeError(err, "registry.example", "storage.example", "secret");
    assert(err instanceof RedirectError, `expected RedirectError, got ${err}`);
    assertEquals(retryable(err).retryable, false);
    return err;
  }
  throw new Error("expected a RedirectError");
}

Deno.test("follow redirects: a read follows ten hops and refuses the eleventh", async () => {
  const registry = recorder((_, i) => redirect(`/v2/hop/${i + 1}`, 302));
  const storage = recorder(() => new Response("never"));
  const options = {
    origin: ORIGIN,
    transport: registry,
    storageTransport: storage,
    operation: "GET blob",
  };
  const err = await refusal(
    followRedirects({ method: "GET", url: new URL("https://registry.example/v2/hop/0") }, options),
  );
  assertEquals(err.message, "GET blob: too many redirects");
  assertEquals(registry.seen.length, 11);
  assertEquals(storage.seen.length, 0);

  const finite = recorder((_, i) =>
    i < 10 ? redirect(`/v2/hop/${i + 1}`, 301) : new Response("ok")
  );
  const done = await followRedirects(
    { method: "GET", url: new URL("https://registry.example/v2/hop/0") },
    { ...options, transport: finite },
  );
  assertEquals(await done.response.text(), "ok");
  assertEquals(done.redirects, 10);
  assertEquals(done.url.pathname, "/v2/hop/10");
});

Deno.test("follow redirects: a cross-origin hop uses the storage transport without credentials", async () => {
  const registry = recorder(() => redirect("https://storage.example/data?sig=abc"));
  const storage = recorder(() => new Response("bytes"));
  const result = await followRedirects(
    {
      method: "GET",
      url: new URL("https://registry.example/v2/a/blobs/x"),
      headers: SECRET_HEADERS,
    },
    { origin: ORIGIN, transport: registry, storageTransport: storage, operation: "GET blob" },
  );
  assertEquals(await result.response.text(), "bytes");
  assertEquals(result.offOrigin, true);
  assertEquals(registry.seen.length, 1);
  assertEquals(registry.seen[0]!.headers.authorization, "Bearer secret-token");
  assertEquals(storage.seen.length, 1);
  assertEquals(storage.seen[0]!.url, "https://storage.example/data?sig=abc");
  const headers = storage.seen[0]!.headers;
  for (const name of ["authorization", "proxy-authorization", "cookie", "referer"]) {
    assertEquals(headers[name], undefined, `${name} reached the other origin`);
  }
  assertEquals(headers["x-keep"], "kept");
});

Deno.test("follow redirects: once a chain left the origin, a hop back to it gets no credentials", async () => {
  const registry = recorder(() => redirect("https://storage.example/data"));
  const storage = recorder((request) =>
    request.url.startsWith("https://storage.example/")
      ? redirect("https://registry.example/v2/a/blobs/y")
      : new Response("bytes")
  );
  const result = await followRedirects(
    {
      method: "GET",
      url: new URL("https://registry.example/v2/a/blobs/x"),
      headers: SECRET_HEADERS,
    },
    { origin: ORIGIN, transport: registry, storageTransport: storage, operation: "GET blob" },
  );
  assertEquals(await result.response.text(), "bytes");
  assertEquals(result.offOrigin, true, "the answer came through the storage transport");
  // The authenticating transport saw only the first hop; the way back went without it.
  assertEquals(registry.seen.map((s) => s.url), ["https://registry.example/v2/a/blobs/x"]);
  assertEquals(storage.seen.map((s) => s.url), [
    "https://storage.example/data",
    "https://registry.example/v2/a/blobs/y",
  ]);
  for (const seen of storage.seen) {
    for (const name of ["authorization", "proxy-authorization", "cookie", "referer"]) {
      assertEquals(seen.headers[name], undefined, `${name} sent to ${seen.url}`);
    }
  }
});

Deno.test("follow redirects: an off-origin first request never touches the registry transport", async () => {
  const registry = recorder(() => new Response("wrong"));
  const storage = recorder(() => new Response(null, { status: 201 }));
  const result = await followRedirects({
    method: "PUT",
    url: new URL("https://storage.example/upload?x=1"),
    headers: { ...SECRET_HEADERS, "content-length": "3" },
    body: () => new TextEncoder().encode("abc"),
  }, {
    origin: ORIGIN,
    transport: registry,
    storageTransport: storage,
    operation: "PUT blob upload",
  });
  assertEquals(result.response.status, 201);
  assertEquals(registry.seen.length, 0);
  assertEquals(storage.seen[0]!.headers.authorization, undefined);
  assertEquals(storage.seen[0]!.headers.cookie, undefined);
  assertEquals(storage.seen[0]!.body, "abc");
});

Deno.test("follow redirects: write redirects need 307/308 and a replayable body", async () => {
  for (const status of [301, 302, 303]) {
    const registry = recorder(() => redirect("/v2/elsewhere", status));
    const err = await refusal(followRedirects({
      method: "PUT",
      url: new URL("https://registry.example/v2/a/blobs/uploads/1"),
      headers: { "content-length": "1" },
      body: () => new Uint8Array([1]),
    }, {
      origin: ORIGIN,
      transport: registry,
      storageTransport: registry,
      operation: "PUT blob upload",
    }));
    assert(err.message.includes("would change the method"), err.message);
    assertEquals(registry.seen.length, 1, "the target was contacted");
  }

  // A replayable body is re-created for the 307 hop.
  let made = 0;
  const registry = recorder((_, i) =>
    i === 0 ? redirect("/v2/target", 308) : new Response(null, { status: 201 })
  );
  const result = await followRedirects({
    method: "PUT",
    url: new URL("https://registry.example/v2/start"),
    headers: { "content-length": "2" },
    body: () => {
      made++;
      return new TextEncoder().encode("hi");
    },
  }, {
    origin: ORIGIN,
    transport: registry,
    storageTransport: registry,
    operation: "PUT blob upload",
  });
  assertEquals(result.response.status, 201);
  assertEquals(made, 2);
  assertEquals(registry.seen.map((s) => [s.method, s.body]), [["PUT", "hi"], ["PUT", "hi"]]);

  // A one-shot body is refused before the target is contacted.
  const oneShot = recorder((_, i) =>
    i === 0 ? redirect("/v2/target", 307) : new Response(null, { status: 201 })
  );
  const err = await refusal(followRedirects({
    method: "PATCH",
    url: new URL("https://registry.example/v2/start"),
    headers: { "content-length": "2" },
    body: () => new TextEncoder().encode("hi"),
    replayable: false,
  }, {
    origin: ORIGIN,
    transport: oneShot,
    storageTransport: oneShot,
    operation: "PATCH blob upload",
  }));
  assert(err.message.includes("replayable"), err.message);
  assertEquals(oneShot.seen.length, 1);
});

Deno.test("follow redirects: with write redirects off every write redirect is refused first", async () => {
  for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
    const registry = recorder(() => redirect("/v2/target", 307));
    const storage = recorder(() => new Response(null, { status: 201 }));
    const err = await refusal(followRedirects({
      method,
      url: new URL("https://registry.example/v2/start"),
    }, {
      origin: ORIGIN,
      transport: registry,
      storageTransport: storage,
      operation: "write",
      writeRedirects: false,
    }));
    assertEquals(err.message, "write: write redirects are disabled");
    assertEquals(registry.seen.length, 1);
    assertEquals(storage.seen.length, 0);
  }
  // Reads still follow.
  const registry = recorder((_, i) => i === 0 ? redirect("/v2/target", 307) : new Response("ok"));
  const read = await followRedirects({
    method: "HEAD",
    url: new URL("https://registry.example/v2/s"),
  }, {
    origin: ORIGIN,
    transport: registry,
    storageTransport: registry,
    operation: "HEAD blob",
    writeRedirects: false,
  });
  assertEquals(read.response.status, 200);
  assertEquals(registry.seen.map((s) => s.method), ["HEAD", "HEAD"]);
});

Deno.test("follow redirects: downgrades, foreign schemes and credentials are refused", async () => {
  const cases: [string, string][] = [
    ["http://storage.example/data", "https-to-http"],
    ["ftp://storage.example/data", "unsupported-scheme"],
    ["file:///etc/passwd", "unsupported-scheme"],
    ["https://user:pass@storage.example/data", "credentials"],
    ["", "empty"],
  ];
  for (const [location, rule] of cases) {
    const registry = recorder(() => redirect(location, 302));
    const storage = recorder(() => new Response("never"));
    const err = await refusal(followRedirects(
      { method: "GET", url: new URL("https://registry.example/v2/a") },
      { origin: ORIGIN, transport: registry, storageTransport: storage, operation: "GET blob" },
    ));
    assertEquals(findError(err, LocationError)?.rule, rule);
    assert(!err.message.includes("storage"), err.message);
    assertEquals(storage.seen.length, 0);
  }
});

Deno.test("follow redirects: other statuses are returned as they are", async () => {
  for (const status of [200, 201, 202, 300, 304, 404, 500]) {
    const registry = recorder(() =>
      new Response(null, { status, headers: { location: "https://elsewhere.example/" } })
    );
    const result = await followRedirects(
      { method: "POST", url: new URL("https://registry.example/v2/a/blobs/uploads/") },
      {
        origin: ORIGIN,
        transport: registry,
        storageTransport: registry,
        operation: "POST",
        writeRedirects: false,
      },
    );
    assertEquals(result.response.status, status);
    assertEquals(result.redirects, 0);
  }
});
