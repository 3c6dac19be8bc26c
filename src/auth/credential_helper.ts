/**
 * The docker credential-helper protocol: `docker-credential-<name> get`, the server URL on
 * stdin, a JSON credential on stdout.
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
 * never enters an error message.
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
export function runCredentialHelper(
  name: string,
  serverUrl: string,
  options: CredentialHelperOptions = {},
): Promise<Credential> {
  if (!NAME.test(name)) {
    return Promise.reject(new CredentialError("credential helper name is invalid"));
  }
  options.signal?.throwIfAborted();
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise<Credential>((resolve, reject) => {
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(`docker-credential-${name}`, ["get"], {
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
      });
    } catch (err) {
      // A sandbox refusal (no run or env permission) is thrown synchronously; it is permanent.
      reject(new CredentialError("credential helper could not run", { cause: err }));
      return;
    }
    let settled = false;
    const stdout: Uint8Array[] = [];
    let stdoutBytes = 0;
    const finish = (err: unknown, credential?: Credential) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      if (err === undefined) resolve(credential!);
      else reject(err);
    };
    const onAbort = () => finish(options.signal?.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(
      () => finish(new CredentialError("credential helper did not answer in time")),
      timeoutMs,
    );
    child.on("error", (err: NodeJS.ErrnoException) => {
      finish(
        new CredentialError(
          err.code === "ENOENT" ? "credential helper not found" : "credential helper could not run",
          { cause: err },
        ),
      );
    });
    child.stdout.on("data", (chunk: Uint8Array) => {
      if (stdoutBytes + chunk.byteLength > OUTPUT_LIMIT) {
        finish(new CredentialError("credential helper answer is too large"));
        return;
      }
      stdout.push(chunk);
      stdoutBytes += chunk.byteLength;
    });
    // Drained and dropped: a helper's diagnostics may echo secrets.
    child.stderr.on("data", () => {});
    child.stdin.on("error", () => {}); // a helper that exits without reading stdin
    child.on("close", (code: number | null) => {
      const text = new TextDecoder().decode(concatBytes(stdout, stdoutBytes));
      if (code !== 0) {
        if (/credentials not found/i.test(text)) finish(undefined, {});
        else finish(new CredentialError("credential helper failed"));
        return;
      }
      try {
        finish(undefined, parseHelperAnswer(text));
      } catch (err) {
        finish(err);
      }
    });
    child.stdin.end(serverUrl);
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
