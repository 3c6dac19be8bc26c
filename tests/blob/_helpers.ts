/**
 * Shared helpers of the blob tests: byte generation, stream collection, and a check that
 * every error the suite sees renders no location, URL, query, path, userinfo or body.
 *
 * @module
 */
import { causeChain } from "../../src/errors/find_error.ts";
import { OciError } from "../../src/errors/oci_error.ts";
import { sha256Digest } from "../../src/hashing/sha256.ts";
import { seededRandom } from "../fixtures/random.ts";

/** Deterministic pseudo-random bytes. */
export function makeBytes(size: number, seed = 1): Uint8Array<ArrayBuffer> {
  const random = seededRandom(seed);
  const bytes = new Uint8Array(size);
  const words = new Uint32Array(bytes.buffer, 0, Math.floor(size / 4));
  for (let i = 0; i < words.length; i++) words[i] = (random() * 0x1_0000_0000) >>> 0;
  for (let i = words.length * 4; i < size; i++) bytes[i] = (random() * 256) | 0;
  return bytes;
}

/** `bytes` with its digest. */
export function blob(size: number, seed = 1): { bytes: Uint8Array<ArrayBuffer>; digest: string } {
  const bytes = makeBytes(size, seed);
  return { bytes, digest: sha256Digest(bytes) };
}

/** Reads a stream to the end. */
export async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Hashes a stream without keeping it, returning digest and length. */
export async function digestOf(
  stream: ReadableStream<Uint8Array>,
): Promise<{ digest: string; size: number }> {
  const { Sha256 } = await import("../../src/hashing/sha256.ts");
  const hash = new Sha256();
  for await (const chunk of stream) hash.update(chunk);
  return { digest: hash.digest(), size: hash.bytes };
}

/** A stream that yields `bytes` in pieces of `piece` bytes. */
export function streamOf(bytes: Uint8Array, piece = 64 * 1024): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.byteLength) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + piece));
      offset += piece;
    },
  });
}

// Anything that may identify a location, a body or a secret in a rendered message.
const FORBIDDEN: RegExp[] = [
  /https?:/i,
  /127\.0\.0\.1/,
  /localhost/i,
  /\/v2\//,
  /\/docker\/registry/,
  /sha256:/,
  /[?&][a-z_]+=/i,
  /@/,
  /_state/,
  /BLOB_UNKNOWN|BLOB_UPLOAD|DIGEST_INVALID|"errors"/,
  /Bearer|Basic /,
];

/** Every error checked so far (the suite asserts over all of them). */
export const checkedErrors: unknown[] = [];

/**
 * Throws when the rendered message of `err`, or of any package error in its `cause` chain,
 * contains a location, URL, host, path, query, userinfo, digest or registry body text.
 * Returns `err` for chaining.
 */
export function assertSafeError<T>(err: T, ...secrets: string[]): T {
  checkedErrors.push(err);
  for (const link of causeChain(err)) {
    if (!(link instanceof Error)) continue;
    if (link !== err && !(link instanceof OciError)) continue;
    const rendered = `${String(link)} ${link.message}`;
    for (const pattern of FORBIDDEN) {
      if (pattern.test(rendered)) {
        throw new Error(`unsafe error message (${pattern}): ${rendered}`);
      }
    }
    for (const secret of secrets) {
      if (secret !== "" && rendered.includes(secret)) {
        throw new Error(`error message contains a secret: ${rendered}`);
      }
    }
  }
  return err;
}

/** Awaits a rejection, checks its message is safe, and returns the error. */
export async function rejection(
  promise: Promise<unknown>,
  ...secrets: string[]
): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return assertSafeError(err, ...secrets);
  }
  throw new Error("expected a rejection");
}

/** A fake clock whose sleeps resolve at once, recording the requested delays. */
export function instantClock(): {
  now(): number;
  random(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  delays: number[];
} {
  const delays: number[] = [];
  let now = 0;
  return {
    delays,
    now: () => now,
    random: () => 0.5,
    sleep(ms: number, signal?: AbortSignal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      delays.push(ms);
      now += ms;
      return Promise.resolve();
    },
  };
}
