/**
 * A registry and a mirror holding the same parted artifact (two strict fake registries), and a
 * refused port, for the mirror tests.
 *
 * @module
 */
import { startFakeRegistry } from "../fixtures/fake_registry.ts";
import type { FakeRegistry } from "../fixtures/fake_registry.ts";
import { writePatternFile } from "../fixtures/files.ts";
import { freePort } from "../fixtures/ports.ts";
import { type TempDir, tempDir } from "../fixtures/tmp.ts";
import { fromFile, PartedClient } from "../../src/parted/mod.ts";

/** Part size of the test artifact. */
export const P = 64 * 1024;
/** File size: 5 parts, the last one short. */
export const SIZE = 4 * P + 777;
/** The repository both hosts hold. */
export const REPO = "fleet/model";

/** Both hosts, the source file and what was pushed. */
export interface MirrorEnv extends AsyncDisposable {
  registry: FakeRegistry;
  mirror: FakeRegistry;
  dir: TempDir;
  src: string;
  fileDigest: string;
  manifestDigest: string;
  /** Part digests in file order. */
  parts: string[];
}

/** Pushes one file to both hosts (same manifest digest), then clears both request logs. */
export async function mirrorEnv(seed = 7): Promise<MirrorEnv> {
  const registry = await startFakeRegistry();
  const mirror = await startFakeRegistry();
  const dir = await tempDir("ocipart-mirrors-");
  const src = `${dir.path}/src.bin`;
  const fileDigest = await writePatternFile(src, SIZE, seed);
  using pusher = new PartedClient({ plainHttp: true });
  const pushed = await pusher.push(`${registry.host}/${REPO}:v1`, fromFile(src), { partSize: P });
  await pusher.push(`${mirror.host}/${REPO}:v1`, fromFile(src), { partSize: P });
  const manifest = registry.store.getManifest(REPO, pushed.digest)!;
  const json = JSON.parse(new TextDecoder().decode(manifest.bytes));
  registry.log.length = 0;
  mirror.log.length = 0;
  return {
    registry,
    mirror,
    dir,
    src,
    fileDigest,
    manifestDigest: pushed.digest,
    parts: json.layers.map((l: { digest: string }) => l.digest),
    async [Symbol.asyncDispose]() {
      await registry.close();
      await mirror.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

/** A loopback port nothing listens on (connections are refused). */
export async function refusedHost(): Promise<string> {
  return `127.0.0.1:${await freePort()}`;
}

/** Blob GETs a host answered (any status), optionally of one digest. */
export function blobGets(host: FakeRegistry, digest?: string): number {
  return host.log.filter((r) =>
    r.method === "GET" && r.route === "blob" &&
    (digest === undefined || r.path.endsWith(digest))
  ).length;
}

/** Manifest GETs a host answered, by tag (`"v1"`) or by digest (`"sha256:…"`). */
export function manifestGets(host: FakeRegistry, reference?: string): number {
  return host.log.filter((r) =>
    r.method === "GET" && r.route === "manifest" &&
    (reference === undefined || r.path.endsWith(`/manifests/${reference}`))
  ).length;
}
