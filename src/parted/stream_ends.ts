/**
 * Streams as the ends of a transfer: a pull into a `WritableStream` ({@linkcode toStream}) and a
 * push from a `ReadableStream` of unknown length ({@linkcode fromStream}).
 *
 * @module
 */

/**
 * What {@linkcode toStream} returns: a pull destination that is a writable stream.
 *
 * @example A destination from a writable stream
 * ```ts
 * import { type StreamDestination, toStream } from "@ocipart/ocipart";
 * const destination: StreamDestination = toStream(new WritableStream());
 * console.log(destination.kind); // "stream"
 * ```
 */
export interface StreamDestination {
  /** The destination kind. */
  readonly kind: "stream";
  /** Receives the file's bytes in order. */
  readonly writable: WritableStream<Uint8Array>;
  /** Where parts that do not fit in memory wait (default: the system's temporary directory). */
  readonly spillDirectory?: string;
  /** Bytes of parts held in memory at most (default 256 MiB); the rest of the window on disk. */
  readonly memoryWindowBytes?: number;
  /** The stream is done with each chunk once its write resolves (see `ToStreamOptions`). */
  readonly reuseChunks?: boolean;
}

/**
 * Options of {@linkcode toStream}.
 *
 * @example A smaller memory window, spilling next to the output
 * ```ts
 * import { toStream, type ToStreamOptions } from "@ocipart/ocipart";
 * const options: ToStreamOptions = { memoryWindowBytes: 64 * 1024 * 1024, spillDirectory: "." };
 * console.log(toStream(new WritableStream(), options).memoryWindowBytes); // 67108864
 * ```
 */
export interface ToStreamOptions {
  /**
   * The directory in which a temporary directory is made for parts that do not fit in memory;
   * it is removed when the pull ends, however it ends. Default: the system's temporary directory.
   */
  spillDirectory?: string;
  /**
   * Bytes of parts that may be held in memory. The pull holds at most `workers` parts (the
   * window): in memory when `workers × part size` fits in this, else on disk; with
   * `reuseChunks`, as many of them as fit in this wait in memory and only the others on disk.
   *
   * @default 268435456 (256 MiB)
   */
  memoryWindowBytes?: number;
  /**
   * The stream is done with each chunk once its write resolves (it copied the bytes or wrote
   * them out, as a file or standard output does), so the pull may reuse a chunk's memory for
   * later bytes: parts read back from disk then come in two buffers taken by turns instead of a
   * new array per read, and parts held in memory in buffers that serve part after part (so
   * part of a window larger than the memory window can wait in memory). Without it every chunk
   * written is the stream's to keep.
   *
   * @default false
   */
  reuseChunks?: boolean;
}

/**
 * A pull destination writing the file, in order, to `writable`: the pull writes each part only
 * once the whole part has verified, closes the stream at the end and aborts it on failure, so a
 * failed pull leaves the stream ending at the end of a verified part.
 *
 * @example Pulling into memory
 * ```ts
 * import { fromFile, PartedClient, toStream } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "weights");
 * using client = new PartedClient({ plainHttp: true });
 * await client.push(`${registry.host}/org/w:v1`, fromFile(path));
 * let text = "";
 * const writable = new WritableStream<Uint8Array>({
 *   write(chunk) {
 *     text += new TextDecoder().decode(chunk);
 *   },
 * });
 * await client.pull(`${registry.host}/org/w:v1`, toStream(writable));
 * console.log(text); // "weights"
 * await Deno.remove(path);
 * ```
 */
export function toStream(
  writable: WritableStream<Uint8Array>,
  options: ToStreamOptions = {},
): StreamDestination {
  if (!(writable instanceof WritableStream)) {
    throw new TypeError("toStream: writable must be a WritableStream");
  }
  const window = options.memoryWindowBytes;
  if (window !== undefined && (!Number.isSafeInteger(window) || window < 0)) {
    throw new RangeError(`memory window must be a non-negative integer, not ${window}`);
  }
  return Object.freeze({ kind: "stream", writable, ...options });
}

/**
 * What {@linkcode fromStream} returns: a push source that is a readable stream.
 *
 * @example A source from a readable stream
 * ```ts
 * import { fromStream, type StreamSource } from "@ocipart/ocipart";
 * const source: StreamSource = fromStream(new Blob(["abc"]).stream(), { name: "abc.txt" });
 * console.log(source.kind, source.name); // "stream" "abc.txt"
 * ```
 */
export interface StreamSource {
  /** The source kind. */
  readonly kind: "stream";
  /** The bytes of the file, of a length known only at their end. */
  readonly readable: ReadableStream<Uint8Array>;
  /** The file name recorded as the title, if any. */
  readonly name?: string;
  /** Where the part files are made (default: the system's temporary directory). */
  readonly spillDirectory?: string;
}

/**
 * Options of {@linkcode fromStream}.
 *
 * @example Recording a title
 * ```ts
 * import { fromStream, type FromStreamOptions } from "@ocipart/ocipart";
 * const options: FromStreamOptions = { name: "dataset.tar" };
 * console.log(fromStream(new Blob([]).stream(), options).name); // "dataset.tar"
 * ```
 */
export interface FromStreamOptions {
  /** The file name to record as the artifact's title (as `fromFile` records the base name). */
  name?: string;
  /**
   * The directory in which a temporary directory is made for the part files (each part is kept
   * on disk while it is hashed and uploaded; at most `workers` parts at a time). Default: the
   * system's temporary directory.
   */
  spillDirectory?: string;
}

/**
 * A push source reading `readable` to its end: parts are cut as bytes arrive, each written to
 * a temporary file while it is hashed, then uploaded while the next ones arrive. The file's
 * size and digest go into the manifest, written last; a stream that errors leaves no manifest.
 *
 * @example Pushing bytes from memory
 * ```ts
 * import { fromStream, PartedClient } from "@ocipart/ocipart";
 * import { startMemoryRegistry } from "@ocipart/ocipart/testing";
 * await using registry = await startMemoryRegistry();
 * using client = new PartedClient({ plainHttp: true });
 * const source = fromStream(new Blob(["weights"]).stream(), { name: "w.bin" });
 * const pushed = await client.push(`${registry.host}/org/w:v1`, source);
 * const description = await client.inspect(`${registry.host}/org/w:v1`);
 * console.log(description.title, description.fileSize, pushed.digest.startsWith("sha256:")); // "w.bin" 7 true
 * ```
 */
export function fromStream(
  readable: ReadableStream<Uint8Array>,
  options: FromStreamOptions = {},
): StreamSource {
  if (!(readable instanceof ReadableStream)) {
    throw new TypeError("fromStream: readable must be a ReadableStream");
  }
  if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
    throw new TypeError("fromStream: name must be a non-empty string");
  }
  return Object.freeze({ kind: "stream", readable, ...options });
}
