import { assert, assertEquals, assertStrictEquals, assertThrows } from "../fixtures/assert.ts";
import { formatDigest, isSha256Digest, parseDigest } from "../../src/registry/digest.ts";

const HEX = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

Deno.test("isSha256Digest accepts only sha256 with 64 lowercase hex", () => {
  assert(isSha256Digest(`sha256:${HEX}`));
  for (
    const text of [
      "",
      HEX,
      `sha256:${HEX.toUpperCase()}`,
      `sha256:${HEX}0`,
      `sha256:${HEX.slice(1)}`,
      `SHA256:${HEX}`,
      `sha512:${HEX}${HEX}`,
      ` sha256:${HEX}`,
      `sha256:${HEX}\n`,
      `sha256:${HEX.slice(1)}g`,
    ]
  ) {
    assert(!isSha256Digest(text), JSON.stringify(text));
  }
});

Deno.test("parseDigest splits valid digests of any registered grammar", () => {
  assertEquals(parseDigest(`sha256:${HEX}`), { algorithm: "sha256", encoded: HEX });
  assertEquals(parseDigest(`sha512:${HEX}${HEX}`), {
    algorithm: "sha512",
    encoded: HEX + HEX,
  });
  // Unregistered algorithms follow the generic grammar only.
  assertEquals(parseDigest("multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8"), {
    algorithm: "multihash+base58",
    encoded: "QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8",
  });
});

Deno.test("parseDigest throws TypeError without echoing the input", () => {
  for (
    const text of [
      "",
      "secret",
      "secret:",
      ":secret",
      "Sha256:secret",
      "sha256:secret",
      `sha256:${HEX.toUpperCase()}`,
      `sha512:${HEX}`,
      "sha256:secret/../x",
      "a..b:secret",
    ]
  ) {
    let caught: unknown;
    try {
      parseDigest(text);
    } catch (err) {
      caught = err;
    }
    assert(caught instanceof TypeError, JSON.stringify(text));
    assert(!caught.message.includes("secret"));
    assert(!caught.message.includes(HEX.toUpperCase()));
  }
});

Deno.test("formatDigest joins and validates", () => {
  assertStrictEquals(formatDigest("sha256", HEX), `sha256:${HEX}`);
  assertThrows(() => formatDigest("sha256", "abc"), TypeError);
  assertThrows(() => formatDigest("", HEX), TypeError);
});
