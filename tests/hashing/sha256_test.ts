import { assertStrictEquals } from "../fixtures/assert.ts";
import { createHash } from "node:crypto";
import { Sha256, sha256Digest } from "../../src/hashing/sha256.ts";

const EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const ABC = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const encode = (text: string) => new TextEncoder().encode(text);

function pseudoRandom(length: number, seed = 1): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

Deno.test("known vectors: empty and abc, one-shot and incremental", () => {
  assertStrictEquals(sha256Digest(new Uint8Array()), EMPTY);
  assertStrictEquals(sha256Digest(encode("abc")), ABC);
  assertStrictEquals(new Sha256().digest(), EMPTY);
  assertStrictEquals(new Sha256().update(encode("abc")).digest(), ABC);
  // The two-block NIST vector crosses the 64-byte block boundary.
  assertStrictEquals(
    sha256Digest(encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
    "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

Deno.test("incremental hashing across odd chunk boundaries equals one shot", () => {
  const data = pseudoRandom(100_003);
  const expected = `sha256:${createHash("sha256").update(data).digest("hex")}`;
  assertStrictEquals(sha256Digest(data), expected);
  for (const step of [1, 7, 63, 64, 65, 4095, 65_537]) {
    const hash = new Sha256();
    for (let offset = 0; offset < data.length; offset += step) {
      hash.update(data.subarray(offset, offset + step));
    }
    assertStrictEquals(hash.digest(), expected, `step ${step}`);
    assertStrictEquals(hash.bytes, data.length);
  }
});

Deno.test("digest() does not end the hash: updates after it continue the same stream", () => {
  const hash = new Sha256();
  hash.update(encode("a"));
  assertStrictEquals(hash.digest(), sha256Digest(encode("a")));
  assertStrictEquals(hash.digest(), sha256Digest(encode("a")), "digest() is repeatable");
  hash.update(encode("bc"));
  assertStrictEquals(hash.digest(), ABC);
  assertStrictEquals(hash.bytes, 3);
});

Deno.test("reset() starts over and zeroes the byte counter", () => {
  const hash = new Sha256().update(encode("garbage from a failed attempt"));
  assertStrictEquals(hash.bytes, 29);
  hash.reset();
  assertStrictEquals(hash.bytes, 0);
  assertStrictEquals(hash.digest(), EMPTY);
  hash.update(encode("abc"));
  assertStrictEquals(hash.digest(), ABC);
  assertStrictEquals(hash.bytes, 3);
});

Deno.test("update consumes the chunk at once, so the caller may reuse its buffer", () => {
  const buffer = encode("abc");
  const hash = new Sha256().update(buffer);
  buffer.fill(0);
  assertStrictEquals(hash.digest(), ABC);
});
