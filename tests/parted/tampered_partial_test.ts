/**
 * Only what this pull wrote is committed: another program appending to, cutting or overwriting
 * `<dest>.parted-partial` during a pull never ends in a successful pull with a wrong file. The
 * tampering happens from the progress callback (synchronous, at a phase change), so it lands at a
 * known point of the pull without any timing.
 */
import { assert, assertEquals } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { LocalFileError } from "../../src/errors/kinds.ts";
import { DigestMismatchError } from "../../src/errors/sentinels.ts";
import { findError } from "../../src/errors/find_error.ts";
import { fromFile, PartedClient, type ProgressSnapshot, toFile } from "../../src/parted/mod.ts";
import { exists } from "../fixtures/expect.ts";

const P = 256 * 1024;
const SIZE = 5 * P + 3; // 6 parts

type Phase = ProgressSnapshot["phase"];

/** Another program's change to the partial file at `path`. */
type Tamper = (path: string) => void;

const append: Tamper = (path) => {
  using file = Deno.openSync(path, { append: true });
  file.writeSync(new Uint8Array(1000).fill(7));
};
const cut: Tamper = (path) => Deno.truncateSync(path, SIZE - 1000);
const zeroed: Tamper = (path) => {
  Deno.truncateSync(path, 0);
  Deno.truncateSync(path, SIZE);
};
const eightBytes: Tamper = (path) => {
  using file = Deno.openSync(path, { write: true });
  // In the first part: the one a hash that followed the parts as they landed had read long ago.
  file.seekSync(10, Deno.SeekMode.Start);
  file.writeSync(new Uint8Array(8).fill(0xee));
};

/** Pushes a file, pulls it while `tamper` changes the partial at `phase`; the pull's outcome. */
async function tamperedPull(tamper: Tamper, phase: Phase, verifyFileDigest: boolean) {
  await using registry = await startRegistry();
  await using dir = await tempDir();
  const src = `${dir.path}/src.bin`;
  const fileDigest = await writePatternFile(src, SIZE, 3);
  using client = new PartedClient({ plainHttp: true });
  const ref = `${registry.host}/tamper/x:v1`;
  await client.push(ref, fromFile(src), { partSize: P });
  const dest = `${dir.path}/dest.bin`;
  let tampered = false;
  const error = await client.pull(ref, toFile(dest), {
    workers: 1,
    verifyFileDigest,
    onProgress: (s) => {
      if (s.phase !== phase || tampered) return;
      tampered = true;
      tamper(`${dest}.parted-partial`);
    },
  }).then(() => undefined, (err) => err);
  assert(tampered, `the pull never reached ${phase}`);
  const committed = await exists(dest);
  return {
    error,
    committed,
    intact: committed && (await sha256File(dest)) === fileDigest,
  };
}

for (
  const [label, tamper] of [["appended to", append], ["cut short", cut]] as [string, Tamper][]
) {
  registryTest(
    `tampered partial: a partial ${label} before the commit is refused, not renamed`,
    async () => {
      const { error, committed } = await tamperedPull(tamper, "committing", false);
      const local = findError(error, LocalFileError);
      assert(local !== undefined, `expected a LocalFileError, got ${error}`);
      assert(/changed size during the pull/.test(local.message), local.message);
      assertEquals(committed, false);
    },
  );
}

for (
  const [label, tamper] of [
    ["zeroed (cut to 0 and regrown)", zeroed],
    ["overwritten in place (8 bytes)", eightBytes],
  ] as [string, Tamper][]
) {
  registryTest(
    `tampered partial: --verify-file-digest reads the disk: a partial ${label} is refused`,
    async () => {
      const { error, committed } = await tamperedPull(tamper, "verifying", true);
      assert(findError(error, DigestMismatchError), `expected a digest mismatch, got ${error}`);
      assertEquals(committed, false);
    },
  );
}

registryTest(
  "tampered partial: a pull nobody tampers with still commits the right file with --verify-file-digest",
  async () => {
    const { error, intact } = await tamperedPull(() => {}, "verifying", true);
    assertEquals(error, undefined);
    assert(intact);
  },
);
