/**
 * Credential helpers never outlive the call that ran them: a stop (signal or time limit) kills
 * the helper and what it started, within a second; a helper that exits but leaves a child
 * holding its output open still answers; endless output is cut and its writer stopped.
 * Real helper programs: shell scripts on PATH.
 */
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { changeHelperCredential, runCredentialHelper } from "../../src/auth/credential_helper.ts";
import { CredentialError } from "../../src/errors/kinds.ts";
import { withPathEntry } from "../fixtures/path_env.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { HELPER_OS, killAll, waitForText, waitGone, writeHelper } from "./_helper_scripts.ts";

/** A helper that starts a long child and waits for it, recording both pids. */
function hangingHelper(pidFile: string): string {
  return `cat > /dev/null
sleep 100 &
echo "$$ $!" > '${pidFile}'
wait
`;
}

const CREDENTIAL = { username: "ci", password: "helper-pass" };

Deno.test({
  name: "a stopped helper call (signal or time limit) ends within a second, taking its children",
  ignore: !HELPER_OS,
}, async () => {
  await using tmp = await tempDir();
  const pidFile = `${tmp.path}/pids`;
  await writeHelper(tmp.path, "hang", hangingHelper(pidFile));
  const calls: Record<string, (signal: AbortSignal) => Promise<unknown>> = {
    get: (signal) => runCredentialHelper("hang", "r.example", { signal }),
    store: (signal) => changeHelperCredential("hang", "r.example", CREDENTIAL, { signal }),
    erase: (signal) => changeHelperCredential("hang", "r.example", undefined, { signal }),
    "time limit": () => runCredentialHelper("hang", "r.example", { timeoutMs: 1_000 }),
  };
  await withPathEntry(tmp.path, async () => {
    for (const [what, call] of Object.entries(calls)) {
      await Deno.remove(pidFile).catch(() => {});
      const controller = new AbortController();
      const settled = call(controller.signal).then(() => "resolved", (err) => err);
      const pids = (await waitForText(pidFile)).trim().split(" ").map(Number);
      try {
        const stoppedAt = performance.now();
        controller.abort(new DOMException("stop", "AbortError"));
        const outcome = await settled;
        const elapsed = performance.now() - stoppedAt;
        if (what === "time limit") {
          assert(
            outcome instanceof CredentialError && /did not answer in time/.test(outcome.message),
          );
        } else {
          assert(
            outcome instanceof DOMException && outcome.message === "stop",
            `${what}: ${outcome}`,
          );
          assert(elapsed < 1_000, `${what}: stopped after ${elapsed.toFixed(0)} ms`);
        }
        assertEquals(await waitGone(pids), [], `${what}: the helper and its child are gone`);
      } finally {
        killAll(pids);
      }
    }
  });
});

Deno.test({
  name: "a helper that exits but leaves a child holding its output open still answers",
  ignore: !HELPER_OS,
}, async () => {
  await using tmp = await tempDir();
  const pidFile = `${tmp.path}/pids`;
  await writeHelper(
    tmp.path,
    "lingering",
    `cat > /dev/null
printf '{"Username":"ci","Secret":"helper-pass"}'
sleep 100 &
echo "$!" > '${pidFile}'
exit 0
`,
  );
  await withPathEntry(tmp.path, async () => {
    const started = performance.now();
    const credential = await runCredentialHelper("lingering", "r.example", { timeoutMs: 20_000 });
    const elapsed = performance.now() - started;
    const pids = (await waitForText(pidFile)).trim().split(" ").map(Number);
    try {
      assertEquals(credential, CREDENTIAL);
      assert(elapsed < 5_000, `answered after ${elapsed.toFixed(0)} ms`);
      assertEquals(await waitGone(pids), [], "the child holding the output is stopped");
    } finally {
      killAll(pids);
    }
  });
});

Deno.test({
  name: "endless output on stdout or stderr is cut at once and its writer stopped",
  ignore: !HELPER_OS,
}, async () => {
  await using tmp = await tempDir();
  const pidFile = `${tmp.path}/pids`;
  await writeHelper(
    tmp.path,
    "endless",
    `cat > /dev/null\nyes garbage &\necho "$!" > '${pidFile}'\nwait\n`,
  );
  await writeHelper(
    tmp.path,
    "chatty",
    `cat > /dev/null\nyes helper-pass >&2 &\necho "$!" > '${pidFile}'\nwait\n`,
  );
  await withPathEntry(tmp.path, async () => {
    for (const name of ["endless", "chatty"]) {
      await Deno.remove(pidFile).catch(() => {});
      const started = performance.now();
      await assertRejects(runCredentialHelper(name, "r.example", { timeoutMs: 20_000 }), (err) => {
        assert(err instanceof CredentialError, String(err));
        assert(
          /docker-credential-\w+ (wrote too much|answer is too large)$/.test(err.message),
          err.message,
        );
        assert(!err.message.includes("helper-pass") && !err.message.includes("garbage"));
        return true;
      });
      const elapsed = performance.now() - started;
      assert(elapsed < 5_000, `${name}: refused after ${elapsed.toFixed(0)} ms`);
      const pids = (await waitForText(pidFile)).trim().split(" ").map(Number);
      try {
        assertEquals(await waitGone(pids), [], `${name}: the writer is stopped`);
      } finally {
        killAll(pids);
      }
    }
  });
});
