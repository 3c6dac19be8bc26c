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

/** The user name a helper answers when its secret is an identity token. */
export const IDENTITY_TOKEN_USERNAME = "<token>";

const OUTPUT_LIMIT = 64 * 1024;
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
 * `docker-credential-<name> erase` (with the server URL on stdin). Erasing what the helper does
 * not hold succeeds.
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
): Promise<void> {
  const verb = credential === undefined ? "erase" : "store";
  const input = credential === undefined ? serverUrl : JSON.stringify({
    ServerURL: serverUrl,
    Username: credential.username,
    Secret: credential.password,
  });
  const { code, output } = await execHelper(name, verb, input, options);
  if (code === 0) return;
  if (verb === "erase" && /credentials not found/i.test(output)) return;
  throw new CredentialError(`credential helper docker-credential-${name} ${verb} failed`);
}

/** Runs the helper with `verb`, `input` on stdin; resolves to its exit code and stdout. */
function execHelper(
  name: string,
  verb: "get" | "store" | "erase",
  input: string,
  options: CredentialHelperOptions,
): Promise<{ code: number | null; output: string }> {
  if (!NAME.test(name)) {
    return Promise.reject(new CredentialError("credential helper name is invalid"));
  }
  options.signal?.throwIfAborted();
  const program = `docker-credential-${name}`;
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(program, [verb], { stdio: ["pipe", "pipe", "pipe"], windowsHide: true });
    } catch (err) {
      // A sandbox refusal (no run or env permission) is thrown synchronously; it is permanent.
      reject(new CredentialError(`credential helper ${program} could not run`, { cause: err }));
      return;
    }
    let settled = false;
    const stdout: Uint8Array[] = [];
    let stdoutBytes = 0;
    const finish = (err: unknown, result?: { code: number | null; output: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      if (err === undefined) resolve(result!);
      else reject(err);
    };
    const onAbort = () => finish(options.signal?.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(
      () => finish(new CredentialError(`credential helper ${program} did not answer in time`)),
      timeoutMs,
    );
    child.on("error", (err: NodeJS.ErrnoException) => {
      const what = err.code === "ENOENT" ? "not found" : "could not run";
      finish(new CredentialError(`credential helper ${program} ${what}`, { cause: err }));
    });
    child.stdout.on("data", (chunk: Uint8Array) => {
      if (stdoutBytes + chunk.byteLength > OUTPUT_LIMIT) {
        finish(new CredentialError(`credential helper ${program} answer is too large`));
        return;
      }
      stdout.push(chunk);
      stdoutBytes += chunk.byteLength;
    });
    // Drained and dropped: a helper's diagnostics may echo secrets.
    child.stderr.on("data", () => {});
    child.stdin.on("error", () => {}); // a helper that exits without reading stdin
    child.on("close", (code: number | null) => {
      finish(undefined, {
        code,
        output: new TextDecoder().decode(concatBytes(stdout, stdoutBytes)),
      });
    });
    child.stdin.end(input);
  });
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
