/**
 * Local refusals as the CLI user reads them: each named by what refused (the runtime's
 * permission by the flag to grant, the system by its own errno code), never called a network
 * permission, and never retried.
 */
import { assert, assertStrictEquals } from "../fixtures/assert.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { causeLine, cliEnv, failureLines, PROJECT_ROOT, runCli } from "../cli/_cli.ts";

// A failure that is not retried ends in a fraction of this; four attempts with backoff do not.
const NO_RETRY_BOUND_MS = 8_000;

/** The CLI with the permissions the README documents (every path readable and writable). */
async function documentedCli(args: string[], tmp: string) {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys=statfs",
      `${PROJECT_ROOT}cli.ts`,
      ...args,
    ],
    cwd: PROJECT_ROOT,
    clearEnv: true,
    env: cliEnv({ tmp }),
    stdin: "null",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  return { code: out.code, stderr, ms: performance.now() - started };
}

/** A directory nobody may create files in, or undefined where this machine cannot make one. */
async function lockedDirectory(parent: string): Promise<string | undefined> {
  const dir = `${parent}/locked`;
  await Deno.mkdir(dir);
  await Deno.chmod(dir, 0o555);
  if (await refusesWrites(dir)) return dir;
  // As root, modes do not bind: the immutable attribute does (EPERM).
  const chattr = await new Deno.Command("chattr", { args: ["+i", dir], stderr: "null" })
    .output().catch(() => undefined);
  if (chattr?.success && await refusesWrites(dir)) return dir;
  return undefined;
}

async function refusesWrites(dir: string): Promise<boolean> {
  try {
    await Deno.writeTextFile(`${dir}/probe`, "");
    await Deno.remove(`${dir}/probe`);
    return false;
  } catch {
    return true;
  }
}

async function unlock(dir: string): Promise<void> {
  await new Deno.Command("chattr", { args: ["-i", dir], stderr: "null" }).output()
    .catch(() => {});
  await Deno.chmod(dir, 0o755);
}

/**
 * Whether this machine can make a directory its own user may not write in: modes bind a user
 * other than root; root needs the immutable attribute, which not every file system has.
 */
async function canLockDirectory(): Promise<boolean> {
  await using tmp = await tempDir();
  const locked = await lockedDirectory(tmp.path);
  if (locked === undefined) return false;
  await unlock(locked);
  return true;
}

const LOCKABLE = await canLockDirectory();

/** A pushed 300 KiB artifact to pull in the tests below. */
async function pushedReference(host: string, tmp: string): Promise<string> {
  const source = `${tmp}/weights.bin`;
  await writePatternFile(source, 300 * 1024);
  const reference = `${host}/local/cause:v1`;
  const push = await runCli(["push", "--plain-http", reference, source], { tmp });
  assertStrictEquals(push.code, 0, push.stderr);
  return reference;
}

registryTest(
  "pull into /proc: the refusal's own name, no retry",
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const reference = await pushedReference(registry.host, tmp.path);

    // Deno lets nothing write under /proc without --allow-all, whatever --allow-write says.
    const proc = await documentedCli(
      ["pull", "--plain-http", "--progress", "none", reference, "/proc/x"],
      tmp.path,
    );
    assertStrictEquals(proc.code, 1, proc.stderr);
    assertStrictEquals(
      failureLines(proc.stderr)[0],
      "ocipart pull: pull destination: partial file cannot be opened (/proc/x)",
    );
    assertStrictEquals(causeLine(proc.stderr).join(", "), "ALL_PERMISSION", proc.stderr);
    assert(!/attempts/.test(proc.stderr) && proc.ms < NO_RETRY_BOUND_MS, proc.stderr);
  },
);

// Ignored, and so reported, where no directory can be locked (root on a file system without the
// immutable attribute).
registryTest(
  "pull into a locked directory: the system's errno, no retry",
  { ignore: !LOCKABLE },
  async () => {
    await using registry = await startRegistry();
    await using tmp = await tempDir();
    const reference = await pushedReference(registry.host, tmp.path);
    const locked = await lockedDirectory(tmp.path);
    if (locked === undefined) throw new Error("the directory could be locked before, not now");
    try {
      const refused = await documentedCli(
        ["pull", "--plain-http", "--progress", "none", reference, `${locked}/out.bin`],
        tmp.path,
      );
      assertStrictEquals(refused.code, 1, refused.stderr);
      const causes = causeLine(refused.stderr);
      assert(causes.length === 1 && ["EACCES", "EPERM"].includes(causes[0]), refused.stderr);
      assert(!/attempts/.test(refused.stderr) && refused.ms < NO_RETRY_BOUND_MS, refused.stderr);
    } finally {
      await unlock(locked);
    }
  },
);

registryTest("a credential helper without --allow-run: RUN_PERMISSION, at once", {
  needs: ["htpasswd"],
}, async () => {
  await using registry = await startRegistry({ htpasswd: { carol: "from-helper" } });
  await using tmp = await tempDir();
  const source = `${tmp.path}/weights.bin`;
  await writePatternFile(source, 1024);
  const bin = `${tmp.path}/bin`;
  await Deno.mkdir(bin);
  await Deno.writeTextFile(
    `${bin}/docker-credential-permtest`,
    `#!/bin/sh\nread server\necho '{"Username":"carol","Secret":"from-helper"}'\n`,
  );
  await Deno.chmod(`${bin}/docker-credential-permtest`, 0o755);
  const docker = `${tmp.path}/docker`;
  await Deno.mkdir(docker);
  await Deno.writeTextFile(
    `${docker}/config.json`,
    JSON.stringify({ credHelpers: { [registry.host]: "permtest" } }),
  );
  const env = { DOCKER_CONFIG: docker, PATH: `${bin}:${Deno.env.get("PATH") ?? ""}` };
  const started = performance.now();
  const run = await runCli(["push", "--plain-http", `${registry.host}/local/run:v1`, source], {
    tmp: tmp.path,
    env,
    run: ["true"],
  });
  assertStrictEquals(run.code, 1, run.stderr);
  assert(
    run.stderr.includes("credential helper docker-credential-permtest is not permitted to run"),
    run.stderr,
  );
  assertStrictEquals(causeLine(run.stderr).join(", "), "RUN_PERMISSION", run.stderr);
  assert(!/attempts/.test(run.stderr) && performance.now() - started < NO_RETRY_BOUND_MS);
});
