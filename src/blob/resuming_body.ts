/**
 * The body of a single-stream blob download across continuations: reads that arrive together are
 * joined, a broken body continues with a ranged GET from the last byte handed on (within the
 * operation's attempt budget), and what a 200 answer to a continuation repeats is skipped.
 *
 * @module
 */
import { isAbortError } from "../errors/find_error.ts";
import { NetworkError, ProtocolError } from "../errors/kinds.ts";
import { asNetworkFailure } from "../errors/network_failure.ts";
import { concatBytes } from "../registry/bytes.ts";
import type { AttemptBudget } from "../remote/retry.ts";

/** A response that starts or continues the body, and what it says. */
export interface BodyResponse {
  /** The body to read. */
  body: ReadableStream<Uint8Array>;
  /** The blob's total size when the response states it. */
  total: number | undefined;
  /** True when the server showed it serves byte ranges. */
  ranges: boolean;
  /** Bytes at the start of `body` that were already delivered (a 200 answer to a resume). */
  skip: number;
}

/** Asks for the body from `offset`; `"complete"` when nothing is left to send. */
export type FetchFrom = (
  offset: number,
  total: number | undefined,
) => Promise<BodyResponse | "complete">;

/**
 * Reads that arrive within `GATHER_MS` of each other are joined up to `EMIT_BYTES` before they
 * are handed on: a fast link delivers 64 KiB reads, and each one costs a hash update and a
 * consumer write; a slow link is never held back for longer than a read plus `GATHER_MS`.
 */
export const EMIT_BYTES = 1 << 20;
const GATHER_MS = 10;

const operation = "GET blob";

/**
 * A blob's bytes in order, from a first response and the continuations it takes.
 *
 * @example Reading a body to its end
 * ```ts ignore
 * const body = new ResumingBody(first, (offset, total) => getBody(offset, total), budget, signal);
 * for (let bytes = await body.read(); bytes !== undefined; bytes = await body.read()) use(bytes);
 * ```
 */
export class ResumingBody {
  readonly #fetchFrom: FetchFrom;
  readonly #budget: AttemptBudget;
  readonly #signal: AbortSignal;
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #total: number | undefined;
  #ranges: boolean;
  #skip: number;
  #offset = 0;
  /** A read taken while gathering that ended the body or failed: the next read handles it. */
  #held: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;

  /** Reads `first`, continuing through `fetchFrom` within `budget`. */
  constructor(
    first: BodyResponse,
    fetchFrom: FetchFrom,
    budget: AttemptBudget,
    signal: AbortSignal,
  ) {
    this.#fetchFrom = fetchFrom;
    this.#budget = budget;
    this.#signal = signal;
    this.#reader = first.body.getReader();
    this.#total = first.total;
    this.#ranges = first.ranges;
    this.#skip = first.skip;
  }

  /** Bytes handed on so far. */
  get offset(): number {
    return this.#offset;
  }

  /** The blob's size, once a response stated it. */
  get total(): number | undefined {
    return this.#total;
  }

  /** The next bytes (joined where they arrived together), or undefined at the blob's end. */
  async read(): Promise<Uint8Array | undefined> {
    const first = await this.#next();
    if (first === undefined) {
      if (this.#total !== undefined && this.#offset !== this.#total) {
        throw new NetworkError(`${operation}: body ended early`);
      }
      return undefined;
    }
    const value = first.byteLength >= EMIT_BYTES ? first : await this.#gather(first);
    this.#offset += value.byteLength;
    return value;
  }

  /** Stops the body being read; never throws. */
  async cancel(reason?: unknown): Promise<void> {
    await this.#reader.cancel(reason).catch(() => {});
  }

  /** The next bytes of the blob (`skip` applied), or undefined at its end; resumes a break. */
  async #next(): Promise<Uint8Array | undefined> {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        const read = this.#held ?? this.#reader.read();
        this.#held = undefined;
        chunk = await read;
        if (chunk.done && this.#total !== undefined && this.#offset < this.#total) {
          throw new NetworkError(`${operation}: body ended early`);
        }
      } catch (err) {
        if (this.#signal.aborted || isAbortError(err)) throw this.#signal.reason ?? err;
        if (await this.#resume(asNetworkFailure(operation, err, undefined, "body read failed"))) {
          return undefined;
        }
        continue;
      }
      if (chunk.done) return undefined;
      const value = this.#withoutSkipped(chunk.value);
      if (value.byteLength === 0) continue;
      this.#checkRoom(value.byteLength);
      return value;
    }
  }

  /**
   * Continues after `err` from the last byte handed on; resolves true when the registry says
   * nothing is left. A server that does not serve ranges cannot continue past byte zero.
   */
  async #resume(err: unknown): Promise<boolean> {
    if (this.#signal.aborted) throw this.#signal.reason;
    if (!this.#ranges && this.#offset > 0) throw err;
    await this.#budget.failed(operation, err);
    for (;;) {
      try {
        const next = await this.#fetchFrom(this.#offset, this.#total);
        if (next === "complete") return true;
        this.#reader = next.body.getReader();
        this.#total = next.total;
        this.#ranges ||= next.ranges;
        this.#skip = next.skip;
        return false;
      } catch (failure) {
        await this.#budget.failed(operation, failure);
      }
    }
  }

  #withoutSkipped(value: Uint8Array): Uint8Array {
    if (this.#skip === 0) return value;
    const dropped = Math.min(this.#skip, value.byteLength);
    this.#skip -= dropped;
    return value.subarray(dropped);
  }

  /** Fails when `length` more bytes would pass the blob's stated size. */
  #checkRoom(length: number): void {
    if (this.#total !== undefined && this.#offset + length > this.#total) {
      throw new ProtocolError(`${operation}: body longer than the blob size`);
    }
  }

  /**
   * Joins `first` with the reads behind it up to `EMIT_BYTES`, for at most `GATHER_MS`. A read
   * that ends or breaks the body is held for the next one, so a continuation starts after the
   * bytes handed on.
   */
  async #gather(first: Uint8Array): Promise<Uint8Array> {
    const pieces = [first];
    let length = first.byteLength;
    const until = performance.now() + GATHER_MS;
    while (length < EMIT_BYTES && performance.now() < until) {
      const read = this.#reader.read();
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await read;
      } catch {
        this.#held = read;
        break;
      }
      if (chunk.done) {
        this.#held = read;
        break;
      }
      const value = this.#withoutSkipped(chunk.value);
      this.#checkRoom(length + value.byteLength);
      pieces.push(value);
      length += value.byteLength;
    }
    return concatBytes(pieces, length);
  }
}
