/**
 * `ocipart copy <src-ref> <dst-ref>`: a parted artifact to another repository or registry,
 * without a local file. Prints the manifest digest (the source's), or with `--json` the
 * descriptor and how many parts were copied, mounted and already present. Each side is reached
 * as the shared flags and its own `--src-…`/`--dest-…` flags say.
 *
 * @module
 */
import {
  jsonText,
  mirrorHost,
  PartedClient,
  type PartedClientOptions,
  type RegistrySettings,
} from "../../parted/mod.ts";
import type { CopyCommand } from "../arguments/args.ts";
import type { CopySide } from "../arguments/copy_sides.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { noticeWrite, stdout } from "../session/io.ts";
import { openSession, readCaFile } from "../session/session.ts";
import { transferProgress } from "../progress/transfer_progress.ts";
import { schemeMismatch } from "./copy_scheme.ts";

/**
 * Runs `copy` and resolves to the exit code.
 *
 * @example
 * ```ts ignore
 * import { runCopy } from "./copy.ts";
 * const code = await runCopy(parseCommandLine(["copy", src, dst]) as CopyCommand);
 * ```
 */
export async function runCopy(command: CopyCommand): Promise<number> {
  const progress = transferProgress(command.progress, { kind: "copy" });
  for (const side of [command.sides.source, command.sides.target]) {
    if (side.own && side.insecure && !command.insecure) {
      noticeWrite(
        `ocipart copy: warning: --${side.prefix}-insecure: the ${side.name} registry's ` +
          "certificate is not verified\n",
      );
    }
  }
  const session = await openSession({
    label: "ocipart copy",
    flags: command,
    reads: { flags: command, reference: command.source },
  }, progress);
  if (typeof session === "number") return session;
  using _ = session;
  const { clientOptions, signal } = session;
  try {
    // Closed when the command ends, so no pooled connection outlives it.
    using client = new PartedClient(await withSides(clientOptions, command, signal));
    const result = await client.copy(command.source, command.target, {
      ...(command.workers === undefined ? {} : { workers: command.workers }),
      onProgress: progress.onProgress,
      signal,
    }).catch(async (err) => {
      throw await schemeMismatch(err, client, command.sides, signal) ?? err;
    });
    progress.finish(EXIT_CODES.success);
    stdout(command.json ? `${jsonText(result)}\n` : `${result.descriptor.digest}\n`);
    return EXIT_CODES.success;
  } catch (err) {
    return await session.failed(err);
  }
}

/**
 * The client options with a `registries` entry for each side that has flags of its own; the
 * source's `--mirror` hosts are reached like the source.
 */
async function withSides(
  options: PartedClientOptions,
  command: CopyCommand,
  signal: AbortSignal,
): Promise<PartedClientOptions> {
  const registries: Record<string, RegistrySettings> = {};
  const { source, target } = command.sides;
  for (const side of [source, target]) {
    if (!side.own || side.registry === undefined) continue;
    registries[side.registry.toLowerCase()] = await settings(side, signal);
  }
  if (source.own && source.registry !== undefined) {
    for (const location of command.mirrors) {
      const host = mirrorHost(location);
      // A mirror on the destination's registry keeps the destination's settings.
      if (host !== undefined) registries[host] ??= registries[source.registry.toLowerCase()];
    }
  }
  // A side's own flags replace what certs.d gave its registry.
  return Object.keys(registries).length === 0
    ? options
    : { ...options, registries: { ...options.registries, ...registries } };
}

async function settings(side: CopySide, signal: AbortSignal): Promise<RegistrySettings> {
  if (side.plainHttp) return { plainHttp: true };
  // A side's own --…-ca-file replaces --ca-file there; without one it keeps the shared roots.
  const flag = `--${side.prefix}-ca-file`;
  const ownCa = side.flags.includes(flag) && side.caFile !== undefined;
  return {
    plainHttp: false,
    insecureTls: side.insecure,
    ...(ownCa ? { caCerts: [await readCaFile(side.caFile!, flag, signal)] } : {}),
  };
}
