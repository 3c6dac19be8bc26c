/**
 * The whole-run leak scan's own machinery: the error observer collects what `src/` builds (and
 * nothing a test builds itself), and the report finds every rule break in what was collected.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { formatLeakReport, scanLeakDir } from "./leak_report.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("error observer: collects the library's errors once each, not those a test builds", async () => {
  await using dir = await tempDir("ocipart-observer-");
  const script = `${dir.path}/child.ts`;
  await Deno.writeTextFile(
    script,
    `import "${new URL("tests/fixtures/error_observer.ts", ROOT)}";
import { OciError } from "${new URL("src/errors/oci_error.ts", ROOT)}";
import { parseReference } from "${new URL("src/registry/reference.ts", ROOT)}";
for (let i = 0; i < 3; i++) {
  try { parseReference("Upper/Case:v1"); } catch { /* collected */ }
}
new OciError("built by a test: http://127.0.0.1:1/v2/x?token=eyJhbGciOiJIUzI1NiJ9");
`,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", script],
    env: { OCIPART_LEAK_SCAN_DIR: `${dir.path}/scan` },
    stdout: "null",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const report = await scanLeakDir(`${dir.path}/scan`);
  assertEquals(report.isolates, 1);
  assertEquals(report.errorsObserved, 4, "three library errors and the test's own");
  assertEquals(report.strings, 1, "one distinct library message; the test's error is not ours");
  assertEquals(report.hits, []);
  assert(formatLeakReport(report).endsWith(": 0 hits"));
});

Deno.test("leak report: finds each kind of leak and redacts planted secrets", async () => {
  await using dir = await tempDir("ocipart-leak-report-");
  const leaky = [
    "HttpStatusError: GET blob: http://registry.example/v2/a/blobs/x",
    "NetworkError: connect 127.0.0.1:5000 refused",
    "NetworkError: connect [::1]:5000 refused",
    "LocationError: POST blob upload: ?_state=abc",
    "DigestMismatchError: sha256:" + "a".repeat(64),
    "AuthChallengeError: Bearer abcdefghijkl",
    "CredentialError: token eyJhbGciOiJFUzI1NiJ9.x",
    'AuthChallengeError: realm="https://auth.example/token"',
    "CredentialError: password s3cret-pass refused",
    "HttpStatusError: registry.example:5000 said no",
  ];
  const clean = [
    "NotFoundError: not found: part 4: PUT blob upload: status 404",
    "RetriesExhaustedError: part 5: upload: failed after 4 attempts",
  ];
  const lines = [
    ...[...leaky, ...clean].map((text) =>
      JSON.stringify({ kind: "error", text, where: "src/x.ts:1" })
    ),
    JSON.stringify({ kind: "count", errors: 40 }),
    JSON.stringify({ source: "storm trial", text: "NetworkError: localhost refused" }),
    "{cut by a kill",
  ];
  await Deno.writeTextFile(`${dir.path}/errors-1-a.jsonl`, lines.join("\n") + "\n");
  const report = await scanLeakDir(dir.path);
  assertEquals(report.strings, leaky.length + clean.length + 1);
  assertEquals(report.scenarioStrings, 1);
  assertEquals(report.errorsObserved, 40);
  assertEquals(report.hits.length, leaky.length + 1, JSON.stringify(report.hits, null, 1));
  for (const text of clean) assert(!report.hits.some((h) => h.text === text), text);
  assert(report.hits.every((h) => !h.text.includes("s3cret")), "planted secrets are redacted");
});
