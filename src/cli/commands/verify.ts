/**
 * `ocipart verify <ref> <file>`: compares a local file with a parted artifact part by part.
 *
 * @module
 */
import { jsonText, type VerifyReport } from "../../parted/mod.ts";
import type { VerifyCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { stdout } from "../session/io.ts";
import { openSession } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";

/**
 * Runs `verify` and resolves to the exit code: 0 identical, 5 when the size or any part
 * differs. The hashing's progress is shown as `--progress` asks, on standard error; the
 * report goes to standard output once the display has ended.
 *
 * @example
 * ```ts ignore
 * import { runVerify } from "./verify.ts";
 * const code = await runVerify(parseCommandLine(["verify", ref, "w.bin"]) as VerifyCommand);
 * ```
 */
export async function runVerify(command: VerifyCommand): Promise<number> {
  const progress = transferProgress(command.progress, { kind: "verify" });
  const session = await openSession({
    label: "ocipart verify",
    flags: command,
    reads: { flags: command, reference: command.reference },
    localPath: command.file,
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  try {
    const report = await session.client.verify(command.reference, command.file, {
      ...(command.workers === undefined ? {} : { workers: command.workers }),
      onProgress: progress.onProgress,
      signal: session.signal,
    });
    const code = report.identical ? EXIT_CODES.success : EXIT_CODES.digestMismatch;
    progress.finish(code);
    stdout(command.json ? `${jsonText(report)}\n` : verifyTable(report));
    return code;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * The human-readable report: one row per part, then the verdict.
 *
 * @example
 * ```ts
 * import { verifyTable } from "./verify.ts";
 * const part = { index: 0, offset: 0, size: 5, digest: "sha256:aa" };
 * const text = verifyTable({
 *   identical: true, expectedSize: 5, localSize: 5, differing: [],
 *   parts: [{ ...part, localDigest: "sha256:aa", matches: true }],
 * });
 * console.log(text.trimEnd().split("\n").at(-1)); // "identical: 1 of 1 parts match"
 * ```
 */
export function verifyTable(report: VerifyReport): string {
  const { parts } = report;
  const indexWidth = Math.max(5, String(parts.length - 1).length);
  const sizeWidth = Math.max(4, ...parts.map((p) => String(p.size).length));
  const rows = parts.map((p) => {
    const state = p.matches ? "ok" : p.localDigest === undefined ? "MISSING" : "DIFFERS";
    return `${String(p.index).padStart(indexWidth)}  ${String(p.size).padStart(sizeWidth)}  ` +
      `${state.padEnd(7)}  ${p.digest}`;
  });
  const matching = parts.length - report.differing.length;
  const lines = [`${"index".padStart(indexWidth)}  ${"size".padStart(sizeWidth)}  state    digest`];
  lines.push(...rows);
  if (report.localSize !== report.expectedSize) {
    lines.push(`size differs: local ${report.localSize} bytes, artifact ${report.expectedSize}`);
  }
  const verdict = report.identical ? "identical" : "different";
  lines.push(`${verdict}: ${matching} of ${parts.length} parts match`, "");
  return lines.join("\n");
}
