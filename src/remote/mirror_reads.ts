/**
 * Which host a read goes to when the registry has mirrors, and when it falls back: the one
 * place of that rule. A read by digest (a blob GET, a manifest GET by digest) is tried on each
 * mirror, in order, then on the registry. A tag is the registry's to define: it is resolved
 * there (one manifest request), and only when the registry gave no answer at all does a mirror
 * allowed to resolve tags (`pullFromMirror` `"all"` or `"tag-only"`) answer for it, reported
 * through the set's `onTag` ({@linkcode tagSources}). Any failure of a mirror (no answer, an error
 * status such as 404, 401, 403, 429 or 5xx, an answer that breaks the protocol, a manifest
 * that does not hash to its digest) sends that same request on to the next host at once; the
 * registry's answer is final. Every byte is verified by digest wherever it came from, so a
 * mirror can make a pull slower but never wrong.
 *
 * A mirror that gave no answer at all rests for {@linkcode MIRROR_REST_MS} (a dead cache must
 * not cost every request a connect timeout); a blob whose body broke or hashed wrong from a
 * mirror is read from the registry for the rest of the transfer.
 *
 * @module
 */
import { findError, isAbortError } from "../errors/find_error.ts";
import {
  HttpStatusError,
  NetworkError,
  PeerRefusedError,
  ProtocolError,
  StallError,
} from "../errors/kinds.ts";
import { relayBody } from "../transport/byob_body.ts";
import type { RemoteRepository } from "./repository.ts";

/** How long a mirror that gave no answer is left alone by one transfer. */
export const MIRROR_REST_MS = 30_000;

/** One mirror of a repository, on its own route (its own credentials, never the registry's). */
export interface MirrorSource {
  /** The mirror's copy of the repository. */
  readonly repo: RemoteRepository;
  /** Whether it may resolve the transfer's tag when the registry cannot be reached. */
  readonly resolvesTag: boolean;
  /** The mirror's `host[:port]`, as its configuration wrote it (named when it resolves a tag). */
  readonly host: string;
}

/** Told the mirror (`host[:port]`) whose answer decided what `tag` names. */
export type MirrorTagListener = (mirror: string, tag: string) => void;

/** What a read asks for: a digest-addressed object, or the transfer's tag. */
export type ReadTarget = { digest: string } | { tag: string };

/**
 * The mirrors of one transfer, in order, with what the transfer learnt about them.
 *
 * @example
 * ```ts
 * import { MirrorSet } from "./mirror_reads.ts";
 * const mirrors = new MirrorSet([]);
 * console.log(mirrors.candidates({ tag: "v1" }).length); // 0
 * ```
 */
export class MirrorSet {
  readonly #sources: readonly MirrorSource[];
  readonly #restingUntil = new Map<MirrorSource, number>();
  readonly #registryOnly = new Set<string>();
  readonly #now: () => number;
  readonly #onTag: MirrorTagListener | undefined;

  /**
   * `onTag` hears which mirror resolved a tag the registry could not; `now` is a monotonic
   * clock in milliseconds (tests).
   */
  constructor(
    sources: readonly MirrorSource[],
    options: { onTag?: MirrorTagListener; now?: () => number } = {},
  ) {
    this.#sources = sources;
    this.#now = options.now ?? (() => performance.now());
    this.#onTag = options.onTag;
  }

  /** The mirror whose copy is `repo` decided what `tag` names. */
  resolvedTag(repo: RemoteRepository, tag: string): void {
    const source = this.#sources.find((candidate) => candidate.repo === repo);
    if (source !== undefined) this.#onTag?.(source.host, tag);
  }

  /** The mirrors to try for `target`, in order. */
  candidates(target: ReadTarget): MirrorSource[] {
    if ("digest" in target && this.#registryOnly.has(target.digest)) return [];
    const now = this.#now();
    return this.#sources.filter((source) =>
      ("digest" in target || source.resolvesTag) &&
      (this.#restingUntil.get(source) ?? -Infinity) <= now
    );
  }

  /** `source` gave no answer: leave it alone for a while. */
  rest(source: MirrorSource): void {
    this.#restingUntil.set(source, this.#now() + MIRROR_REST_MS);
  }

  /**
   * The mirror whose copy is `repo` failed a read with `err`: the read moves on to the next
   * host (a mirror's failure is never the one reported); one that gave no answer rests. An abort
   * ends the read: it is rethrown.
   */
  dropped(repo: RemoteRepository, err: unknown, signal: AbortSignal | undefined): void {
    if (signal?.aborted) throw signal.reason;
    if (isAbortError(err)) throw err;
    const source = this.#sources.find((candidate) => candidate.repo === repo);
    if (source !== undefined && noAnswer(err)) this.rest(source);
  }

  /** `digest` is read from the registry from now on (a mirror broke or spoilt its bytes). */
  registryOnly(digest: string): void {
    this.#registryOnly.add(digest);
  }
}

/**
 * A failure in which the host never answered (as opposed to answering wrongly).
 *
 * @example
 * ```ts
 * import { noAnswer } from "./mirror_reads.ts";
 * console.log(noAnswer(new Error("x"))); // false
 * ```
 */
export function noAnswer(err: unknown): boolean {
  if (findError(err, HttpStatusError) !== undefined) return false;
  return findError(err, NetworkError) !== undefined || findError(err, StallError) !== undefined ||
    findError(err, PeerRefusedError) !== undefined;
}

/**
 * The hosts a read of `target` tries, in order: each mirror of `repo` that may serve it, then
 * `repo` itself (last, its answer final). The caller tells `repo.mirrors` of each mirror's
 * failure ({@linkcode MirrorSet.dropped}) before it moves on.
 *
 * @example Reading through the mirrors
 * ```ts ignore
 * for (const source of readSources(repo, { digest })) {
 *   if (source === repo) break;
 *   try {
 *     return await getFrom(source);
 *   } catch (err) {
 *     repo.mirrors!.dropped(source, err, signal);
 *   }
 * }
 * return await getFrom(repo);
 * ```
 */
export function readSources(repo: RemoteRepository, target: ReadTarget): RemoteRepository[] {
  const mirrors = repo.mirrors?.candidates(target) ?? [];
  return [...mirrors.map((source) => source.repo), repo];
}

/**
 * A blob read from the mirrors of `repo` first, then from the registry: `ask` sends it to one
 * host. A mirror that fails is dropped for the read; a mirror's answer says `mirrored` and its body
 * is watched ({@linkcode watchMirroredBody}). `"complete"` (nothing left to read) is passed on.
 *
 * @example A whole-blob GET and a ranged one
 * ```ts ignore
 * const answer = await blobMirrorsFirst(repo, digest, signal, (source) => getFrom(source));
 * ```
 */
export async function blobMirrorsFirst<
  A extends { body: ReadableStream<Uint8Array>; mirrored?: boolean } | "complete",
>(
  repo: RemoteRepository,
  digest: string,
  signal: AbortSignal | undefined,
  ask: (source: RemoteRepository) => Promise<A>,
): Promise<A> {
  for (const source of readSources(repo, { digest })) {
    if (source === repo) break;
    try {
      const answer = await ask(source);
      if (answer === "complete") return answer;
      const found = answer as Exclude<A, "complete">;
      return { ...found, body: watchMirroredBody(found.body, repo, digest), mirrored: true };
    } catch (err) {
      repo.mirrors!.dropped(source, err, signal);
    }
  }
  return await ask(repo);
}

/**
 * The mirrors that may answer for `tag` after the registry failed with `registryFailure`: none
 * while the registry answered (its answer, even a refusal, is final), else each mirror allowed
 * to resolve tags, in order. An abort ends the read: it is rethrown.
 *
 * @example Reading a tag
 * ```ts ignore
 * try {
 *   return await getFrom(repo);
 * } catch (err) {
 *   for (const mirror of tagSources(repo, tag, err, signal)) {
 *     // … the first that answers decides, and is named through repo.mirrors.resolvedTag
 *   }
 *   throw err;
 * }
 * ```
 */
export function tagSources(
  repo: RemoteRepository,
  tag: string,
  registryFailure: unknown,
  signal: AbortSignal | undefined,
): RemoteRepository[] {
  if (signal?.aborted) throw signal.reason;
  if (isAbortError(registryFailure) || !noAnswer(registryFailure)) return [];
  return (repo.mirrors?.candidates({ tag }) ?? []).map((source) => source.repo);
}

/**
 * A mirror's blob body: when it breaks, the blob's later reads go to the registry (a
 * continuation from a mirror that just failed would likely fail again and spend the budget).
 *
 * @example
 * ```ts ignore
 * const body = watchMirroredBody(answer.body, repo, digest);
 * ```
 */
export function watchMirroredBody(
  body: ReadableStream<Uint8Array>,
  repo: RemoteRepository,
  digest: string,
): ReadableStream<Uint8Array> {
  return relayBody(body, {
    read: async (next) => {
      try {
        return await next();
      } catch (err) {
        repo.mirrors?.registryOnly(digest);
        throw err;
      }
    },
  });
}

/**
 * What a transfer throws when a blob it read (in whole or in part) from a mirror does not hash
 * to its digest: a retryable failure, after which the blob is read from the registry only. The
 * attempt is spent; a poisoned cache never yields a corrupt file, and the pull still completes
 * from the registry. It carries no `DigestMismatchError`: that verdict is the registry's alone,
 * for bytes the registry sent.
 *
 * @example
 * ```ts ignore
 * if (digest !== part.digest) throw state.mirrored ? mirrorSpoiled(repo, part.digest, label) : wrong;
 * ```
 */
export function mirrorSpoiled(
  repo: RemoteRepository,
  digest: string,
  label: string,
): ProtocolError {
  repo.mirrors?.registryOnly(digest);
  return new ProtocolError(`${label}: a mirror sent other bytes; reading from the registry`, {
    retryable: true,
  });
}
