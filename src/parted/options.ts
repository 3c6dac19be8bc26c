/**
 * The options of `PartedClient`, apart from the client so that the layer that builds its
 * transport stack can name them without importing the client.
 *
 * @module
 */
export type { ExplicitCredential } from "../auth/credential.ts";
import type { ClientOptions } from "../remote/session.ts";
import type { MirrorTable } from "../remote/mirror_table.ts";
import type { RegistrySettings } from "../remote/registry_settings.ts";

/**
 * Options of {@linkcode PartedClient}.
 *
 * @example Plain HTTP with one explicit credential
 * ```ts
 * import { PartedClient, type PartedClientOptions } from "@ocipart/ocipart";
 * const options: PartedClientOptions = {
 *   plainHttp: true,
 *   credential: { username: "ci", password: "secret" },
 *   retryPolicy: { maxAttempts: 6, baseDelayMs: 500, maxDelayMs: 30_000 },
 *   stallTimeoutMs: 120_000,
 * };
 * using client = new PartedClient(options);
 * ```
 */
export interface PartedClientOptions extends ClientOptions {
  /**
   * Settings of single registries, keyed by `host[:port]` as references write it (the host
   * matched without regard to case, the port exactly): `plainHttp`, `insecureTls` and
   * `caCerts` there override the client-wide options for that registry and the storage its
   * blob reads are redirected to. E.g. a copy from a plain-HTTP registry to an HTTPS one, or a
   * mirror with its own CA. Checked when the client is created (`TypeError`, `RangeError`).
   *
   * @default none: every registry as the client-wide options say
   */
  registries?: Record<string, RegistrySettings>;
  /**
   * Mirrors (pull-through caches, local copies) that pulls, inspections, verifications and the
   * source side of copies read from before the registry, by registry or namespace prefix (the
   * longest matching prefix wins; see `MirrorTable`). Each request is tried on the mirrors in
   * order, then on the registry, which also takes over whenever a mirror fails, lacks the
   * content or sends bytes that do not match their digest: every byte is verified as usual.
   * A tag is always resolved at the registry (one manifest request); only when the registry
   * cannot be reached at all does a mirror whose `pullFromMirror` is `"all"` or `"tag-only"`
   * answer for it, and `onMirrorTag` names that mirror.
   * Pushes never go to mirrors. A mirror host is reached like any registry host: as its
   * `registries` entry says, else as the client-wide options say; a mirror's own `plainHttp` or
   * `insecure` is that entry's `plainHttp` or `insecureTls` (a contradiction is a `RangeError`).
   * A mirror never receives the registry's credential: it is asked with its own, from
   * `credentials` or else the docker configuration. `readRegistriesConf()` builds this table
   * from the containers registries configuration.
   *
   * @default none
   */
  mirrors?: MirrorTable;
  /**
   * Called when the registry could not be reached and a mirror's answer decided which artifact
   * a tag names (`mirror` is its `host[:port]` from `mirrors`): the one case in which a mirror,
   * not the registry, defines a tag. The CLI prints a line naming the mirror.
   *
   * @default none
   */
  onMirrorTag?: (mirror: string, tag: string) => void;
}
