/**
 * Tokens that expire within one part's upload, as Docker Hub's (about 5 minutes) do on a slow
 * link, scaled down: the real Distribution with token auth, a token server whose tokens live a
 * few seconds, and a fault proxy in front that reads each part body at 1 MiB/s, so every part
 * outlives the token it started with.
 *
 * - Distribution checks the token when a request arrives: each part PUT starts with a token it
 *   accepts (renewed before the part when it would not last), so no PUT is refused, no part is
 *   sent twice, and token requests stay bounded.
 * - Behind a proxy that reads whole bodies before passing them on (nginx with request
 *   buffering), the token is checked once the part is in: no token outlives a part, so the push
 *   stops after two refused attempts of a part (the second with a fresh token) and names a part
 *   size that arrives within a token's life; that size then pushes with no PUT refused.
 */
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { PushTokens } from "../../src/parted/push_tokens.ts";
import type { ExchangeRecord } from "../../src/transport/exchange_observer.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../fixtures/assert.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { startNginx } from "../fixtures/nginx.ts";
import { failureLines, hintLines, runCli } from "../cli/_cli.ts";
import { startTokenRegistry } from "../auth/_registry_helpers.ts";
import { isPowerOfTwo, MiB, PART_PUT, partSizeError, rerunWords } from "./_hosted.ts";

/** The tokens' stated lifetime; Distribution's 60 s leeway is taken off their real `exp`. */
const LIFETIME_S = 3;
const PARTS = 4;
const PART = 4 * MiB;

/** The claims of the JWT a request presented. */
function claims(authorization: string | undefined): { exp: number; access: unknown } {
  const token = (authorization ?? "").replace(/^Bearer /, "");
  const payload = token.split(".")[1] ?? "";
  return JSON.parse(atob(payload.replaceAll("-", "+").replaceAll("_", "/")));
}

registryTest(
  "tokens shorter than a part's upload: every part PUT accepted once, no 401 storm, bounded token requests",
  async () => {
    await using auth = await startTokenRegistry({
      expiresIn: LIFETIME_S,
      expOffsetSeconds: LIFETIME_S - 60,
    });
    await using edge = await startFaultProxy({ target: auth.registry.url });
    edge.fault({ ...PART_PUT, throttleRequest: MiB, times: Infinity });
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, PARTS * PART, 31);
    const exchanges: ExchangeRecord[] = [];
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "pw" },
      onExchange: (record) => exchanges.push(record),
    });
    const ref = `${edge.host}/hosted/tokens:v1`;
    await client.push(ref, fromFile(src), { partSize: PART, workers: 2 });

    // The scenario holds: each part upload outlived the token it started with.
    const partPuts = exchanges.filter((r) => r.method === "PUT" && r.sentBytes === PART);
    assertEquals(partPuts.length, PARTS, "one PUT per part: no part attempt wasted");
    assert(
      partPuts.every((r) => r.status === 201 && r.durationMs > LIFETIME_S * 1000),
      `each part took longer than a token lives: ${partPuts.map((r) => r.durationMs)}`,
    );
    const puts = edge.log.filter((r) => r.method === "PUT");
    assertEquals(puts.map((r) => r.status), puts.map(() => 201), "no PUT refused");
    assertEquals(puts.length, PARTS + 2, "the parts, the config, the manifest");
    for (const put of puts.filter((r) => PART_PUT.path.test(r.path))) {
      assert(/^Bearer /.test(put.headers.authorization ?? ""), "every PUT carried a token");
      assert(claims(put.headers.authorization).exp > 0);
    }
    // Refusals: only the anonymous first requests of the workers, before the challenge is known.
    const refused = edge.log.filter((r) => r.status === 401);
    assert(refused.length <= 2 && refused.every((r) => r.method !== "PUT"), `${refused.length}`);
    // Two scopes (pull for HEAD, push for the upload) renewed at most once per part each, plus
    // the first pair and the manifest's.
    const tokenRequests = auth.tokens.requests.length;
    assert(tokenRequests <= 2 * PARTS + 4, `${tokenRequests} token requests`);
    await client.pull(ref, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  },
);

registryTest(
  "cli: tokens shorter than a part's upload; the push succeeds with one PUT per part",
  async () => {
    await using auth = await startTokenRegistry({
      expiresIn: LIFETIME_S,
      expOffsetSeconds: LIFETIME_S - 60,
    });
    await using edge = await startFaultProxy({ target: auth.registry.url });
    edge.fault({ ...PART_PUT, throttleRequest: MiB, times: Infinity });
    await using tmp = await tempDir();
    const src = `${tmp.path}/weights.bin`;
    await writePatternFile(src, PARTS * PART, 32);
    const result = await runCli(
      [
        "push",
        "--plain-http",
        "--username",
        "alice",
        "--password-stdin",
        "--part-size",
        "4MiB",
        "--workers",
        "2",
        `${edge.host}/hosted/cli-tokens:v1`,
        src,
      ],
      { tmp: tmp.path, stdin: "pw\n" },
    );
    assertEquals(result.code, 0, result.stderr);
    const puts = edge.log.filter((r) => r.method === "PUT" && PART_PUT.path.test(r.path));
    assertEquals(puts.length, PARTS + 1, "each part and the config once");
    assert(puts.every((r) => r.status === 201), "no PUT refused");
    assert(edge.log.filter((r) => r.status === 401).length <= 2, "no refusal after the first");
  },
);

/**
 * Token auth whose tokens live `lifetimeS` seconds (the JWT's real `exp` a second more, so the
 * second-granular claim never cuts it short), nginx reading whole bodies in front of it, and a
 * fault proxy in front of nginx reading part bodies at 1 MiB/s.
 */
async function bodyCheckingEdge(lifetimeS: number) {
  const auth = await startTokenRegistry({
    expiresIn: lifetimeS,
    expOffsetSeconds: lifetimeS + 1 - 60,
  });
  const nginx = await startNginx({
    upstream: auth.registry.url,
    clientMaxBodySize: "0",
    requestBuffering: true,
  });
  const edge = await startFaultProxy({ target: nginx.url });
  edge.fault({ ...PART_PUT, throttleRequest: MiB, times: Infinity });
  return {
    auth,
    edge,
    async [Symbol.asyncDispose]() {
      await edge.close();
      await nginx.stop();
      await auth[Symbol.asyncDispose]();
    },
  };
}

registryTest(
  "tokens checked after the body and shorter than a part: two attempts, then the part size that arrives in time",
  { needs: ["nginx"] },
  async () => {
    await using setup = await bodyCheckingEdge(4);
    const { edge } = setup;
    await using dir = await tempDir();
    const src = `${dir.path}/weights.bin`;
    const digest = await writePatternFile(src, 12 * MiB, 33);
    using client = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "pw" },
    });
    const ref = `${edge.host}/hosted/body-check:v1`;

    // 6 MiB parts take 6 s; tokens live 4 s.
    const err = await assertRejects(() =>
      client.push(ref, fromFile(src), { partSize: 6 * MiB, workers: 2 })
    );
    const limit = partSizeError(err);
    assertEquals(limit.limit, "token-lifetime");
    assertEquals(limit.facts.attempts, 2);
    assertEquals(limit.facts.tokenLifetimeMs, 4000);
    assert((limit.facts.uploadMs ?? 0) > 5000, `a part took ${limit.facts.uploadMs} ms`);
    const size = limit.suggestedPartSize ?? 0;
    assert(isPowerOfTwo(size) && size <= 2 * MiB && size >= 512 * 1024, `suggested ${size}`);
    assertMatch(
      (err as Error).message,
      /^part [01]: upload: the registry refused the token once the whole part had arrived, on 2 attempts in a row: tokens live 4\.0 s and a part took [56]\.\d s at [\d.]+ (KiB|MiB)\/s; parts of \d+ (MiB|KiB) arrive within a token's life \(a new part size is a new artifact: every part is uploaded again\)$/,
    );
    const refused = edge.log.filter((r) => r.method === "PUT" && r.status === 401);
    assert(refused.every((r) => r.bodyBytes === 6 * MiB), "refused once the whole part was in");
    assert(refused.length <= 4, `two attempts per part at most, not the budget: ${refused.length}`);

    edge.log.length = 0;
    await client.push(ref, fromFile(src), { partSize: size, workers: 2 });
    const puts = edge.log.filter((r) => r.method === "PUT" && PART_PUT.path.test(r.path));
    assertEquals(puts.length, 12 * MiB / size + 1, "each part and the config once");
    assert(puts.every((r) => r.status === 201), "no PUT refused");
    await client.pull(ref, toFile(`${dir.path}/out.bin`));
    assertEquals(await sha256File(`${dir.path}/out.bin`), digest);
  },
);

registryTest(
  "cli: tokens checked after the body print the command with a part size that arrives in time, and it pushes",
  { needs: ["nginx"] },
  async () => {
    await using setup = await bodyCheckingEdge(4);
    await using tmp = await tempDir();
    const src = `${tmp.path}/weights.bin`;
    await writePatternFile(src, 12 * MiB, 34);
    const ref = `${setup.edge.host}/hosted/cli-body-check:v1`;
    const login = ["--username", "alice", "--password-stdin"];
    const failed = await runCli(
      ["push", "--plain-http", ...login, "--part-size", "6MiB", "--workers", "2", ref, src],
      { tmp: tmp.path, stdin: "pw\n" },
    );
    assertEquals(failed.code, 1, failed.stderr);
    const [error, why] = failureLines(failed.stderr);
    assertMatch(error, /^ocipart push: part [01]: upload: the registry refused the token once/);
    assertEquals(why, "ocipart push: no sentinel matched (exit 1)");
    assertEquals(
      failed.stderr.split("\n")[0],
      `ocipart push: ${setup.edge.host} refused the token once a whole 6MiB part had arrived: ` +
        "a part must arrive within a token's lifetime",
    );
    assertMatch(
      hintLines(failed.stderr)[0],
      /^ocipart push: hint: push again with --part-size \d+(MiB|KiB) \(a part then arrives within a token's lifetime\); no part already uploaded at 6MiB is reused/,
    );
    const words = rerunWords(failed.stderr);
    assertEquals(words.slice(0, 3), ["ocipart", "push", "--part-size"]);
    assertEquals(words.slice(4), ["--plain-http", ...login, "--workers", "2", ref, src]);
    const rerun = await runCli(words.slice(1), { tmp: tmp.path, stdin: "pw\n" });
    assertEquals(rerun.code, 0, rerun.stderr);
  },
);

Deno.test("the renewal before a part plans by one upload's speed, not the push's sum", async () => {
  const asked: number[] = [];
  const authenticator = {
    ensureFresh: (_repository: string, _action: string, minRemainingMs: number) => {
      asked.push(minRemainingMs);
      return Promise.resolve(false);
    },
    tokenCache: { peek: () => undefined },
  } as unknown as ConstructorParameters<typeof PushTokens>[0];
  let now = 0;
  const clock = { now: () => now, sleep: () => Promise.resolve(), random: () => 0 };
  // Eight uploads at once moved 8 MiB in the first second: 1 MiB/s each.
  const tokens = new PushTokens(authenticator, "org/data", clock, 8);
  now = 1000;
  await tokens.renewFor(8 * MiB, 8 * MiB, new AbortController().signal);
  // An 8 MiB part takes 8 s on its connection; planned with a margin of two.
  assertEquals(asked, [16_000]);
});
