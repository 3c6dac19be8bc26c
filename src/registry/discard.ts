/**
 * Releasing a response body nobody will read.
 *
 * @module
 */

/**
 * Cancels the unread body of `response` so its connection can be released. Never rejects:
 * the body is not needed, so a failure to cancel it changes nothing.
 *
 * @example Releasing a body nobody reads
 * ```ts
 * import { discard } from "./discard.ts";
 * await discard(new Response("unused"));
 * ```
 */
export async function discard(response: Response): Promise<void> {
  if (response.body === null || response.bodyUsed) return;
  try {
    await response.body.cancel();
  } catch {
    // Nothing depends on the cancellation.
  }
}
