/**
 * A file range as a request body.
 *
 * @module
 */
import { open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { FileEndedError, LocalFileError } from "../errors/kinds.ts";

/**
 * Bytes per read: 64 KiB chunks halve upload throughput compared with 1 MiB; 512 KiB ones cost no
 * time or CPU measurable on loopback, and each upload in flight holds two of them (a push of 8 GiB
 * with 8 workers peaked at 89 MiB instead of 96).
 */
export const FILE_BODY_CHUNK_SIZE: number = 1 << 19;

/** Where a stream made by {@linkcode fileBody} reads from. */
export interface FileRange {
  /** The file path as given. */
  readonly path: string;
  /** The first byte of the range. */
  readonly offset: number;
  /** The number of bytes in the range. */
  readonly length: number;
  /** The progress hook given to {@linkcode fileBody}, if any. */
  readonly onBytes?: (bytes: number) => void;
  /**
   * The most bytes read and sent at once; default {@linkcode FILE_BODY_CHUNK_SIZE}. Whoever
   * reads the range (this stream, or a transport reading the file itself) honours it.
   */
  readonly chunkSize?: number;
  /**
   * Holds each chunk back, after it is read and before it is sent, until the promise settles (a
   * bandwidth cap); a rejection fails the body with its reason. Whoever reads the range honours
   * it.
   */
  readonly pace?: (bytes: number) => Promise<void>;
}

/**
 * Options of {@linkcode fileBody}.
 *
 * @example Counting the bytes read from the file
 * ```ts
 * import { fileBody, type FileBodyOptions } from "@ocipart/ocipart/transport";
 * const path = await Deno.makeTempFile();
 * await Deno.writeFile(path, new Uint8Array(3000));
 * let read = 0;
 * const options: FileBodyOptions = { onBytes: (bytes) => (read += bytes) };
 * await new Response(fileBody(path, 1000, 2000, options)).arrayBuffer();
 * console.log(read); // 2000
 * await Deno.remove(path);
 * ```
 */
export interface FileBodyOptions {
  /**
   * Called with each chunk's byte count as it leaves the file for the network: when the stream
   * hands the chunk to its reader, or, on `HttpTransport`'s direct file path, when the chunk
   * has been written to the socket. Counts of a failed attempt are not taken back.
   */
  onBytes?: (bytes: number) => void;
}

const ranges = new WeakMap<ReadableStream<Uint8Array>, FileRange>();

/**
 * Streams `length` bytes of the file at `path` starting at `offset`, in chunks of
 * {@linkcode FILE_BODY_CHUNK_SIZE}. The file is opened on the first read and closed when the
 * range is done, the stream is cancelled, or a read fails; a stream that is never read opens
 * nothing. A file that ends before the range does errors the stream with `LocalFileError` instead
 * of closing it short.
 *
 * `options.onBytes` reports progress on both paths (see {@linkcode FileBodyOptions}).
 *
 * A stream is read once: call `fileBody` again for a retry. `HttpTransport` recognises these
 * streams when they are passed unchanged as `new Request(url, { body, duplex: "half" })` and
 * then reads the file itself with large buffers instead of pulling the stream (a wrapping
 * `new Request(request, …)` hides the stream and the ordinary path is used, with the same
 * bytes).
 *
 * @example Uploading the second MiB of a file as a blob (embedded testing registry)
 * ```ts
 * import { sha256Digest } from "@ocipart/ocipart";
 * import { fileBody, HttpTransport } from "@ocipart/ocipart/transport";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * const path = await Deno.makeTempFile();
 * const bytes = new Uint8Array(2 << 20).map((_, i) => i % 251);
 * await Deno.writeFile(path, bytes);
 *
 * const transport = new HttpTransport();
 * const uploads = `${registry.url}/v2/demo/blobs/uploads/`;
 * const started = await transport.fetch(new Request(uploads, { method: "POST" }));
 * await started.body?.cancel();
 * const session = new URL(started.headers.get("location")!, registry.url);
 * session.searchParams.set("digest", sha256Digest(bytes.subarray(1 << 20)));
 * const done = await transport.fetch(new Request(session, {
 *   method: "PUT",
 *   body: fileBody(path, 1 << 20, 1 << 20),
 *   headers: { "content-length": String(1 << 20) },
 *   duplex: "half",
 * } as RequestInit));
 * await done.body?.cancel();
 * console.log(done.status); // 201
 * transport.close();
 * await Deno.remove(path);
 * ```
 */
export function fileBody(
  path: string,
  offset: number,
  length: number,
  options: FileBodyOptions = {},
): ReadableStream<Uint8Array> {
  const onBytes = options.onBytes;
  if (onBytes !== undefined && typeof onBytes !== "function") {
    throw new TypeError("file body: onBytes must be a function");
  }
  if (typeof path !== "string" || path === "") {
    throw new TypeError("file body: path must be a non-empty string");
  }
  for (const [name, value] of [["offset", offset], ["length", length]] as const) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`file body: ${name} must be a non-negative safe integer, not ${value}`);
    }
  }
  return rangeBody({ path, offset, length, ...(onBytes ? { onBytes } : {}) });
}

/**
 * A stream of `range`, as {@linkcode fileBody} makes it, with its chunk size and pace: how a
 * transport layer makes the same range again with hooks of its own (the original stream, never
 * read, is then cancelled).
 *
 * @example The same range with a pace
 * ```ts
 * import { fileBody, fileBodyRange, rangeBody } from "./file_body.ts";
 * const range = fileBodyRange(fileBody("./data.bin", 0, 10))!;
 * const paced = rangeBody({ ...range, pace: () => Promise.resolve() });
 * console.log(fileBodyRange(paced)?.length); // 10
 * ```
 */
export function rangeBody(range: FileRange): ReadableStream<Uint8Array> {
  const { path, offset, length, onBytes, pace } = range;
  const chunkSize = range.chunkSize ?? FILE_BODY_CHUNK_SIZE;
  let handle: FileHandle | undefined;
  let position = offset;
  let remaining = length;
  const closeHandle = async () => {
    const current = handle;
    handle = undefined;
    await current?.close();
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Uint8Array;
      try {
        if (remaining === 0) {
          await closeHandle();
          controller.close();
          return;
        }
        handle ??= await open(path, "r");
        const buffer = new Uint8Array(Math.min(chunkSize, remaining));
        const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, position);
        if (bytesRead === 0) {
          await closeHandle();
          controller.error(new FileEndedError("file body: file ended before the requested range"));
          return;
        }
        position += bytesRead;
        remaining -= bytesRead;
        chunk = bytesRead === buffer.byteLength ? buffer : buffer.subarray(0, bytesRead);
      } catch (err) {
        await closeHandle().catch(() => {});
        controller.error(new LocalFileError("file body: read failed", { cause: err }));
        return;
      }
      try {
        await pace?.(chunk.byteLength);
      } catch (err) {
        await closeHandle().catch(() => {});
        controller.error(err);
        return;
      }
      onBytes?.(chunk.byteLength);
      controller.enqueue(chunk);
      if (remaining === 0) {
        await closeHandle().catch(() => {});
        controller.close();
      }
    },
    async cancel() {
      await closeHandle();
    },
  }, { highWaterMark: 0 });
  ranges.set(stream, Object.freeze({ ...range }));
  return stream;
}

/**
 * The file range behind a stream made by {@linkcode fileBody}, or `undefined` for any other
 * stream. Transports use it to read the file directly.
 *
 * @example
 * ```ts
 * import { fileBody, fileBodyRange } from "./file_body.ts";
 * console.log(fileBodyRange(fileBody("./data.bin", 0, 10))); // { path: "./data.bin", offset: 0, length: 10 }
 * ```
 */
export function fileBodyRange(stream: ReadableStream<Uint8Array> | null): FileRange | undefined {
  return stream === null ? undefined : ranges.get(stream);
}
