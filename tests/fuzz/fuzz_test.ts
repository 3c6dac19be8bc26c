/**
 * The seeded fuzz sample of `deno task test` (the full counts run in `deno task stress`).
 * Reproduce a run with `OCIPART_FUZZ_SEED=<seed>`; a failure names the seed of its case.
 */
import { assert, assertEquals, assertNotEquals, assertStrictEquals } from "../fixtures/assert.ts";
import { FUZZ_TARGETS, runFuzzTarget } from "./fuzz.ts";
import { runManifestPullFuzz } from "./manifest_pull.ts";
import { findLeaks } from "../reliability/leak_scan.ts";

const SEED = Number(Deno.env.get("OCIPART_FUZZ_SEED") ?? "20240601");
const CASES_PER_TARGET = 200;

for (const target of FUZZ_TARGETS) {
  Deno.test({
    name: `fuzz ${target.name}: ${CASES_PER_TARGET} mutated inputs (seed ${SEED})`,
    sanitizeOps: true,
    sanitizeResources: true,
    async fn() {
      const report = await runFuzzTarget(target, { seed: SEED, cases: CASES_PER_TARGET });
      assertStrictEquals(report.cases, CASES_PER_TARGET);
      assertEquals(report.failures, []);
    },
  });
}

Deno.test({
  name: `fuzz manifest pull: 40 mutated manifests write nothing unverified (seed ${SEED})`,
  sanitizeOps: true,
  sanitizeResources: true,
  async fn() {
    const report = await runManifestPullFuzz({ seed: SEED, cases: 40 });
    assertEquals(report.failures, []);
    assertStrictEquals(report.destinationsFromUnverified, 0);
    assertStrictEquals(report.blobRequestsAfterUnverified, 0);
    assert(report.rejected > 0);
  },
});

Deno.test("leak scan: the rules catch what the spec forbids and pass safe messages", () => {
  const bad = [
    "GET blob: https://registry.example/v2/x",
    "token request: 10.0.0.1 refused",
    "PUT blob upload: localhost answered",
    "POST blob upload: ?_state=abc",
    "part 1: sha256:abcd",
    "manifest: " + "a".repeat(64),
    "auth: Bearer abcdefgh",
    'challenge realm="x"',
    "session at /v2/org/data/blobs/uploads/",
    "registry.example:5000 down",
  ];
  for (const text of bad) assertNotEquals(findLeaks(text), [], text);
  assertEquals(findLeaks("hunter2 is the password", ["hunter2"]), ["secret"]);
  const safe = [
    "part 3: download: failed after 4 attempts",
    "GET blob: status 503",
    "PUT request: no progress for 60 s",
    "manifest: layer 12 size disagrees with the split rule",
  ];
  for (const text of safe) assertEquals(findLeaks(text), [], text);
});
