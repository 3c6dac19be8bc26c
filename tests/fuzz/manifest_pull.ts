/**
 * Pulls through mutated manifests served by the strict fake registry and proves that nothing
 * reaches the destination unless the manifest was verified.
 *
 * API:
 * - `runManifestPullFuzz({ seed, cases }) → Promise<ManifestPullReport>` — pushes a 3-part
 *   artifact to a fresh fake registry, then per case serves a mutated manifest in place of the
 *   real one, half the cases "unverified" (the registry states the ORIGINAL digest; pulled by
 *   digest or by tag) and half "self-consistent" (the mutated bytes stored under their own
 *   digest and tag). Checks: an unverified manifest fails with `DigestMismatchError` before any
 *   blob request and leaves neither destination nor partial file; a self-consistent one either
 *   fails with a documented class (nothing at the destination) or pulls the right bytes.
 *   Every error is leak-scanned.
 *
 * @module
 */
import { DigestMismatchError, NotPartedArtifactError } from "../../src/errors/sentinels.ts";
import {
  InvalidManifestError,
  InvalidReferenceError,
  RetriesExhaustedError,
} from "../../src/errors/kinds.ts";
import { findError } from "../../src/errors/find_error.ts";
import { NotFoundError } from "../../src/errors/sentinels.ts";
import { PartedClient } from "../../src/parted/client.ts";
import { fromFile } from "../../src/parted/fs_source.ts";
import { toFile } from "../../src/parted/fs_partial.ts";
import { OCI_MANIFEST_MEDIA_TYPE } from "../../src/registry/media_types.ts";
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import { sha256Bytes, sha256File, writePatternFile } from "../fixtures/files.ts";
import { seededRandom } from "../fixtures/random.ts";
import { makeTempDir, removeDir } from "../fixtures/tmp.ts";
import { FUZZ_TARGETS, mutate } from "./fuzz.ts";
import { findLeaks, renderedStrings } from "../reliability/leak_scan.ts";
import { exists } from "../fixtures/expect.ts";

/** The outcome of a manifest pull fuzz run. */
export interface ManifestPullReport {
  seed: number;
  cases: number;
  rejected: number;
  pulled: number;
  blobRequestsAfterUnverified: number;
  destinationsFromUnverified: number;
  failures: string[];
}

const REPO = "fuzz/manifest";
const PART = 64 * 1024;

/** See the module doc. */
export async function runManifestPullFuzz(
  options: { seed: number; cases: number },
): Promise<ManifestPullReport> {
  const report: ManifestPullReport = {
    seed: options.seed,
    cases: 0,
    rejected: 0,
    pulled: 0,
    blobRequestsAfterUnverified: 0,
    destinationsFromUnverified: 0,
    failures: [],
  };
  const dir = await makeTempDir("ocipart-fuzz-");
  const registry = await startFakeRegistry();
  using client = new PartedClient({
    plainHttp: true,
    retryPolicy: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    stallTimeoutMs: 5_000,
  });
  try {
    const source = `${dir}/source.bin`;
    const fileDigest = await writePatternFile(source, PART * 2 + 1000, 7);
    const descriptor = await client.push(`${registry.host}/${REPO}:v1`, fromFile(source), {
      partSize: PART,
    });
    const original = registry.store.getManifest(REPO, descriptor.digest)!;
    const originalText = new TextDecoder().decode(original.bytes);
    const dictionary = FUZZ_TARGETS.find((t) => t.name === "manifest")!.dictionary;
    for (let i = 0; i < options.cases; i++) {
      const caseSeed = (options.seed + i) >>> 0;
      const random = seededRandom(caseSeed);
      const mutated = new TextEncoder().encode(mutate(random, originalText, dictionary));
      const mutatedDigest = sha256Bytes(mutated);
      const unverified = random() < 0.5;
      const byDigest = random() < 0.5;
      const dest = `${dir}/out-${i}.bin`;
      report.cases++;
      registry.clearFaults();
      let ref: string;
      if (unverified) {
        registry.fault({
          method: "GET",
          path: /\/manifests\//,
          times: Infinity,
          respond: {
            status: 200,
            headers: {
              "content-type": OCI_MANIFEST_MEDIA_TYPE,
              "docker-content-digest": descriptor.digest,
            },
            body: mutated,
          },
        });
        ref = byDigest
          ? `${registry.host}/${REPO}@${descriptor.digest}`
          : `${registry.host}/${REPO}:v1`;
      } else {
        registry.store.putManifest(REPO, `m${i}`, mutated, OCI_MANIFEST_MEDIA_TYPE);
        ref = byDigest
          ? `${registry.host}/${REPO}@${mutatedDigest}`
          : `${registry.host}/${REPO}:m${i}`;
      }
      const blobGetsBefore = registry.count({ method: "GET", path: /\/blobs\// });
      let error: unknown;
      try {
        await client.pull(ref, toFile(dest), { workers: 2 });
      } catch (err) {
        error = err;
      }
      const blobGets = registry.count({ method: "GET", path: /\/blobs\// }) - blobGetsBefore;
      const identical = mutatedDigest === descriptor.digest;
      const tag = `${caseSeed}${unverified ? " unverified" : " self-consistent"}`;
      if (error === undefined) {
        report.pulled++;
        if (!identical && unverified) {
          report.destinationsFromUnverified++;
          report.failures.push(`seed=${tag}: an unverified manifest was accepted`);
        } else if ((await sha256File(dest)) !== fileDigest && !identical) {
          // A self-consistent mutation that still describes valid parts must give right bytes
          // or fail; a wrong file at the destination is the one unacceptable outcome.
          report.failures.push(`seed=${tag}: destination has wrong bytes`);
        }
      } else {
        report.rejected++;
        const documented = [
          DigestMismatchError,
          NotPartedArtifactError,
          InvalidManifestError,
          InvalidReferenceError,
          NotFoundError,
          RetriesExhaustedError,
        ].some((cls) => findError(error, cls as never) !== undefined);
        if (!documented) {
          report.failures.push(`seed=${tag}: undocumented ${String(error)}`);
        }
        if (unverified && !identical) {
          if (findError(error, DigestMismatchError) === undefined) {
            report.failures.push(`seed=${tag}: not a digest mismatch: ${String(error)}`);
          }
          if (blobGets > 0) {
            report.blobRequestsAfterUnverified += blobGets;
            report.failures.push(`seed=${tag}: ${blobGets} blob GETs after an unverified manifest`);
          }
          if (await exists(`${dest}.parted-partial`)) {
            report.failures.push(`seed=${tag}: partial file left by an unverified manifest`);
          }
        }
        if (await exists(dest)) {
          report.destinationsFromUnverified++;
          report.failures.push(`seed=${tag}: destination exists after a failed pull`);
        }
        for (const text of renderedStrings(error)) {
          const hits = findLeaks(text, [registry.host, dir]);
          if (hits.length > 0) report.failures.push(`seed=${tag}: leak [${hits}] ${text}`);
        }
      }
      await Deno.remove(dest).catch(() => {});
      await Deno.remove(`${dest}.parted-partial`).catch(() => {});
    }
    registry.expectNoUnexpected();
  } finally {
    await registry.close();
    await removeDir(dir);
  }
  return report;
}
