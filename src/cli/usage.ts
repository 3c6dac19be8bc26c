/**
 * The usage text of the reference CLI.
 *
 * @module
 */
import type { CommandName } from "./usage_error.ts";

const PROGRAM = "ocipart";

const COMMON_FLAGS = `  --workers N            concurrent part transfers (default 8)
  --timeout DURATION     give up after DURATION, e.g. 90s, 10m, 1h30m, up to 8760h;
                         0 = no limit (default 0)
  --stall-timeout DURATION
                         fail an attempt that moves no bytes for DURATION (it is retried);
                         0 = never (default 60s)
  --plain-http           talk HTTP instead of HTTPS to the registry
  --ca-file PEM          trust the CA certificates in PEM in addition to the system roots
  --username USER        log in as USER; the password is read from standard input
  --password-stdin       read the password for --username from standard input
  --progress MODE        auto|bar|plain|json|none (default auto: bar when stderr is a terminal)
  --debug                one line per HTTP exchange on stderr (no URL, host or credential)
  --limit-rate RATE      cap the bandwidth of the whole transfer (all workers, both
                         directions), e.g. 512KiB/s or 10MiB/s
  -h, --help             show this help`;

const PUSH = `Usage: ${PROGRAM} push [flags] <ref> <file>

Push <file> to <ref> (registry/repository:tag or registry/repository@sha256:...) as a parted
artifact. On success the manifest digest is the only line on standard output.

Flags:
  --part-size SIZE       part size in bytes or with a KiB/MiB/GiB suffix (default 512MiB)
  --json                 print the manifest descriptor as JSON instead of the digest
${COMMON_FLAGS}`;

const PULL = `Usage: ${PROGRAM} pull [flags] <ref> <dest>

Pull the parted artifact <ref> into the file <dest>. Data lands in <dest>.parted-partial first;
<dest> only ever appears complete and verified. Rerun an interrupted pull to resume it.
Nothing is printed on standard output.

Flags:
${COMMON_FLAGS}`;

const EXIT_CODES = `Exit codes:
  0 success            1 failure (no sentinel)  2 usage error          3 not found
  4 not a parted artifact                       5 digest mismatch      6 unauthorized
  7 part too large     130 interrupted (SIGINT) 143 terminated (SIGTERM)`;

const GENERAL = `Usage: ${PROGRAM} <command> [flags] <ref> <file>

Move one very large file through an OCI registry as a parted artifact.

Commands:
  push [flags] <ref> <file>   push a file
  pull [flags] <ref> <dest>   pull a file
  copy [flags] <src> <dst>    copy an artifact to another repository or registry

Global flags:
  -h, --help             show this help (\`${PROGRAM} <command> --help\` for a command's flags)
  --version              print the version

Credentials come from --username/--password-stdin or else from the docker configuration
($DOCKER_CONFIG/config.json, default ~/.docker/config.json) and its credential helpers.`;

/**
 * Returns the usage block of `command`, or the general usage when `command` is undefined. Each
 * block ends with the exit-code table and no trailing newline.
 *
 * @example
 * ```ts
 * import { usageText } from "./usage.ts";
 * console.log(usageText("push").split("\n")[0]); // "Usage: ocipart push [flags] <ref> <file>"
 * ```
 */
export function usageText(command?: CommandName): string {
  const block = command === "push" ? PUSH : command === "pull" ? PULL : GENERAL;
  return `${block}\n\n${EXIT_CODES}`;
}
