/**
 * `ocipart pull` of an artifact another tool wrote with one file per layer (ORAS, ModelPack, a
 * Docker model): the layer named by `--file`, or the only one, is pulled with the blob engine
 * (`src/cli/session/blob_file.ts`): parallel ranged reads (through the mirrors first, as the
 * parted pull's parts), resumable across runs, verified, renamed into place. The manifest is read
 * from the registry. The layer is written as stored, never unpacked.
 *
 * @module
 */
import { DigestMismatchError } from "../../errors/mod.ts";
import {
  DestinationExistsError,
  type ExistingEntry,
  jsonText,
  NoFileNameError,
  parseReference,
  terminalText,
} from "../../parted/mod.ts";
import type { PullCommand } from "../arguments/args.ts";
import { blobClientOf } from "../session/blob_client.ts";
import { defaultChunkSize, pullBlobFile } from "../session/blob_file.ts";
import { EXIT_CODES } from "../words/exit_code.ts";
import { usageFailureJson } from "../words/failure_json.ts";
import { type FileLayer, fileLayers } from "../words/file_artifact.ts";
import { stderr, stdout } from "../session/io.ts";
import type { Session } from "../session/session.ts";
import type { TransferProgress } from "../progress/transfer_progress.ts";
import { usagePointer } from "../arguments/usage.ts";
import { UsageError } from "../arguments/usage_error.ts";

/** Ranged reads at once when `--workers` is not given. */
const DEFAULT_WORKERS = 8;
/** Bytes per ranged read of the client's own (unused) stream pulls. */
const MAX_CHUNK_SIZE = 8 << 20;

/** What the pull of a file artifact is told about the command it runs in. */
export interface FilePullContext {
  /** The command. */
  readonly command: PullCommand;
  /** The destination is a directory. */
  readonly intoDirectory: boolean;
  /** The command's session. */
  readonly session: Session;
  /** The command's progress. */
  readonly progress: TransferProgress;
  /** Told the path the pull writes, once known (a failure report names it). */
  readonly onPath: (path: string) => void;
}

/**
 * Pulls the file layer of `context.command.reference`; resolves to the exit code, or to
 * undefined when the artifact names no file (the caller then reports it as not a parted
 * artifact). Failures other than a choice to make are thrown for the session to report.
 *
 * @example
 * ```ts ignore
 * const code = await pullFileArtifact({ command, intoDirectory, session, progress, onPath });
 * ```
 */
export async function pullFileArtifact(context: FilePullContext): Promise<number | undefined> {
  const { command, session, progress } = context;
  const reference = parseReference(command.reference);
  const repository = `${reference.registry}/${reference.repository}`;
  const workers = command.workers ?? DEFAULT_WORKERS;
  using blobs = blobClientOf(session, repository, {
    parallelPull: { workers, chunkSize: MAX_CHUNK_SIZE },
  });
  const signal = session.signal;
  const manifest = await blobs.manifest(reference.digest ?? reference.tag!, signal);
  const layers = fileLayers(manifest);
  if (layers.length === 0) return undefined;
  const layer = choose(layers, command.layerFile);
  if (typeof layer === "string") {
    progress.finish(EXIT_CODES.usage);
    return usageFailure(command, layer);
  }
  const path = context.intoDirectory
    ? await intoDirectory(command.destination, layer, command.overwrite)
    : command.destination;
  context.onPath(path);
  const stated = await blobs.statedSize(layer.digest, signal);
  if (stated !== undefined && stated !== layer.size) {
    throw new DigestMismatchError(
      "GET blob: the registry stores the file's layer with another size than the manifest states",
    );
  }
  const result = await pullBlobFile({
    client: blobs.client,
    repository,
    digest: layer.digest,
    size: layer.size,
    path,
    workers,
    chunkSize: defaultChunkSize(layer.size, workers),
    signal,
    onProgress: progress.onProgress,
    registryOnly: blobs.registryOnly,
  });
  progress.finish(EXIT_CODES.success);
  stdout(
    command.json
      ? `${
        jsonText({
          reference: command.reference,
          destination: command.destination,
          file: layer.name,
          path: result.path,
          bytesFetched: result.fetchedBytes,
          bytesResumed: result.resumedBytes,
        })
      }\n`
      : `${terminalText(path)}\n`,
  );
  return EXIT_CODES.success;
}

/** The layer to pull, or the sentence of a usage error when the choice is not clear. */
function choose(layers: FileLayer[], wanted: string | undefined): FileLayer | string {
  // Escaped (control and invisible characters as \x1b, \u202e), then quoted.
  const names = layers.map((l) => `"${terminalText(l.name)}"`).join(", ");
  if (wanted !== undefined) {
    const found = layers.filter((l) => l.name === wanted);
    if (found.length === 1) return found[0];
    if (found.length > 1) return `--file: the artifact has several layers of that name: ${names}`;
    return `--file: the artifact has no file of that name; its files: ${names}`;
  }
  if (layers.length === 1) return layers[0];
  return `the artifact holds ${layers.length} files: ${names}; choose one with --file NAME`;
}

function usageFailure(command: PullCommand, sentence: string): number {
  const err = new UsageError(sentence, "pull");
  if (command.json) stderr(usageFailureJson(err, usagePointer("pull")));
  else stderr(`ocipart pull: ${sentence}\nocipart pull: ${usagePointer("pull")}\n`);
  return EXIT_CODES.usage;
}

/** The path inside `directory` the layer's file is written to, by the parted pull's rules. */
async function intoDirectory(
  directory: string,
  layer: FileLayer,
  overwrite: boolean,
): Promise<string> {
  if (!layer.plain) throw new NoFileNameError("not-plain");
  const path = `${directory.replace(/\/+$/, "")}/${layer.name}`;
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch {
    return path;
  }
  const existing: ExistingEntry = info.isSymlink
    ? "link"
    : info.isDirectory
    ? "directory"
    : info.isFile
    ? "file"
    : "other";
  if (existing === "file" && overwrite) return path;
  throw new DestinationExistsError(path, existing);
}
