/**
 * When a copy fails because a registry speaks the other scheme (plain HTTP sent to a TLS port,
 * or TLS to a plain-HTTP one), which side it was and which flag fixes it: the library's own
 * advice (`drop --plain-http`) does not know that `copy` has two sides.
 *
 * @module
 */
import type { PartedClient } from "../../parted/mod.ts";
import { causeCodes } from "../../transport/mod.ts";
import {
  type CopySide,
  type CopySides,
  type SchemeAnswer,
  SchemeMismatchError,
} from "../arguments/copy_sides.ts";

/** How long the check of each side may take after the copy failed. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * A {@linkcode SchemeMismatchError} naming the side and the flag to use when `err` is a scheme
 * mismatch (cause code `TLS_SERVER` or `PLAIN_HTTP_SERVER`), with `err` as its cause; otherwise
 * undefined. When both
 * sides were reached the same way, each is asked `GET /v2/` again to find the one that
 * answers in the other scheme.
 *
 * @example
 * ```ts ignore
 * import { schemeMismatch } from "./copy_scheme.ts";
 * throw await schemeMismatch(err, client, command.sides, signal) ?? err;
 * ```
 */
export async function schemeMismatch(
  err: unknown,
  client: PartedClient,
  sides: CopySides,
  signal: AbortSignal,
): Promise<Error | undefined> {
  const codes = causeCodes(err);
  const code: SchemeAnswer | undefined = codes.includes("TLS_SERVER")
    ? "TLS_SERVER"
    : codes.includes("PLAIN_HTTP_SERVER")
    ? "PLAIN_HTTP_SERVER"
    : undefined;
  if (code === undefined || signal.aborted) return undefined;
  // TLS_SERVER: plain HTTP went to a TLS server, so a side set to plain HTTP is wrong.
  const candidates = [sides.source, sides.target].filter((side) =>
    side.plainHttp === (code === "TLS_SERVER")
  );
  const wrong = candidates.length === 2 && !sameRegistry(sides)
    ? await answeringOtherwise(candidates, code, client, signal)
    : candidates;
  if (wrong.length === 0) return undefined;
  return new SchemeMismatchError(code, wrong, sides, fix(code, wrong, sides), { cause: err });
}

/** The sides whose `GET /v2/` fails with the same mismatch. */
async function answeringOtherwise(
  candidates: CopySide[],
  code: SchemeAnswer,
  client: PartedClient,
  signal: AbortSignal,
): Promise<CopySide[]> {
  const probe = AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
  const verdicts = await Promise.all(candidates.map(async (side) => {
    if (side.registry === undefined) return false;
    try {
      await client.checkLogin(side.registry, { signal: probe });
      return false;
    } catch (failure) {
      return causeCodes(failure).includes(code);
    }
  }));
  return candidates.filter((_, i) => verdicts[i]);
}

/** The flags that make the wrong sides speak their registry's scheme. */
function fix(code: SchemeAnswer, wrong: CopySide[], sides: CopySides): string {
  const both = wrong.length === 2 || sameRegistry(sides);
  const given = [...new Set(wrong.flatMap((side) => side.flags))].join(" ");
  if (code === "TLS_SERVER") {
    const side = wrong[0];
    const otherSide = side === sides.source ? sides.target : sides.source;
    // Shared --plain-http, and the other side is right to speak plain HTTP: keep it there.
    return !both && side.flags.includes("--plain-http") && otherSide.plainHttp
      ? `use --${otherSide.prefix}-plain-http instead of --plain-http`
      : `drop ${given}`;
  }
  // Only the side's own TLS flags are wrong; a shared --insecure may still serve the other side.
  const own = wrong[0].own ? ` instead of ${wrong[0].flags.join(" ")}` : "";
  return both ? "add --plain-http" : `use --${wrong[0].prefix}-plain-http${own}`;
}

function sameRegistry(sides: CopySides): boolean {
  const { source, target } = sides;
  return source.registry !== undefined &&
    source.registry.toLowerCase() === target.registry?.toLowerCase();
}
