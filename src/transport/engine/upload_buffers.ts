/**
 * The read buffers of file bodies, reused from one request to the next. Each upload reads its
 * range through two buffers; made fresh per request, they outlive the young generation while
 * the request runs and are freed only by a full collection, which a long push may not run: a
 * push from a stream, which sends each part in many chunked requests, grew by 2 MiB a request
 * (30 MiB over 2 GiB). Only buffers of the default chunk size are kept, and only a few.
 *
 * @module
 */
import { KeptBuffers } from "../../hashing/buffer_pool.ts";
import { FILE_BODY_CHUNK_SIZE } from "../file_body.ts";

/** Buffers kept between requests: two for each of four uploads at once. */
const kept = new KeptBuffers(FILE_BODY_CHUNK_SIZE, 8);

/**
 * A buffer of `size` bytes: a kept one when `size` is the default chunk size, else a new one.
 *
 * @example
 * ```ts
 * import { giveUploadBuffer, takeUploadBuffer } from "./upload_buffers.ts";
 * const buffer = takeUploadBuffer(1 << 20);
 * giveUploadBuffer(buffer); // nothing reads or writes it any more
 * console.log(takeUploadBuffer(1 << 20) === buffer); // true
 * ```
 */
export function takeUploadBuffer(size: number): Uint8Array {
  return kept.take(size);
}

/**
 * Keeps `buffer` for a later request. Only once no read fills it and no write sends it any more:
 * a buffer still in use by an abandoned request is left to the collector instead.
 */
export function giveUploadBuffer(buffer: Uint8Array): void {
  kept.give(buffer);
}
