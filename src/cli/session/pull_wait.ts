/**
 * `pull --wait[=DURATION]`: while another pull holds the destination (`PartialInUseError`), try
 * again every half second, up to DURATION (0: no limit) or a stop. Once the holder is gone, its
 * finished file is the answer when it matches the artifact part by part (nothing is fetched);
 * otherwise the pull runs, and resumes from what the holder left.
 *
 * @module
 */
import { findError } from "../../errors/mod.ts";
import {
  DestinationExistsError,
  type PartedClient,
  PARTIAL_SUFFIX,
  PartialInUseError,
  type PullResult,
} from "../../parted/mod.ts";

/** Between two tries: short beside a transfer, long beside a lock's check. */
const POLL_MS = 500;

/** How a waiting pull runs. */
export interface PullWait {
  /** Milliseconds to wait at most, 0 for no limit. */
  readonly waitMs: number;
  /** Ends the wait (Ctrl-C, `--timeout`). */
  readonly signal: AbortSignal;
  /** Told once, when the wait starts. */
  readonly notice: (text: string) => void;
  /** The file the pull writes, once known (into a directory: after the first try). */
  readonly path: () => string | undefined;
  /** The reference pulled. */
  readonly reference: string;
  /** The client that pulls, inspects and verifies. */
  readonly client: PartedClient;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const id = setTimeout(() => {
      signal.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(id);
      reject(signal.reason);
    };
    signal.addEventListener("abort", stop, { once: true });
  });
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** The holder's finished file, when there is one and it is the artifact, part by part. */
async function finishedFile(
  wait: PullWait,
  path: string | undefined = wait.path(),
): Promise<PullResult | undefined> {
  if (path === undefined || await exists(`${path}${PARTIAL_SUFFIX}`)) return undefined;
  if (!await exists(path)) return undefined;
  const options = { signal: wait.signal };
  const report = await wait.client.verify(wait.reference, path, options);
  if (!report.identical) return undefined;
  const { manifestDigest } = await wait.client.inspect(wait.reference, options);
  return {
    path,
    digest: manifestDigest,
    size: report.localSize,
    bytesFetched: 0,
    bytesResumed: report.localSize,
    bytesResumedInParts: report.localSize,
    partsFetched: 0,
    partsResumed: report.parts.length,
    partsContinued: 0,
  };
}

/**
 * Runs `pull`, waiting as {@linkcode PullWait} says while another pull holds the destination.
 *
 * @example
 * ```ts ignore
 * import { pullWaiting } from "./pull_wait.ts";
 * const result = await pullWaiting(() => client.pull(ref, toFile("w.bin")), wait);
 * ```
 */
export async function pullWaiting(
  pull: () => Promise<PullResult>,
  wait: PullWait,
): Promise<PullResult> {
  const deadline = wait.waitMs === 0 ? Infinity : Date.now() + wait.waitMs;
  let waited = false;
  for (;;) {
    try {
      if (waited) {
        const finished = await finishedFile(wait);
        if (finished !== undefined) return finished;
      }
      return await pull();
    } catch (err) {
      // Into a directory the file's name may be learnt only from this refusal.
      const existing = waited ? findError(err, DestinationExistsError)?.path : undefined;
      const finished = existing === undefined ? undefined : await finishedFile(wait, existing);
      if (finished !== undefined) return finished;
      if (findError(err, PartialInUseError) === undefined || Date.now() >= deadline) throw err;
      if (!waited) wait.notice("waiting for another pull of the destination to finish…\n");
      waited = true;
      await pause(Math.min(POLL_MS, deadline - Date.now()), wait.signal);
    }
  }
}
