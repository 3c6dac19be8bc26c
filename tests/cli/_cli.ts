/**
 * Runs `cli.ts` as a child process under narrowed permissions, as a user would run it.
 *
 * The child gets `--allow-net=127.0.0.1`, read/write limited to the test's temp dir, and only the
 * environment variables the docker configuration lookup needs. It never runs with `-A`.
 *
 * @module
 */
import type { FaultRule } from "../fixtures/fault_rules.ts";
import { fileURLToPath } from "node:url";

/** The directory of `cli.ts`. */
export const PROJECT_ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/** The result of one CLI run. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** How a CLI run is set up. */
export interface CliOptions {
  /** The only directory the child may read and write (also its HOME). */
  tmp: string;
  /** Extra environment (e.g. `DOCKER_CONFIG`); the child's environment is otherwise cleared. */
  env?: Record<string, string>;
  /** Text written to standard input (then closed); otherwise stdin is empty. */
  stdin?: string;
  /** Extra paths the child may read (e.g. a CA file outside `tmp`). */
  read?: string[];
  /** Extra hosts the child may connect to, besides `127.0.0.1` (e.g. `localhost`, `[::1]`). */
  net?: string[];
  /**
   * Programs the child may run: only docker credential helpers need this, and they also need
   * the whole environment readable, because `node:child_process` copies it into the helper.
   */
  run?: string[];
}

/** The proxy settings the CLI reads from its environment. */
export const PROXY_VARIABLES: readonly string[] = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
];

/** The variables that name CA certificates or where to find them (`src/cli/session/registry_trust.ts`). */
export const TRUST_VARIABLES: readonly string[] = [
  "SSL_CERT_FILE",
  "DENO_CERT",
  "OCIPART_CERTS_DIRS",
];

/** The permission flags of every CLI run: the narrowest set that works. */
export function permissionFlags(options: CliOptions): string[] {
  return [
    "--no-prompt",
    `--allow-net=${["127.0.0.1", ...(options.net ?? [])].join(",")}`,
    `--allow-read=${[options.tmp, ...(options.read ?? [])].join(",")}`,
    `--allow-write=${options.tmp}`,
    "--allow-sys=statfs",
    ...(options.run === undefined
      ? [`--allow-env=HOME,DOCKER_CONFIG,${[...PROXY_VARIABLES, ...TRUST_VARIABLES].join(",")}`]
      : ["--allow-env", `--allow-run=${options.run.join(",")}`]),
  ];
}

/** The full argv (`deno run … cli.ts …args`) of a CLI run. */
export function cliArgv(args: string[], options: CliOptions): string[] {
  return [Deno.execPath(), "run", ...permissionFlags(options), `${PROJECT_ROOT}cli.ts`, ...args];
}

/** The child's environment: nothing from the test's environment except what Deno itself needs. */
export function cliEnv(options: CliOptions): Record<string, string> {
  const env: Record<string, string> = { HOME: options.tmp, NO_COLOR: "1" };
  for (const name of ["PATH", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...denoDirEnv(), ...options.env };
}

/**
 * The cache this process runs from (its npm packages), for a child whose HOME is elsewhere:
 * `DENO_DIR`, else where Deno keeps its cache on Linux when it is unset.
 */
export function denoDirEnv(): { DENO_DIR: string } {
  const cache = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? ""}/.cache`;
  return { DENO_DIR: Deno.env.get("DENO_DIR") ?? `${cache}/deno` };
}

/** Spawns the CLI with piped stdio; the caller reads the streams and awaits `status`. */
export function spawnCli(args: string[], options: CliOptions): Deno.ChildProcess {
  const [program, ...rest] = cliArgv(args, options);
  const child = new Deno.Command(program, {
    args: rest,
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv(options),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return child;
}

/** Runs the CLI to completion. */
export function runCli(args: string[], options: CliOptions): Promise<CliResult> {
  return completed(spawnCli(args, options), options.stdin);
}

/** Writes `stdin` (if any) to a spawned child, closes it, and collects the child's output. */
export async function completed(child: Deno.ChildProcess, stdin?: string): Promise<CliResult> {
  const writer = child.stdin.getWriter();
  if (stdin !== undefined) await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Splits a stream into lines as they arrive. */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffered = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    buffered += text;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
    }
  }
  if (buffered !== "") yield buffered;
}

/** What {@linkcode stopOnceMoving} saw. */
export interface StoppedRun {
  /** The exit status. */
  status: Deno.CommandStatus;
  /** Milliseconds from the signal to the exit; NaN when the transfer never got going. */
  stoppedAfterMs: number;
  /** The stderr lines that are not JSON progress records. */
  text: string[];
}

/**
 * Sends `signal` to a CLI run with `--progress json` once its progress says `bytes` went over
 * the wire, and waits for it to exit.
 */
export async function stopOnceMoving(
  child: Deno.ChildProcess,
  signal: Deno.Signal,
  bytes: number,
): Promise<StoppedRun> {
  await child.stdin.close();
  const stdout = new Response(child.stdout).text();
  let sentAt = NaN;
  const text: string[] = [];
  for await (const line of lines(child.stderr)) {
    if (!line.startsWith("{")) {
      text.push(line);
      continue;
    }
    const record = JSON.parse(line) as { wireBytes: number };
    if (Number.isNaN(sentAt) && record.wireBytes >= bytes) {
      sentAt = performance.now();
      child.kill(signal);
    }
  }
  const status = await child.status;
  const stoppedAfterMs = performance.now() - sentAt;
  await stdout;
  return { status, stoppedAfterMs, text };
}

/**
 * The last two stderr lines but the cause codes: the library's error and the explanation of the
 * exit code.
 */
export function failureLines(stderr: string): [string, string] {
  const all = stderr.trimEnd().split("\n").filter((line) => !/^ocipart \w+: cause: /.test(line));
  return [all.at(-2) ?? "", all.at(-1) ?? ""];
}

/**
 * The hint of a failure report (`ocipart <command>: hint: …`) and the indented lines after it
 * (the command to run), or `[]`.
 */
export function hintLines(stderr: string): string[] {
  const all = stderr.trimEnd().split("\n");
  const start = all.findIndex((line) => /^ocipart \w+: hint: /.test(line));
  if (start < 0) return [];
  const end = all.findIndex((line, i) => i > start && !line.startsWith("  "));
  return all.slice(start, end < 0 ? undefined : end);
}

/** The cause codes the CLI printed (`ocipart <command>: cause: A, B`), or `[]`. */
export function causeLine(stderr: string): string[] {
  const line = stderr.split("\n").find((l) => /^ocipart \w+: cause: /.test(l));
  return line === undefined ? [] : line.replace(/^ocipart \w+: cause: /, "").split(", ");
}

/** A listener that accepts connections and never says a word: a registry that never answers. */
export function startSilentServer(): { port: number } & AsyncDisposable {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  return {
    port: listener.addr.port,
    [Symbol.asyncDispose]: async () => {
      listener.close();
      await accepting.catch(() => {});
      for (const conn of held) conn.close();
    },
  };
}

/**
 * Parts 0 and 1 of a pull arrive whole through `proxy`; from part 2 on every blob GET sends a
 * few bytes and then nothing, so the pull is mid-transfer for as long as a test needs.
 */
export function stallFromThirdPart(proxy: { fault(rule: FaultRule): void }): void {
  proxy.fault({
    method: "GET",
    path: /\/blobs\/sha256:/,
    nth: 3,
    times: Infinity,
    stallAfter: 1000,
  });
}
