/**
 * Resume inside a part through a mirror: the continuation from the bytes an interrupted pull
 * wrote is a read like any other, so a mirror serves it; when the part then hashes wrong (the
 * mirror's bytes or the disk's may be at fault) it starts over from byte zero at the registry,
 * spending one attempt, and is never reported as a digest mismatch.
 */
import { copyFile } from "node:fs/promises";
import { assert, assertEquals } from "../fixtures/assert.ts";
import { patternBytes, sha256File } from "../fixtures/files.ts";
import type { FakeRegistry } from "../fixtures/fake_registry.ts";
import { DigestMismatchError, findError } from "../../src/errors/mod.ts";
import { PartedClient, toFile } from "../../src/parted/mod.ts";
import { overwrite, recordingClock } from "../parted/_helpers.ts";
import { type MirrorEnv, mirrorEnv, P, REPO, SIZE } from "./_setup.ts";
import { exists } from "../fixtures/expect.ts";

/** Bytes of part `index` of the test artifact (5 parts, the last one short). */
function partSize(index: number): number {
  return index < 4 ? P : SIZE - 4 * P;
}

/** A partial file holding the first `written[i]` bytes of each part, zeros after. */
async function interruptedPull(env: MirrorEnv, written: number[]) {
  const dest = `${env.dir.path}/out.bin`;
  const partial = `${dest}.parted-partial`;
  await copyFile(env.src, partial);
  for (const [index, keep] of written.entries()) {
    const size = partSize(index);
    if (keep < size) await overwrite(partial, index * P + keep, new Uint8Array(size - keep));
  }
  return { dest, partial };
}

/** The blob GETs a host answered: the part, the Range start asked for, and the status. */
function gets(host: FakeRegistry, env: MirrorEnv): [number, number, number | undefined][] {
  return host.log.filter((r) => r.method === "GET" && r.route === "blob").map((r) => [
    env.parts.findIndex((digest) => r.path.endsWith(digest)),
    Number(/^bytes=(\d+)-$/.exec(r.headers.range ?? "")?.[1] ?? 0),
    r.status,
  ]);
}

function mirrored(env: MirrorEnv, extra: Record<string, unknown> = {}) {
  return new PartedClient({
    plainHttp: true,
    mirrors: { [env.registry.host]: [{ location: env.mirror.host }] },
    ...extra,
  });
}

const WRITTEN = [P / 2 + 5, P, P, 100, SIZE - 4 * P];

Deno.test("mirror resume: the continuation of a part from its written bytes is served by the mirror", async () => {
  await using env = await mirrorEnv();
  const { dest, partial } = await interruptedPull(env, WRITTEN);
  using client = mirrored(env, { clock: recordingClock() });
  const result = await client.pull(
    `${env.registry.host}/${REPO}@${env.manifestDigest}`,
    toFile(dest),
  );
  assertEquals(await sha256File(dest), env.fileDigest);
  assert(!(await exists(partial)));
  assertEquals(env.registry.log.length, 0, "requests at the registry");
  const asked = gets(env.mirror, env).sort((a, b) => a[0] - b[0]);
  assertEquals(asked.map(([part, , status]) => [part, status]), [[0, 206], [3, 206]]);
  // The written bytes, less any zeros that ended them.
  for (const [part, start] of asked) {
    assert(start > WRITTEN[part] - 64 && start <= WRITTEN[part], `part ${part} from ${start}`);
  }
  assertEquals([result.partsResumed, result.partsContinued], [3, 2]);
});

Deno.test("mirror resume: a mirror's wrong bytes in a continuation start the part over at the registry, one attempt", async () => {
  await using env = await mirrorEnv();
  // Same length, other bytes: only the digest tells.
  env.mirror.store.tamperBlob(env.parts[0], patternBytes(P, 4321));
  const { dest } = await interruptedPull(env, WRITTEN);
  const clock = recordingClock();
  using client = mirrored(env, { clock });
  const ref = `${env.registry.host}/${REPO}@${env.manifestDigest}`;
  const result = await client.pull(ref, toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest);
  const atMirror = gets(env.mirror, env).filter(([part]) => part === 0);
  assertEquals(atMirror.length, 1, "the mirror is asked once for that part");
  assert(atMirror[0][1] > 0, "the mirror served the continuation");
  assertEquals(gets(env.registry, env), [[0, 0, 200]], "the part whole, from the registry");
  assertEquals(clock.waits.length, 1, "one attempt spent");
  assertEquals(result.partsContinued, 1, "part 0's written bytes were not kept");

  // With a budget of one attempt the pull fails, but not as a digest mismatch: the registry
  // never sent those bytes. The written bytes it could not trust are forgotten. The mirror
  // holds part 3's continuation unanswered, so the failure of part 0 ends the pull with part 3
  // still partly written (were part 3 to finish first, the rerun would find it whole).
  await Deno.remove(dest);
  env.mirror.log.length = env.registry.log.length = 0;
  await interruptedPull(env, WRITTEN);
  env.mirror.fault({ method: "GET", path: new RegExp(`/blobs/${env.parts[3]}$`), hang: true });
  using strict = mirrored(env, { retryPolicy: { maxAttempts: 1 } });
  const err = await strict.pull(ref, toFile(dest)).then(() => undefined, (e) => e);
  assert(err !== undefined, "the pull failed");
  assertEquals(findError(err, DigestMismatchError), undefined, `${err}`);
  assertEquals(gets(env.registry, env), [], "the registry was not asked");
  using direct = new PartedClient({ plainHttp: true, retryPolicy: { maxAttempts: 1 } });
  const rerun = await direct.pull(ref, toFile(dest));
  assertEquals(await sha256File(dest), env.fileDigest);
  assertEquals(gets(env.registry, env).filter(([part]) => part === 0), [[0, 0, 200]]);
  assertEquals(rerun.partsContinued, 1, "part 3 continued; part 0 fetched whole");
});
