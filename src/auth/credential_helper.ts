/**
 * The docker credential-helper protocol: `docker-credential-<name> get|store|erase`, with the
 * server URL or a JSON credential on stdin, and a JSON credential on stdout for `get`.
 *
 * @module
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { CredentialError } from "../errors/kinds.ts";
import type { Credential } from "./credential.ts";
import { concatBytes } from "../registry/bytes.ts";
import process from "node:process";

/** The user name a helper answers when its secret is an identity token. */
export const IDENTITY_TOKEN_USERNAME = "<token>";

/** The most a helper may write to stdout, and to stderr. */
const OUTPUT_LIMIT = 64 * 1024;
/** How long a helper that has exited may keep its output open before it is cut. */
const CLOSE_GRACE_MS = 500;
/** Helpers get a process group of their own where there are process groups. */
const OWN_GROUP = process.platform !== "win32";
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Options of {@linkcode runCredentialHelper}. */
export interface CredentialHelperOptions {
  /** Stops the helper process and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Kills a helper that has not answered after this many milliseconds (default 60 000). */
  timeoutMs?: number;
}

/**
 * Runs `docker-credential-<name> get` with `serverUrl` on stdin and returns its credential.
 * A helper that answers "credentials not found" yields `{}` (anonymous). The helper's output
 * never enters an error message; its name does (a helper name is not a secret).
 *
 * @throws {CredentialError} The helper is missing, fails, answers something unreadable, or
 * answers an identity token (user name `<token>`), which is refused.
 *
 * @example Asking the `pass` helper
 * ```ts ignore
 * import { runCredentialHelper } from "./credential_helper.ts";
 * const credential = await runCredentialHelper("pass", "registry.example");
 * ```
 */
export async function runCredentialHelper(
  name: string,
  serverUrl: string,
  options: CredentialHelperOptions = {},
): Promise<Credential> {
  const { code, output } = await execHelper(name, "get", serverUrl, options);
  if (code !== 0) {
    if (/credentials not found/i.test(output)) return {};
    throw new CredentialError(`credential helper docker-credential-${name} failed`);
  }
  return parseHelperAnswer(output);
}

/**
 * Runs `docker-credential-<name> store` (with `{ServerURL, Username, Secret}` on stdin) or
 * `docker-credential-<name> erase` (with the server URL on stdin). Resolves to `true` when the
 * helper changed something, `false` when an erase found nothing to erase (which succeeds).
 *
 * @throws {CredentialError} The helper is missing, cannot run, or fails.
 *
 * @example Saving with the `pass` helper
 * ```ts ignore
 * import { changeHelperCredential } from "./credential_helper.ts";
 * await changeHelperCredential("pass", "registry.example", { username: "ci", password: "s" });
 * await changeHelperCredential("pass", "registry.example", undefined); // erase
 * ```
 */
export async function changeHelperCredential(
  name: string,
  serverUrl: string,
  credential: { username: string; password: string } | undefined,
  options: CredentialHelperOptions = {},
): Promise<boolean> {
  const verb = credential === undefined ? "erase" : "store";
  const input = credential === undefined ? serverUrl : JSON.stringify({
    ServerURL: serverUrl,
    Username: credential.username,
    Secret: credential.password,
  });
  const { code, output } = await execHelper(name, verb, input, options);
  if (code === 0) return true;
  if (verb === "erase" && /credentials not found/i.test(output)) return false;
  throw new CredentialError(`credential helper docker-credential-${name} ${verb} failed`);
}

/** What a helper run ended with: its exit code (null when a signal ended it) and stdout. */
interface HelperRun {
  code: number | null;
  output: string;
}

/** Runs the helper with `verb`, `input` on stdin; resolves to its exit code and stdout. */
function execHelper(
  name: string,
  verb: "get" | "store" | "erase",
  input: string,
  options: CredentialHelperOptions,
): Promise<HelperRun> {
  if (!NAME.test(name)) {
    return Promise.reject(new CredentialError("credential helper name is invalid"));
  }
  options.signal?.throwIfAborted();
  const program = `docker-credential-${name}`;
  let child: ChildProcessWithoutNullStreams;
  try {
    // Its own process group (POSIX), so that stopping it also reaches what it started.
    child = spawn(program, [verb], {
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
      detached: OWN_GROUP,
    });
  } catch (err) {
    // A sandbox refusal (no env permission) is thrown synchronously; it is permanent.
    return Promise.reject(spawnFailure(program, err));
  }
  return superviseHelper(child, program, input, options);
}

/**
 * Feeds `input` to a started helper and collects its answer within bounds: the signal and the
 * time limit stop it, at most {@linkcode OUTPUT_LIMIT} bytes on each of stdout and stderr, and
 * a helper that has exited gets {@linkcode CLOSE_GRACE_MS} for its output to close (a child it
 * left behind may hold it open). Every way out but a clean close stops the helper's group.
 */
function superviseHelper(
  child: ChildProcessWithoutNullStreams,
  program: string,
  input: string,
  options: CredentialHelperOptions,
): Promise<HelperRun> {
  return new Promise((resolve, reject) => {
    const stdout: Uint8Array[] = [];
    let stdoutBytes = 0;
    let stderrBytes = 0;
    let grace: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    const finish = (err: unknown, closed = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      options.signal?.removeEventListener("abort", onAbort);
      if (!closed) stopHelper(child);
      if (err !== undefined) return reject(err);
      const output = new TextDecoder().decode(concatBytes(stdout, stdoutBytes));
      resolve({ code: child.exitCode, output });
    };
    const tooMuch = () =>
      finish(new CredentialError(`credential helper ${program} wrote too much`));
    const onAbort = () => finish(options.signal?.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(
      () => finish(new CredentialError(`credential helper ${program} did not answer in time`)),
      options.timeoutMs ?? 60_000,
    );
    child.on("error", (err: unknown) => finish(spawnFailure(program, err)));
    child.stdout.on("data", (chunk: Uint8Array) => {
      stdoutBytes += chunk.byteLength;
      if (stdoutBytes > OUTPUT_LIMIT) return tooMuch();
      stdout.push(chunk);
    });
    // Counted and dropped: a helper's diagnostics may echo secrets.
    child.stderr.on("data", (chunk: Uint8Array) => {
      stderrBytes += chunk.byteLength;
      if (stderrBytes > OUTPUT_LIMIT) tooMuch();
    });
    child.stdin.on("error", () => {}); // a helper that exits without reading stdin
    child.on("exit", () => {
      if (!settled) grace = setTimeout(() => finish(undefined), CLOSE_GRACE_MS);
    });
    child.on("close", () => finish(undefined, true));
    child.stdin.end(input);
  });
}

/**
 * Stops a helper that has not finished cleanly: SIGKILL to its process group where the sandbox
 * lets this process signal other processes (a narrowed `--allow-run` does not), else to the
 * helper alone; then drops its pipes, so nothing more is read and nothing keeps this process
 * alive, even while a child of the helper still holds them.
 *
 * Under `--allow-run=docker-credential-<name>` Deno has no way to reach the group: `Deno.kill`
 * and `process.kill` need the whole flag for any pid, and a child's own `kill()` (or a spawn's
 * abort signal) reaches its pid alone. So the helper's children outlive it there.
 */
function stopHelper(child: ChildProcessWithoutNullStreams): void {
  if (OWN_GROUP && child.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is gone, or signalling it is not permitted.
    }
  }
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGKILL");
  }
  child.stdin.destroy();
  child.stdout.destroy();
  child.stderr.destroy();
}

/**
 * The error of a helper that could not start, saying what to do: install it, or grant the
 * permissions a sandboxed runtime needs to run it (the helper inherits the whole environment).
 */
function spawnFailure(program: string, err: unknown): CredentialError {
  const name = (err as { name?: unknown })?.name;
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : "";
  let what: string;
  if (code === "ENOENT") {
    what = "not found (is it installed and on PATH?)";
  } else if (name === "NotCapable" && /\benv access\b/.test(message)) {
    what = `could not run: it needs the whole environment (grant --allow-env, and ` +
      `--allow-run=${program})`;
  } else if (name === "NotCapable") {
    what = `is not permitted to run (grant it with --allow-run=${program})`;
  } else {
    what = "could not run";
  }
  return new CredentialError(`credential helper ${program} ${what}`, { cause: err });
}

function parseHelperAnswer(text: string): Credential {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CredentialError("credential helper answer could not be read");
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw new CredentialError("credential helper answer could not be read");
  }
  const fields = parsed as Record<string, unknown>;
  const username = typeof fields.Username === "string" ? fields.Username : "";
  const secret = typeof fields.Secret === "string" ? fields.Secret : "";
  if (username === IDENTITY_TOKEN_USERNAME) {
    throw new CredentialError("identity tokens are not supported; log in with a password or token");
  }
  if (username === "" && secret === "") return {};
  return { username, password: secret };
}
