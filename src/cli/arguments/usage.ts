/**
 * The usage text of the reference CLI: one block per command, in {@linkcode COMMAND_USAGE}.
 *
 * @module
 */
import type { CommandName, HelpTopic } from "./usage_error.ts";

const PROGRAM = "ocipart";

const CONNECTION_FLAGS =
  `  --timeout DURATION     give up after DURATION, e.g. 90s, 10m, 1h30m, up to 8760h;
                         0 = no limit (default 0)
  --stall-timeout DURATION
                         fail an attempt that moves no bytes for DURATION (it is retried);
                         0 = never (default 60s)
  --plain-http           talk HTTP instead of HTTPS to the registry
  --insecure             talk HTTPS without verifying the registry's certificate (a warning
                         is printed); not the same as --plain-http
  --ca-file PEM          trust the CA certificates in PEM in addition to the system roots
  --registry-config FILE use FILE as the docker configuration (instead of DOCKER_CONFIG); it
                         must exist, except for login, which creates it`;

const CREDENTIAL_FLAGS =
  `  -u, --username USER    log in as USER; the password is read from standard input
  --password-stdin       read the password for --username from standard input`;

const LAST_FLAGS =
  `  -d, --debug            one line per HTTP exchange on stderr (no URL, host or credential)
  -h, --help             show this help`;

const REGISTRY_FLAGS = `${CONNECTION_FLAGS}\n${CREDENTIAL_FLAGS}\n${LAST_FLAGS}`;

const PROGRESS_FLAG =
  `  --progress MODE        auto|bar|plain|json|none (default auto: a bar when stderr is a
                         terminal, else a line at each phase and at least every 30s)`;

// The spellings of oras, listed where the flags they stand for are.
const CONCURRENCY_ALIAS = "  --concurrency N        the same as --workers N";
const FORMAT_ALIAS = "  --format json|text     --format json is --json; text is the default";

const TRANSFER_ONLY_FLAGS = `  --workers N            concurrent part transfers (default 8)
${CONCURRENCY_ALIAS}
${PROGRESS_FLAG}
  --limit-rate RATE      cap the bandwidth of the whole transfer (all workers, both
                         directions together), e.g. 512KiB/s or 10MiB/s
  --hash-threads N       hash on at most N threads, downloads included (0 = all on the
                         main thread; default: a thread per core for the hashing of local
                         files; downloads, and a push until a part is found present, on
                         the main thread when one core hashes fast)`;

const TRANSFER_FLAGS = `${TRANSFER_ONLY_FLAGS}\n${REGISTRY_FLAGS}`;

const PAD = " ".repeat(25);

const REGISTRIES_CONF_FLAG =
  `  --registries-conf FILE read mirrors from FILE (default: $CONTAINERS_REGISTRIES_CONF, else
${PAD}~/.config/containers/registries.conf, else
${PAD}/etc/containers/registries.conf)`;

const MIRROR_FLAGS = `  --mirror HOST[:PORT][/NAMESPACE]
${PAD}read from this mirror first (repeatable, tried in order; reached
${PAD}like the registry: --plain-http, --insecure, --ca-file); the
${PAD}registry takes over when a mirror fails or lacks the content. Tags
${PAD}are resolved at the registry. Replaces the mirrors of registries.conf
${REGISTRIES_CONF_FLAG}`;

const COPY_MIRROR_FLAGS = `  --mirror HOST[:PORT][/NAMESPACE]
${PAD}read the source from this mirror first (repeatable, tried in order;
${PAD}reached like the source: the shared flags and the --src-… ones); the
${PAD}source registry takes over when a mirror fails or lacks the content.
${PAD}Tags are resolved at the registry. Replaces the mirrors of
${PAD}registries.conf
${REGISTRIES_CONF_FLAG}`;

const SIZE_HELP = "bytes, or with a suffix: K/M/G/T or KB/MB/GB/TB (powers of 1000),\n" +
  "                         KiB/MiB/GiB/TiB (powers of 1024)";

/** The usage block of each command, without the exit-code table. */
const SIZE_HELP_SHORT = "bytes, 512KiB, 100M, …";

const COMMAND_USAGE: Readonly<Record<CommandName, string>> = {
  push: `Usage: ${PROGRAM} push [flags] <ref> <file>

Push <file> to <ref> (registry/repository:tag or registry/repository@sha256:...) as a parted
artifact. On success the manifest digest is the only line on standard output.

<file> - reads standard input (tar c dir | ${PROGRAM} push <ref> -): parts are cut as bytes
arrive; each waits in a temporary file while it is hashed and uploaded, so at most
--workers x --part-size bytes are on disk (8 x 512MiB = 4GiB by default). The manifest is
written last; input that fails leaves none. Same bytes, part size and --name give the same
manifest digest as a push of the file.

Flags:
  --part-size SIZE       part size in ${SIZE_HELP} (default 512MiB)
  --json                 print the manifest descriptor as JSON instead of the digest
${FORMAT_ALIAS}
  --annotation KEY=VALUE add a manifest annotation (repeatable); the file's base name is
                         recorded as org.opencontainers.image.title
  --name NAME            with -, the file name to record as the title (else none)
  --temp-dir DIR         with -, where the part files wait (default: the system's
                         temporary directory); removed at the end
${TRANSFER_FLAGS}`,

  pull: `Usage: ${PROGRAM} pull [flags] <ref> <dest>

Pull the parted artifact <ref> into the file <dest>, or, when <dest> is a directory, into the
file named by the artifact's recorded file name there; an existing file of that name is not
replaced without --overwrite (refused before anything is downloaded). Data lands in
<file>.parted-partial first; the file only ever appears complete and verified. Rerun an
interrupted pull to resume it: parts already on disk, and the written part of each part that
was in flight, are kept. One pull at a time owns a file: another pull of it fails at once. On
success the path of the file written is the only line on standard output.

<dest> - writes the file, in order, to standard output (${PROGRAM} pull <ref> - | tar x).
Parts download in parallel, at most --workers ahead of the part being written; a part goes out
only once it has verified whole. As many as fit in 256MiB wait in memory, the others in a
temporary directory (at most --workers x part size bytes on disk), removed however the pull
ends. A part that fails its digest ends the output at the end of the part before it
(exit 5); a reader that stops reading (| head -c 1M) ends the pull quietly with exit 0.

An artifact another tool wrote with one file per layer (ORAS, ModelPack, a Docker model) is
pulled too: its one file, or the one --file names, written as stored (never unpacked) through
<file>.blob-partial, resumable and verified the same way.

Flags:
  --file NAME            of an artifact with one file per layer, the file to take
  --overwrite            with a directory <dest>, replace a file of the artifact's name; and
                         for either kind of <dest>, reuse the parts of the existing file
                         that match (an identical file is up to date: nothing fetched)
  --reuse FILE           copy the parts of FILE that match the artifact instead of fetching
                         them (FILE is only read)
  --temp-dir DIR         with -, where parts wait when they do not fit in memory
  --wait[=DURATION]      wait for another pull of <dest> to finish (at most DURATION), then
                         resume what it left or return its file if it matches
  --json                 print the path written and what was fetched and resumed as JSON
${FORMAT_ALIAS}
  --verify-file-digest   also check the whole-file digest of the bytes on disk: the file is read
                         back and hashed before the rename (one more read of the file after
                         the download, about 1 to 2 s per GiB). Without it every part is
                         verified as it arrives, and the rename checks only that the partial
                         is still the file this pull locked and of the file's size
${MIRROR_FLAGS}
${TRANSFER_FLAGS}`,

  copy: `Usage: ${PROGRAM} copy [flags] <src-ref> <dst-ref>

Copy the parted artifact <src-ref> to <dst-ref> (another repository, or another registry)
without a local file. On one registry every part is mounted (no bytes move); across registries
parts stream from one registry to the other, verified by digest, a few chunks in memory at a
time. Parts the target already has are skipped. The copy keeps the manifest digest, which is
the only line on standard output. Each registry's credential comes from the docker
configuration (--username is not accepted: it would reach both registries). Mirrors serve
the source only.

The connection flags below apply to both registries; a side's own flags decide that side:
--src-plain-http for a plain-HTTP source and an HTTPS destination, --dest-ca-file for a
destination under a private CA, and so on.

Flags:
  --json                 print {"descriptor", "copied", "mounted", "skipped"} as JSON
  --src-plain-http, --dest-plain-http
                         talk HTTP instead of HTTPS to the source (destination) registry
  --src-insecure, --dest-insecure
                         talk HTTPS without verifying the source (destination) registry's
                         certificate (a warning is printed)
  --src-ca-file PEM, --dest-ca-file PEM
                         trust the CA certificates in PEM for the source (destination)
                         registry, instead of --ca-file
${FORMAT_ALIAS}
${COPY_MIRROR_FLAGS}
${TRANSFER_ONLY_FLAGS}
${CONNECTION_FLAGS}
${LAST_FLAGS}`,

  inspect: `Usage: ${PROGRAM} inspect [flags] <ref>

Describe the parted artifact <ref> without downloading it: file name, size, file digest, part
size, part count and each part (index, size, digest).

Flags:
  --json                 print the description as JSON instead of a table
${FORMAT_ALIAS}
${MIRROR_FLAGS}
${REGISTRY_FLAGS}`,

  cat: `Usage: ${PROGRAM} cat [flags] <ref>

Write the file of the parted artifact <ref>, or with --range a part of it, to standard output.
Only the parts the range touches are fetched, and each is verified whole before any of its
bytes is written: a part's digest is all that vouches for its bytes, so reading 8 bytes costs
one part (the part size is the granularity; a range across a part edge costs two).

Flags:
  --range START-END      bytes START to END, both included (0-7: the first 8 bytes);
                         START- to the end of the file; START+LENGTH (LENGTH may be 0).
                         A range past the end of the file is refused (exit 2)
  --cache-dir DIR        keep verified parts in DIR (created if needed; the 2 most recently
                         used) so that the next read of nearby bytes fetches nothing; a kept
                         part is hashed again before it is used
  --temp-dir DIR         without --cache-dir, where a fetched part waits when it does not
                         fit in memory (256 MiB; the default part size is 512 MiB): a
                         directory made there and removed at the end (default: the system's
                         temporary directory)
  --limit-rate RATE      cap the bandwidth, e.g. 512KiB/s or 10MiB/s
${MIRROR_FLAGS}
${REGISTRY_FLAGS}`,

  verify: `Usage: ${PROGRAM} verify [flags] <ref> <file>

Check the local <file> against the parted artifact <ref> part by part, hashing parts in
parallel; only the manifest is downloaded. Exit 0 when identical, 5 when any part or the size
differs.

Flags:
  --workers N            parts hashed at once (default: one per core)
${CONCURRENCY_ALIAS}
${PROGRESS_FLAG}
  --json                 print the result as JSON instead of a table
${FORMAT_ALIAS}
${MIRROR_FLAGS}
${REGISTRY_FLAGS}`,

  login: `Usage: ${PROGRAM} login [--username USER] [--password-stdin] [flags] <registry>

Check USER and the password read from standard input (--password-stdin) or, on a terminal,
typed at a prompt with echo off (the user name too when --username is missing) against
<registry> (host[:port]), then save them in the docker configuration: through its credential
helper (credsStore) when one is configured, otherwise as auths.<registry>.auth; either way the
file keeps nothing else for <registry>. A rejected credential saves nothing (exit 6).

Flags:
  --json                 print the result as JSON
${FORMAT_ALIAS}
${REGISTRY_FLAGS}`,

  logout: `Usage: ${PROGRAM} logout [flags] <registry>

Erase the credential of <registry> from the docker configuration (and its credential helper),
and say where one was removed from, or that none was stored.

Flags:
  --registry-config FILE use FILE (which must exist) as the docker configuration
  --timeout DURATION     give up after DURATION (a credential helper that hangs is stopped)
  --json                 print the result as JSON
${FORMAT_ALIAS}
  -h, --help             show this help`,
  "blob pull": `Usage: ${PROGRAM} blob pull [flags] <repo@digest> <file>

Download one blob into <file> (- for standard output) with --workers ranged reads of
--chunk-size bytes at once. The bytes land in <file>.blob-partial, which a rerun of the same
command continues from; <file> appears only once the whole blob hashed to <digest>. A blob
whose bytes do not match is discarded (exit 5); one that does not exist exits 3. Bytes read
from a mirror that do not match are fetched again from the registry. With -, the bytes go out
in order as they arrive and the digest is checked at the end: a blob is one unit of
verification, so exit 5 then means the output is not the blob (discard it; a pull to a file
never shows such bytes).

Flags:
  --chunk-size SIZE      bytes per ranged read (default 8MiB, less for a small blob):
                         ${SIZE_HELP_SHORT}
${MIRROR_FLAGS}
${TRANSFER_FLAGS}`,

  "blob push": `Usage: ${PROGRAM} blob push [flags] <repo> <file>

Upload <file> as one blob into <repo> (REGISTRY/REPOSITORY) and print its digest: one
monolithic upload, or PATCH chunks of --chunk-size bytes.

Flags:
  --chunk-size SIZE      upload in chunks of SIZE (default: one request)
${TRANSFER_FLAGS}`,

  "blob exists": `Usage: ${PROGRAM} blob exists [flags] <repo@digest>

Ask whether <repo> has the blob <digest>: prints present (exit 0) or absent (exit 3).

Flags:
  --json                 print {"exists": true|false} instead
${REGISTRY_FLAGS}`,

  "blob mount": `Usage: ${PROGRAM} blob mount [flags] <from-repo@digest> <to-repo>

Make the blob <digest> of <from-repo> part of <to-repo> on the same registry without
uploading it. Prints mounted (exit 0); a registry that declines is said on standard error
(exit 1): push the blob then.

Flags:
  --json                 print {"mounted": true|false} instead
${REGISTRY_FLAGS}`,
};

const EXIT_CODES = `Exit codes:
  0 success            1 failure (no sentinel)  2 usage error          3 not found
  4 not a parted artifact                       5 digest mismatch      6 unauthorized
  7 part too large     130 interrupted (SIGINT) 143 terminated (SIGTERM)`;

const GENERAL = `Usage: ${PROGRAM} <command> [flags] <operands>

Move one very large file through an OCI registry as a parted artifact.

Commands:
  push [flags] <ref> <file>    push a file (- reads standard input)
  pull [flags] <ref> <dest>    pull a file (- writes standard output)
  copy [flags] <src> <dst>     copy an artifact to another repository or registry
  inspect [flags] <ref>        describe an artifact without downloading it
  cat [flags] <ref>            write the file or a byte range of it to standard output
  verify [flags] <ref> <file>  compare a local file with an artifact, part by part
  login [flags] <registry>     check and save a credential
  logout [flags] <registry>    erase a saved credential
  blob pull|push|exists|mount  move one blob: ocipart blob --help

Global flags:
  -h, --help             show this help (\`${PROGRAM} <command> --help\` for a command's flags)
  --version              print the version

Credentials come from --username/--password-stdin or else from the docker configuration
(--registry-config, else $DOCKER_CONFIG/config.json, default ~/.docker/config.json) and its
credential helpers.`;

/** The blob commands, for \`ocipart blob --help\`: each one's own help has its flags. */
const BLOB = `Usage: ${PROGRAM} blob <subcommand> [flags] <operands>

Move one blob, named by its digest, without a manifest.

Subcommands:
  pull [flags] <repo@digest> <file>        download a blob (- writes standard output)
  push [flags] <repo> <file>               upload a file as one blob and print its digest
  exists [flags] <repo@digest>             say whether a blob is present (exit 0) or absent (3)
  mount [flags] <from-repo@digest> <to-repo>
                                           link a blob into another repository, uploading nothing

\`${PROGRAM} blob <subcommand> --help\` shows a subcommand's flags.`;

/**
 * Returns the usage block of `command` (or of the blob commands together), or the general usage
 * when `command` is undefined. Each block ends with the exit-code table and no trailing newline.
 *
 * @example
 * ```ts
 * import { usageText } from "./usage.ts";
 * console.log(usageText("push").split("\n")[0]); // "Usage: ocipart push [flags] <ref> <file>"
 * ```
 */
export function usageText(command?: HelpTopic): string {
  const block = command === undefined
    ? GENERAL
    : command === "blob"
    ? BLOB
    : COMMAND_USAGE[command];
  return `${block}\n\n${EXIT_CODES}`;
}

/**
 * The line that follows a usage error: where the full usage of `command` (or of the CLI when no
 * command was recognised) is, instead of the usage itself.
 *
 * @example
 * ```ts
 * import { usagePointer } from "./usage.ts";
 * console.log(usagePointer("pull")); // "see 'ocipart pull --help' for the flags of pull"
 * ```
 */
export function usagePointer(command?: CommandName): string {
  return command === undefined
    ? `see '${PROGRAM} --help' for the commands`
    : `see '${PROGRAM} ${command} --help' for the flags of ${command}`;
}
