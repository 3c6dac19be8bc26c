/**
 * `ocipart inspect <ref>`: describes a parted artifact from its manifest, as a table or JSON.
 *
 * @module
 */
import { PartedClient } from "../../parted/client.ts";
import type { ArtifactDescription } from "../../parted/inspect.ts";
import type { InspectCommand } from "../args.ts";
import { EXIT_CODES } from "../exit_code.ts";
import { formatBytes } from "../format.ts";
import { stdout } from "../io.ts";
import { printable } from "../printable.ts";
import { runRegistryCommand } from "../session.ts";

/**
 * Runs `inspect` and resolves to the exit code.
 *
 * @example
 * ```ts ignore
 * import { runInspect } from "./inspect.ts";
 * const code = await runInspect(parseCommandLine(["inspect", ref]) as InspectCommand);
 * ```
 */
export function runInspect(command: InspectCommand): Promise<number> {
  return runRegistryCommand({
    label: "ocipart inspect",
    flags: command,
    run: async ({ clientOptions, signal }) => {
      using client = new PartedClient(clientOptions);
      const description = await client.inspect(command.reference, { signal });
      stdout(command.json ? `${JSON.stringify(description)}\n` : describe(description));
      return EXIT_CODES.success;
    },
  });
}

/**
 * The human-readable description: the file's fields, then one row per part.
 *
 * @example
 * ```ts
 * import { describe } from "./inspect.ts";
 * const text = describe({
 *   manifestDigest: "sha256:aa", title: "w.bin", fileSize: 5, fileDigest: "sha256:bb",
 *   partSize: 5, parts: [{ index: 0, offset: 0, size: 5, digest: "sha256:cc" }],
 * });
 * console.log(text.split("\n")[0]); // "name:         w.bin"
 * ```
 */
export function describe(description: ArtifactDescription): string {
  const { parts } = description;
  const sizeWidth = Math.max(4, ...parts.map((p) => String(p.size).length));
  const indexWidth = Math.max(5, String(parts.length - 1).length);
  const rows = parts.map((p) =>
    `${String(p.index).padStart(indexWidth)}  ${String(p.size).padStart(sizeWidth)}  ${p.digest}`
  );
  return [
    // The title is the registry's text: escaped, so it cannot drive the terminal.
    `name:         ${
      description.title === undefined ? "(no title annotation)" : printable(description.title)
    }`,
    `size:         ${description.fileSize} bytes (${formatBytes(description.fileSize)})`,
    `file digest:  ${description.fileDigest}`,
    `part size:    ${description.partSize} bytes (${formatBytes(description.partSize)})`,
    `parts:        ${parts.length}`,
    `manifest:     ${description.manifestDigest}`,
    "",
    `${"index".padStart(indexWidth)}  ${"size".padStart(sizeWidth)}  digest`,
    ...rows,
    "",
  ].join("\n");
}
