/**
 * A `ReadableStream` fed by an async producer that waits for the consumer (backpressure), and
 * whose cancellation waits for the producer to stop.
 *
 * @module
 */

/** Where a producer writes; `write` resolves when the consumer wants more. */
export interface ProducerSink {
  /** Queues `bytes`; resolves once the consumer is ready for more or the stream was cancelled. */
  write(bytes: Uint8Array): Promise<void>;
}

/**
 * Runs `produce` and exposes what it writes. The stream closes when `produce` resolves and
 * errors with what it rejects with (mapped by `mapError`). `cancel` (from the consumer) calls
 * `onCancel` and then waits for `produce` to settle before it returns.
 *
 * @example
 * ```ts
 * import { producerStream } from "./producer_stream.ts";
 * const stream = producerStream(async (sink) => {
 *   await sink.write(new Uint8Array([1]));
 *   await sink.write(new Uint8Array([2]));
 * }, () => {});
 * console.log(new Uint8Array(await new Response(stream).arrayBuffer())); // Uint8Array(2) [1, 2]
 * ```
 */
export function producerStream(
  produce: (sink: ProducerSink) => Promise<void>,
  onCancel: (reason: unknown) => void,
  mapError: (err: unknown) => unknown = (err) => err,
): ReadableStream<Uint8Array> {
  let waiter: (() => void) | undefined;
  let cancelled = false;
  let running: Promise<void> | undefined;
  const wake = () => {
    const resolve = waiter;
    waiter = undefined;
    resolve?.();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const sink: ProducerSink = {
        async write(bytes) {
          if (cancelled) return;
          controller.enqueue(bytes);
          while (!cancelled && (controller.desiredSize ?? 0) <= 0) {
            await new Promise<void>((resolve) => (waiter = resolve));
          }
        },
      };
      // Started after start() returns so the stream exists before the producer writes.
      running = Promise.resolve().then(() => produce(sink)).then(() => {
        if (!cancelled) controller.close();
      }, (err) => {
        if (!cancelled) controller.error(mapError(err));
      });
    },
    pull() {
      wake();
    },
    async cancel(reason) {
      cancelled = true;
      onCancel(reason);
      wake();
      await running;
    },
  }, { highWaterMark: 1 });
}
