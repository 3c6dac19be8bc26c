/**
 * "Did you mean": the known words nearest to a word a person typed, for near misses of flags and
 * commands (`--plain-htpp`, `pul`).
 *
 * @module
 */

/**
 * The number of single-character edits (insertion, deletion, substitution, or swap of two
 * neighbours) between `a` and `b`, ignoring case.
 *
 * @example A swap is one edit
 * ```ts
 * import { editDistance } from "./suggest.ts";
 * console.log(editDistance("plain-htpp", "plain-http")); // 1
 * ```
 */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  // Three rows of the optimal-string-alignment table: two back, one back, current.
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, before[j - 2] + 1);
      }
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length];
}

/**
 * The candidates nearest to `typed` when they are near enough to be a slip of the keyboard: at
 * most one edit per four characters (at least one), or `typed` (three characters or more) being
 * the start of exactly one candidate. Empty when nothing is that near; several when they tie.
 *
 * @example A typo and a word too far from anything
 * ```ts
 * import { nearest } from "./suggest.ts";
 * console.log(nearest("pul", ["push", "pull", "copy"])); // [ "pull" ]
 * console.log(nearest("frobnicate", ["push", "pull"])); // []
 * ```
 */
export function nearest(typed: string, candidates: readonly string[]): string[] {
  const limit = Math.max(1, Math.floor(typed.length / 4));
  let best = limit + 1;
  let found: string[] = [];
  for (const candidate of new Set(candidates)) {
    const distance = editDistance(typed, candidate);
    if (distance > limit) continue;
    if (distance < best) [best, found] = [distance, [candidate]];
    else if (distance === best) found.push(candidate);
  }
  if (found.length > 0) return found;
  const starts = candidates.filter((c) => c.toLowerCase().startsWith(typed.toLowerCase()));
  return typed.length >= 3 && new Set(starts).size === 1 ? [starts[0]] : [];
}

/**
 * The " (did you mean X?)" clause of a message, or "" when there is no suggestion.
 *
 * @example
 * ```ts
 * import { didYouMean } from "./suggest.ts";
 * console.log(didYouMean(["--plain-http"])); // " (did you mean --plain-http?)"
 * console.log(didYouMean(["pull", "push"])); // " (did you mean pull or push?)"
 * ```
 */
export function didYouMean(suggestions: readonly string[]): string {
  if (suggestions.length === 0) return "";
  const last = suggestions.at(-1);
  const list = suggestions.length === 1
    ? last
    : `${suggestions.slice(0, -1).join(", ")} or ${last}`;
  return ` (did you mean ${list}?)`;
}
