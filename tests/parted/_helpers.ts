/**
 * Helpers shared by the parted tests: independent digests of file slices and raw manifest
 * reads.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";

/** sha256 of `[offset, offset + length)` of a file, computed without the library. */
export async function sliceDigest(path: string, offset: number, length: number): Promise<string> {
  const handle = await open(path, "r");
  try {
    const hash = createHash("sha256");
    const buffer = new Uint8Array(1 << 20);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await handle.read(
        buffer,
        0,
        Math.min(buffer.length, length - done),
        offset + done,
      );
      if (bytesRead === 0) throw new Error("file too short");
      hash.update(buffer.subarray(0, bytesRead));
      done += bytesRead;
    }
    return `sha256:${hash.digest("hex")}`;
  } finally {
    await handle.close();
  }
}

/** The raw manifest bytes and parsed JSON at `<url>/v2/<repo>/manifests/<ref>`. */
export async function rawManifest(
  url: string,
  repository: string,
  ref: string,
): Promise<{ bytes: Uint8Array; json: Record<string, unknown>; digest: string }> {
  const response = await fetch(`${url}/v2/${repository}/manifests/${ref}`, {
    headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
  });
  if (response.status !== 200) throw new Error(`manifest GET: ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return {
    bytes,
    json: JSON.parse(new TextDecoder().decode(bytes)),
    digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
  };
}

/** Whether a path exists. */

/** Overwrites `bytes.length` bytes of a file at `position`. */
export async function overwrite(path: string, position: number, bytes: Uint8Array): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.write(bytes, 0, bytes.length, position);
  } finally {
    await handle.close();
  }
}

/** A clock that never really waits and records every requested wait. */
export function recordingClock(): {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
  waits: number[];
} {
  let now = 0;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    random: () => 0.5,
    sleep(ms: number, signal?: AbortSignal): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason);
      waits.push(ms);
      now += ms;
      return Promise.resolve();
    },
  };
}
