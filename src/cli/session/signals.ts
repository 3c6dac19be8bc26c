/**
 * Turns SIGINT and SIGTERM into an orderly stop of a transfer.
 *
 * @module
 */
import { EXIT_CODES, type StopSignal } from "../words/exit_code.ts";

/** The handle of {@linkcode trapStopSignals}. */
export interface SignalTrap {
  /** The first stop signal delivered since the trap was set, if any. */
  readonly delivered: StopSignal | undefined;
  /** Removes the listeners. */
  dispose(): void;
}

/**
 * Listens for SIGINT and SIGTERM. The first one aborts `controller` (an `AbortError` naming the
 * signal) so the transfer stops, cleans up and leaves its partial file resumable; the caller then
 * exits 130 or 143. A first SIGINT then tells the user, through `notice`, that a second one quits
 * at once (after the abort, whose listeners end a progress line first). A second signal while cleanup runs exits at once with the first signal's
 * code. Without these listeners Deno would exit 130/143 without cleanup; with a listener that
 * only aborted, it would exit 0, so the caller must set the code itself.
 *
 * @example
 * ```ts
 * import { trapStopSignals } from "./signals.ts";
 * const controller = new AbortController();
 * const trap = trapStopSignals(controller);
 * console.log(trap.delivered); // undefined
 * trap.dispose();
 * ```
 */
export function trapStopSignals(
  controller: AbortController,
  notice: (text: string) => void = () => {},
): SignalTrap {
  let delivered: StopSignal | undefined;
  const handlers: Array<[StopSignal, () => void]> = [];
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const handler = () => {
      if (delivered !== undefined) {
        Deno.exit(delivered === "SIGINT" ? EXIT_CODES.sigint : EXIT_CODES.sigterm);
      }
      delivered = signal;
      // Abort first: its listeners end a progress bar's line (over the terminal's `^C` echo),
      // so the notice starts a line of its own.
      controller.abort(new DOMException(`stopped by ${signal}`, "AbortError"));
      if (signal === "SIGINT") notice("stopping… (Ctrl-C again to quit now)\n");
    };
    try {
      Deno.addSignalListener(signal, handler);
      handlers.push([signal, handler]);
    } catch {
      // SIGTERM cannot be listened to on Windows; the default action still applies there.
    }
  }
  return {
    get delivered() {
      return delivered;
    },
    dispose() {
      for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
      handlers.length = 0;
    },
  };
}
