/**
 * `ocipart inspect <ref>`: describes a parted artifact from its manifest, as a table or JSON.
 *
 * @module
 */
import {
  type ArtifactDescription,
  isPlainFileName,
  jsonText,
  terminalText,
} from "../../parted/mod.ts";
import type { InspectCommand } from "../arguments/args.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { formatBytes } from "../words/format.ts";
import { stdout } from "../session/io.ts";
import { openSession, type Session } from "../session/session.ts";
import { findError, NotPartedArtifactError } from "../../errors/mod.ts";
import { parseReference } from "../../parted/mod.ts";
import { blobClientOf } from "../session/blob_client.ts";
import { type FileLayer, fileLayers } from "../words/file_artifact.ts";

/**
 * Runs `inspect` and resolves to the exit code.
 *
 * @example
 * ```ts ignore
 * import { runInspect } from "./inspect.ts";
 * const code = await runInspect(parseCommandLine(["inspect", ref]) as InspectCommand);
 * ```
 */
export async function runInspect(command: InspectCommand): Promise<number> {
  const session = await openSession({
    label: "ocipart inspect",
    flags: command,
    reads: { flags: command, reference: command.reference },
  });
  if (typeof session === "number") return session;
  using _ = session;
  try {
    const description = await session.client.inspect(command.reference, { signal: session.signal });
    stdout(command.json ? `${jsonText(description)}\n` : describe(description));
    return EXIT_CODES.success;
  } catch (err) {
    if (findError(err, NotPartedArtifactError) !== undefined) {
      const code = await inspectFiles(command, session).catch((other) => session.failed(other));
      if (code !== undefined) return code;
    }
    return await session.failed(err);
  }
}

/**
 * Of an artifact with one file per layer (`src/cli/file_artifact.ts`), lists the files;
 * undefined when it names none (the caller reports it as not a parted artifact).
 */
async function inspectFiles(
  command: InspectCommand,
  session: Session,
): Promise<number | undefined> {
  const reference = parseReference(command.reference);
  using blobs = blobClientOf(session, `${reference.registry}/${reference.repository}`, {});
  const layers = fileLayers(
    await blobs.manifest(reference.digest ?? reference.tag!, session.signal),
  );
  if (layers.length === 0) return undefined;
  stdout(
    command.json
      ? `${jsonText({ files: layers })}
`
      : describeFiles(layers),
  );
  return EXIT_CODES.success;
}

/**
 * The files of an artifact with one file per layer, one row each; names escaped, and a name a
 * pull into a directory would refuse says so.
 *
 * @example
 * ```ts
 * import { describeFiles } from "./inspect.ts";
 * const text = describeFiles([{ name: "w.bin", plain: true, digest: "sha256:aa", size: 5, mediaType: "x" }]);
 * console.log(text.split("\n")[0]); // "files (each layer is delivered as stored, not unpacked):"
 * ```
 */
export function describeFiles(layers: readonly FileLayer[]): string {
  const sizeWidth = Math.max(4, ...layers.map((l) => String(l.size).length));
  const rows = layers.map((l) =>
    `${String(l.size).padStart(sizeWidth)}  ${l.digest}  ${
      l.plain
        ? terminalText(l.name)
        : `${terminalText(l.name)} (not a plain file name: a pull into a directory refuses it)`
    }`
  );
  return [
    "files (each layer is delivered as stored, not unpacked):",
    "",
    `${"size".padStart(sizeWidth)}  ${"digest".padEnd(71)}  name`,
    ...rows,
    "",
  ].join("\n");
}

/**
 * The human-readable description: the file's fields and annotations, then one row per part.
 * The title and the annotations were chosen by whoever pushed: they are shown escaped
 * (`terminalText`), and a title a pull into a directory would refuse says so.
 *
 * @example
 * ```ts
 * import { describe } from "./inspect.ts";
 * const text = describe({
 *   manifestDigest: "sha256:aa", title: "w.bin", fileSize: 5, fileDigest: "sha256:bb",
 *   partSize: 5, annotations: { "org.opencontainers.image.source": "\x1b[2J" },
 *   parts: [{ index: 0, offset: 0, size: 5, digest: "sha256:cc" }],
 * });
 * console.log(text.split("\n")[0]); // "name:         w.bin"
 * console.log(text.split("\n")[6]); // "annotation:   org.opencontainers.image.source=\x1b[2J"
 * ```
 */
export function describe(description: ArtifactDescription): string {
  const { parts } = description;
  const sizeWidth = Math.max(4, ...parts.map((p) => String(p.size).length));
  const indexWidth = Math.max(5, String(parts.length - 1).length);
  const rows = parts.map((p) =>
    `${String(p.index).padStart(indexWidth)}  ${String(p.size).padStart(sizeWidth)}  ${p.digest}`
  );
  const annotations = Object.entries(description.annotations).map(([key, value]) =>
    `annotation:   ${terminalText(key)}=${terminalText(value)}`
  );
  return [
    `name:         ${titleText(description.title)}`,
    `size:         ${description.fileSize} bytes (${formatBytes(description.fileSize)})`,
    `file digest:  ${description.fileDigest}`,
    `part size:    ${description.partSize} bytes (${formatBytes(description.partSize)})`,
    `parts:        ${parts.length}`,
    `manifest:     ${description.manifestDigest}`,
    ...annotations,
    "",
    `${"index".padStart(indexWidth)}  ${"size".padStart(sizeWidth)}  digest`,
    ...rows,
    "",
  ].join("\n");
}

function titleText(title: string | undefined): string {
  if (title === undefined) return "(no title annotation)";
  const shown = terminalText(title);
  return isPlainFileName(title)
    ? shown
    : `${shown} (not a plain file name: a pull into a directory refuses it)`;
}
