/**
 * The Go peers the benches time beside this project: `peer-oras` (oras-go: one monolithic PUT,
 * one GET) and `peer-crane` (go-containerregistry: one streamed PATCH, one GET), each a binary
 * that pushes one file as the one layer of an artifact and pulls it back into a directory.
 *
 * They are built outside this project, from Debian's Go packages; a bench finds them in
 * `$OCIPART_PEERS_BIN`, else `$XDG_CACHE_HOME/ocipart-peers`, else `~/.cache/ocipart-peers`, and
 * skips them, saying so, when they are not there.
 *
 * API:
 * - `findPeers(): Promise<Peer[]>` (the built ones, in a fixed order) and `peersNote(found)`, the
 *   line a bench prints about them.
 * - `Peer.push(ref, file, options)` / `Peer.pull(ref, outDir, options)` → the command line to
 *   measure; `options.plainHttp` (default true) and `options.insecure`.
 *
 * @module
 */

/** How a peer talks to the registry. */
export interface PeerOptions {
  plainHttp?: boolean;
  insecure?: boolean;
}

/** One built peer and the command lines of its push and pull. */
export interface Peer {
  name: "peer-oras" | "peer-crane";
  version: string;
  push(ref: string, file: string, options?: PeerOptions): string[];
  pull(ref: string, outDir: string, options?: PeerOptions): string[];
}

const NAMES = ["peer-oras", "peer-crane"] as const;

function binDir(): string {
  const env = (name: string) => Deno.env.get(name) ?? "";
  if (env("OCIPART_PEERS_BIN")) return env("OCIPART_PEERS_BIN");
  const cache = env("XDG_CACHE_HOME") || `${env("HOME")}/.cache`;
  return `${cache}/ocipart-peers`;
}

function flags(name: Peer["name"], options: PeerOptions = {}): string[] {
  const plainHttp = options.plainHttp ?? true;
  // peer-crane has one switch for both: plain HTTP, or HTTPS without verification.
  if (name === "peer-crane") return plainHttp || options.insecure ? ["-insecure"] : [];
  return [`-plain-http=${plainHttp}`, ...(options.insecure ? ["-insecure"] : [])];
}

async function versionOf(bin: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(bin, { args: ["version"], stdout: "piped", stderr: "null" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

/** The peers built on this machine. */
export async function findPeers(): Promise<Peer[]> {
  const dir = binDir();
  const found: Peer[] = [];
  for (const name of NAMES) {
    const bin = `${dir}/${name}`;
    const version = await versionOf(bin);
    if (version === undefined) continue;
    found.push({
      name,
      version,
      push: (ref, file, options) => [bin, "push", ...flags(name, options), ref, file],
      pull: (ref, outDir, options) => [bin, "pull", ...flags(name, options), ref, outDir],
    });
  }
  return found;
}

/** What a bench prints about the peers it found or skipped. */
export function peersNote(found: Peer[]): string {
  const missing = NAMES.filter((name) => !found.some((peer) => peer.name === name));
  const lines = found.map((peer) => `# ${peer.version}`);
  if (missing.length > 0) {
    lines.push(
      `# skipped ${missing.join(", ")}: not built (set OCIPART_PEERS_BIN to their directory; ` +
        "docs/performance.md says how to build them)",
    );
  }
  return lines.join("\n");
}
