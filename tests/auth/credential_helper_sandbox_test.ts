import { assertEquals } from "../fixtures/assert.ts";

// In a sandbox without the env permission node:child_process cannot copy the environment, and
// the spawn throws synchronously. That refusal is permanent: it must be a terminal
// CredentialError, not a transport failure that the retry loop repeats.
Deno.test("credential helper: a sandbox refusal is a terminal CredentialError", async () => {
  const script = `
    import { runCredentialHelper } from ${
    JSON.stringify(import.meta.resolve("../../src/auth/credential_helper.ts"))
  };
    import { retryable } from ${JSON.stringify(import.meta.resolve("../../src/errors/mod.ts"))};
    try {
      await runCredentialHelper("sandboxed", "127.0.0.1:5000");
      console.log(JSON.stringify({ ok: true }));
    } catch (err) {
      console.log(JSON.stringify({ code: err.code, message: err.message, retry: retryable(err).retryable }));
    }
  `;
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-read",
      "--allow-env=HOME",
      "--allow-run=docker-credential-sandboxed",
      "-",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = output.stdin.getWriter();
  await writer.write(new TextEncoder().encode(script));
  await writer.close();
  const result = await output.output();
  const line = new TextDecoder().decode(result.stdout).trim().split("\n").at(-1) ?? "";
  assertEquals(JSON.parse(line), {
    code: "ERR_CREDENTIAL",
    message: "credentials: credential helper docker-credential-sandboxed could not run: " +
      "it needs the whole environment (grant --allow-env, and " +
      "--allow-run=docker-credential-sandboxed)",
    retry: false,
  });
});
