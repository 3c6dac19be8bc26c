/**
 * What the tests of a striped pull into a stream share: an artifact whose parts come in stripes,
 * a stream that keeps what it is given, and the entries of a spill directory.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { fromFile, PartedClient } from "../../mod.ts";
import { STRIPE_BYTES } from "../../src/parted/striped_part.ts";

export const MiB = 1024 * 1024;
/** Three stripes a part: two whole ones and a short one. */
export const PART = 2 * STRIPE_BYTES + 8 * MiB;

/**
 * A file of `size` bytes (default: two parts and a short third) pushed to `host` in parts of
 * `partSize`; its bytes, reference and part digests.
 */
export async function pushed(
  host: string,
  dir: string,
  name: string,
  size = 2 * PART + 1234,
  partSize = PART,
) {
  const bytes = patternBytes(size, 7);
  await Deno.writeFile(`${dir}/${name}.bin`, bytes);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${host}/stripes/${name}:v1`;
  await client.push(ref, fromFile(`${dir}/${name}.bin`), { partSize });
  const count = Math.max(1, Math.ceil(size / partSize));
  const digests = Array.from(
    { length: count },
    (_, i) => sha256Bytes(bytes.subarray(i * partSize, (i + 1) * partSize)),
  );
  return { bytes, ref, digests };
}

/** A stream that keeps a copy of every chunk written, and the bytes it was given. */
export function collector(): { writable: WritableStream<Uint8Array>; bytes: () => Uint8Array } {
  const chunks: Uint8Array[] = [];
  return {
    writable: new WritableStream<Uint8Array>({ write: (c) => void chunks.push(c.slice()) }),
    bytes: () => {
      const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
      chunks.reduce((at, c) => (out.set(c, at), at + c.byteLength), 0);
      return out;
    },
  };
}

/** The names in `dir`. */
export async function entries(dir: string): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names;
}
