/**
 * What the tests of a striped pull into a stream share: an artifact whose parts come in stripes.
 */
import { patternBytes, sha256Bytes } from "../fixtures/files.ts";
import { fromFile, PartedClient } from "../../mod.ts";
import { STRIPE_BYTES } from "../../src/parted/striped_part.ts";
import type { RequestRecord } from "../fixtures/fault_proxy.ts";

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

/** The GETs of the blob `digest` that `log` (a fault proxy's) recorded, in order. */
export function blobGetsIn(log: readonly RequestRecord[], digest: string): RequestRecord[] {
  return log.filter((r) => r.method === "GET" && r.path.endsWith(digest));
}
