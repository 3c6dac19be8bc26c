/**
 * Puts ordinary OCI content (not parted artifacts) into a registry for the exit-4 scenarios:
 * by hand over the distribution API, or as an OCI image layout directory for `skopeo copy`.
 *
 * @module
 */
import { createHash } from "node:crypto";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** The blobs and manifest of a tiny image (or another artifact when `artifactType` is set). */
export function tinyImage(artifactType?: string): {
  blobs: Uint8Array<ArrayBuffer>[];
  manifest: Uint8Array<ArrayBuffer>;
} {
  const config = new TextEncoder().encode(
    JSON.stringify({
      architecture: "amd64",
      os: "linux",
      rootfs: { type: "layers", diff_ids: [] },
    }),
  );
  const layer = new TextEncoder().encode("not a parted file\n".repeat(64));
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    ...(artifactType ? { artifactType } : {}),
    config: {
      mediaType: artifactType
        ? "application/vnd.oci.empty.v1+json"
        : "application/vnd.oci.image.config.v1+json",
      digest: sha256(config),
      size: config.byteLength,
    },
    layers: [{
      mediaType: "application/vnd.oci.image.layer.v1.tar",
      digest: sha256(layer),
      size: layer.byteLength,
    }],
  };
  return { blobs: [config, layer], manifest: new TextEncoder().encode(JSON.stringify(manifest)) };
}

/** Uploads `blob` to `<registryUrl>/v2/<repository>` (POST, one PUT) with plain fetch; its digest. */
export async function putBlobByHand(
  registryUrl: string,
  repository: string,
  blob: Uint8Array,
): Promise<string> {
  const digest = sha256(blob);
  const post = await fetch(`${registryUrl}/v2/${repository}/blobs/uploads/`, { method: "POST" });
  await post.body?.cancel();
  if (post.status !== 202) throw new Error(`POST upload: ${post.status}`);
  const location = new URL(post.headers.get("location")!, registryUrl);
  location.searchParams.set("digest", digest);
  const put = await fetch(location, {
    method: "PUT",
    body: blob as Uint8Array<ArrayBuffer>,
    headers: { "content-type": "application/octet-stream" },
  });
  await put.body?.cancel();
  if (put.status !== 201) throw new Error(`PUT blob: ${put.status}`);
  return digest;
}

/** Pushes `image` to `<registryUrl>/v2/<repository>` under `tag` with plain fetch. */
export async function pushByHand(
  registryUrl: string,
  repository: string,
  tag: string,
  image: { blobs: Uint8Array<ArrayBuffer>[]; manifest: Uint8Array<ArrayBuffer> },
): Promise<void> {
  for (const blob of image.blobs) await putBlobByHand(registryUrl, repository, blob);
  const put = await fetch(`${registryUrl}/v2/${repository}/manifests/${tag}`, {
    method: "PUT",
    body: image.manifest,
    headers: { "content-type": OCI_MANIFEST },
  });
  await put.body?.cancel();
  if (put.status !== 201) throw new Error(`PUT manifest: ${put.status}`);
}

/** Writes `image` as an OCI image layout in `dir` with the reference name `tag`. */
export async function writeOciLayout(
  dir: string,
  tag: string,
  image: { blobs: Uint8Array<ArrayBuffer>[]; manifest: Uint8Array<ArrayBuffer> },
): Promise<void> {
  await Deno.mkdir(`${dir}/blobs/sha256`, { recursive: true });
  for (const bytes of [...image.blobs, image.manifest]) {
    await Deno.writeFile(`${dir}/blobs/sha256/${sha256(bytes).slice(7)}`, bytes);
  }
  await Deno.writeTextFile(`${dir}/oci-layout`, JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  await Deno.writeTextFile(
    `${dir}/index.json`,
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{
        mediaType: OCI_MANIFEST,
        digest: sha256(image.manifest),
        size: image.manifest.byteLength,
        annotations: { "org.opencontainers.image.ref.name": tag },
      }],
    }),
  );
}

/** The part digests of the parted artifact at `<repository>:<tag>`, read from its manifest. */
export async function partDigests(
  registryUrl: string,
  repository: string,
  tag: string,
): Promise<string[]> {
  const response = await fetch(`${registryUrl}/v2/${repository}/manifests/${tag}`, {
    headers: { accept: OCI_MANIFEST },
  });
  if (response.status !== 200) throw new Error(`GET manifest: ${response.status}`);
  const manifest = await response.json() as { layers: Array<{ digest: string }> };
  return manifest.layers.map((layer) => layer.digest);
}
