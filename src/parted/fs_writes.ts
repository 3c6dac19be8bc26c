/**
 * Positional writes to one open file, each written whole.
 *
 * On Deno a `node:fs` handle's writes run on the JavaScript thread, so while the kernel copies a
 * megabyte into the page cache that thread neither reads the network nor hashes. A runtime file
 * handle (`Deno.FsFile`) for the same file writes on the runtime's blocking threads instead; its
 * writes follow a seek, which is why they are one at a time per handle. With one handle the next
 * write starts only once the JavaScript thread has seen the last one end, and that thread is busy
 * reading and hashing: two handles (`WRITE_LANES`) keep a write waiting beside the running one.
 * Elsewhere (Node) the `node:fs` handle's writes already run on libuv's threads and are
 * positional.
 *
 * Each such write costs a hand-over to another thread: it pays for the 1 MiB writes of a part
 * written in place while the next bytes arrive, not for the temporary part files, whose writes
 * (256 KiB for a pull into a stream) their writer awaits one by one.
 *
 * @module
 */
import type { FileHandle } from "node:fs/promises";
import { denoRuntime } from "./deno_runtime.ts";

/** The calls of a runtime file handle these writes use (`Deno.FsFile` has them). */
export interface SeekableFile {
  /** Moves the file's offset to `offset` bytes from its start (`whence` 0). */
  seekSync(offset: number, whence: 0): number;
  /** Writes from the offset; resolves with the bytes written. */
  write(bytes: Uint8Array): Promise<number>;
}

/**
 * How many runtime handles of a partial file carry its writes. 8 GiB pulls to a file, 12 rounds
 * alternating with one handle: median 15.13 against 15.84 s, 8 of 12 rounds faster, the fastest
 * equal (docs/performance.md). One on Windows, where the lock covers the file's bytes for the
 * handle holding it only, so another handle's writes would be refused.
 */
export const WRITE_LANES: number = denoRuntime()?.build.os === "windows" ? 1 : 2;

/** One runtime handle's writes, one at a time in the order asked. */
class Lane {
  /** The last write asked of this handle; it never rejects (its caller sees its failure). */
  #last: Promise<void> = Promise.resolve();
  /** Writes asked of this handle and not done. */
  pending = 0;

  constructor(readonly file: SeekableFile) {}

  /** Writes all of `bytes` at `position` once the writes asked before it are done. */
  write(bytes: Uint8Array, position: number): Promise<void> {
    const run = this.#last.then(() => seekAndWriteAll(this.file, bytes, position));
    this.pending++;
    const done = () => {
      this.pending--;
    };
    this.#last = run.then(done, done);
    return run;
  }
}

/**
 * Writes at positions of one file: through `seekables` when given (runtime handles of the same
 * open file, see the module note; each write goes to the one with the fewest writes not done),
 * else through `handle`. A failed write rejects with the runtime's own error (its `code` names the
 * reason); the writes after it still run.
 *
 * @example Two writes at their positions
 * ```ts
 * import { open } from "node:fs/promises";
 * import { FileWrites } from "./fs_writes.ts";
 * const path = await Deno.makeTempFile();
 * const handle = await open(path, "r+");
 * const seekables = [
 *   await Deno.open(path, { read: true, write: true }),
 *   await Deno.open(path, { read: true, write: true }),
 * ];
 * const writes = new FileWrites(handle, seekables);
 * await Promise.all([
 *   writes.writeAt(new TextEncoder().encode("world"), 6),
 *   writes.writeAt(new TextEncoder().encode("hello "), 0),
 * ]);
 * seekables.forEach((file) => file.close());
 * await handle.close();
 * console.log(await Deno.readTextFile(path)); // "hello world"
 * await Deno.remove(path);
 * ```
 */
export class FileWrites {
  readonly #handle: FileHandle;
  readonly #lanes: Lane[];
  /** Every write still running; none rejects. */
  readonly #running = new Set<Promise<void>>();

  constructor(handle: FileHandle, seekables: readonly SeekableFile[] = []) {
    this.#handle = handle;
    this.#lanes = seekables.map((file) => new Lane(file));
  }

  /**
   * Writes all of `bytes` at `position`; through a runtime handle, after every write asked of
   * that handle before it (positional `node:fs` writes need no turn).
   */
  writeAt(bytes: Uint8Array, position: number): Promise<void> {
    const lane = this.#leastBusy();
    const run = lane === undefined
      ? writeAllAt(this.#handle, bytes, position)
      : lane.write(bytes, position);
    const settled = run.catch(() => {});
    this.#running.add(settled);
    settled.then(() => this.#running.delete(settled));
    return run;
  }

  /** The runtime handle with the fewest writes not done (the first of equals); none on Node. */
  #leastBusy(): Lane | undefined {
    let best: Lane | undefined;
    for (const lane of this.#lanes) {
      if (best === undefined || lane.pending < best.pending) best = lane;
    }
    return best;
  }

  /** Resolves once no write asked for so far is still running. */
  async settled(): Promise<void> {
    await Promise.all(this.#running);
  }
}

async function seekAndWriteAll(file: SeekableFile, bytes: Uint8Array, position: number) {
  file.seekSync(position, 0);
  for (let done = 0; done < bytes.byteLength;) {
    const written = await file.write(bytes.subarray(done));
    if (written <= 0) throw new Error("write made no progress");
    done += written;
  }
}

/**
 * Writes all of `bytes` at `position` through a `node:fs` handle (a positional write may take
 * fewer bytes than asked).
 *
 * @example Filling a file's second half
 * ```ts
 * import { open } from "node:fs/promises";
 * import { writeAllAt } from "./fs_writes.ts";
 * const path = await Deno.makeTempFile();
 * const handle = await open(path, "r+");
 * await writeAllAt(handle, new TextEncoder().encode("cd"), 2);
 * await handle.close();
 * console.log((await Deno.readFile(path)).length); // 4
 * await Deno.remove(path);
 * ```
 */
export async function writeAllAt(
  handle: FileHandle,
  bytes: Uint8Array,
  position: number,
): Promise<void> {
  for (let done = 0; done < bytes.byteLength;) {
    const { bytesWritten } = await handle.write(
      bytes,
      done,
      bytes.byteLength - done,
      position + done,
    );
    if (bytesWritten <= 0) throw new Error("write made no progress");
    done += bytesWritten;
  }
}
