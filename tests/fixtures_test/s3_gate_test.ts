import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { type S3Registry, s3Test, startS3Registry } from "../fixtures/s3.ts";
import { checkPresigned } from "../fixtures/sigv4.ts";
import { assertNoRefusals } from "../s3/_helpers.ts";

/** Uploads `bytes` as a blob through the registry; returns the presigned URL of its GET. */
async function presignedBlob(
  s3: S3Registry,
  name: string,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<URL> {
  const digest = sha256Bytes(bytes);
  const base = `${s3.registry.url}/v2/${name}/blobs`;
  const post = await fetch(`${base}/uploads/`, { method: "POST" });
  await post.body?.cancel();
  const upload = new URL(post.headers.get("location")!, s3.registry.url);
  upload.searchParams.set("digest", digest);
  const put = await fetch(upload, {
    method: "PUT",
    body: bytes,
    headers: { "content-type": "application/octet-stream" },
  });
  await put.body?.cancel();
  assertEquals(put.status, 201);
  const redirect = await fetch(`${base}/${digest}`, { redirect: "manual" });
  await redirect.body?.cancel();
  assertEquals(redirect.status, 307);
  return new URL(redirect.headers.get("location")!);
}

Deno.test("sigv4: the presigned URL example of the S3 documentation verifies", () => {
  const url = new URL(
    "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
      "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
      "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
  );
  const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  const headers = { host: "examplebucket.s3.amazonaws.com" };
  const at = new Date("2013-05-24T10:00:00Z");
  assertEquals(checkPresigned({ method: "GET", url, headers }, secret, at), { ok: true });
  const verdict = (method: string, host: string, now = at) =>
    checkPresigned({ method, url, headers: { host } }, secret, now);
  assertEquals(verdict("HEAD", headers.host), {
    ok: false,
    status: 403,
    code: "SignatureDoesNotMatch",
    reason: "signature",
  });
  assertEquals(verdict("GET", "examplebucket.s3.amazonaws.com:444").ok, false);
  assertEquals(verdict("GET", headers.host, new Date("2013-05-25T00:00:01Z")), {
    ok: false,
    status: 403,
    code: "AccessDenied",
    reason: "expired",
  });
});

s3Test("s3 gate: refuses what S3 refuses and serves a valid presigned GET", async () => {
  await using s3 = await startS3Registry();
  const bytes = patternBytes(100_000, 5);
  const digest = sha256Bytes(bytes);
  const signed = await presignedBlob(s3, "gate/test", bytes);
  assertEquals(signed.host, s3.gate.host, "storage differs from the registry only by port");
  assert(signed.searchParams.has("X-Amz-Signature"));

  const status = async (url: URL | string, init: RequestInit = {}) => {
    const response = await fetch(url, init);
    const body = new Uint8Array(await response.arrayBuffer());
    return { status: response.status, body };
  };
  const ok = await status(signed);
  assertEquals(ok.status, 200);
  assertEquals(sha256Bytes(ok.body), digest);
  const withAuth = await status(signed, { headers: { authorization: "Bearer registry-token" } });
  assertEquals(withAuth.status, 400);
  assert(new TextDecoder().decode(withAuth.body).includes("<Code>InvalidArgument</Code>"));
  assertEquals((await status(signed, { method: "HEAD" })).status, 403, "signed for GET only");
  const otherHost = new URL(signed);
  otherHost.hostname = "localhost";
  assertEquals((await status(otherHost)).status, 403, "signed for its Host");
  const tampered = new URL(signed);
  tampered.searchParams.set("X-Amz-Expires", "604800");
  assertEquals((await status(tampered)).status, 403, "query covered by the signature");
  assertEquals((await status(`${signed.origin}${signed.pathname}`)).status, 403, "unsigned");
  s3.gate.maxAgeSeconds = 0;
  await new Promise((r) => setTimeout(r, 1100));
  const expired = await status(signed);
  assertEquals(expired.status, 403);
  assert(new TextDecoder().decode(expired.body).includes("<Code>AccessDenied</Code>"));

  const clients = s3.gate.clientRequests();
  assertEquals(clients.map((r) => r.status), [200, 400, 403, 403, 403, 403, 403]);
  assert(s3.gate.log.some((r) => r.origin === "registry" && r.method === "PUT"), "driver logged");
});

s3Test(
  "s3 gate: a GET the client aborted is recorded as aborted, not as a refusal; a refusal still fails the check",
  async () => {
    await using s3 = await startS3Registry();
    // Larger than what the sockets between client and gate buffer, so the answer cannot be
    // complete while the client does not read.
    const signed = await presignedBlob(s3, "gate/abort", patternBytes(24 << 20, 6));
    const stop = new AbortController();
    const response = await fetch(signed, { signal: stop.signal });
    assertEquals(response.status, 200);
    const reader = response.body!.getReader();
    await reader.read();
    stop.abort();
    await reader.closed.catch(() => {});
    await s3.gate.settled();
    const [aborted] = s3.gate.clientRequests();
    assertEquals([aborted.status, aborted.outcome], [200, "aborted"]);
    await assertNoRefusals(s3.gate);

    s3.gate.expireNext();
    const refused = await fetch(signed);
    await refused.body?.cancel();
    assertEquals(refused.status, 403);
    await assertRejects(() => assertNoRefusals(s3.gate), Error, "GET (answered) answered 403");
  },
);
