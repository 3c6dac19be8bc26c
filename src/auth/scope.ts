/**
 * Token scopes: which access a request needs, and merging a challenge's own scopes into it.
 *
 * @module
 */

/**
 * The token cache entry a request belongs to: `"pull"` for GET and HEAD, `"push"` (scope
 * `pull,push`) for every other method.
 */
export type ScopeAction = "pull" | "push";

/**
 * Returns the cache entry of a request method: `"pull"` for GET and HEAD, `"push"` otherwise.
 *
 * @example
 * ```ts
 * import { scopeActionOf } from "./scope.ts";
 * console.log(scopeActionOf("HEAD"), scopeActionOf("PUT")); // "pull" "push"
 * ```
 */
export function scopeActionOf(method: string): ScopeAction {
  const upper = method.toUpperCase();
  return upper === "GET" || upper === "HEAD" ? "pull" : "push";
}

/**
 * Returns the token scope of a repository for an action: `repository:<name>:pull` or
 * `repository:<name>:pull,push`.
 *
 * @example
 * ```ts
 * import { repositoryScope } from "./scope.ts";
 * console.log(repositoryScope("org/data", "push")); // "repository:org/data:pull,push"
 * ```
 */
export function repositoryScope(repository: string, action: ScopeAction): string {
  return `repository:${repository}:${action === "pull" ? "pull" : "pull,push"}`;
}

/**
 * Merges scope strings (each may hold several space-separated scopes, as a challenge's `scope`
 * parameter does) into one list with one scope per resource and the union of its actions, in
 * first-seen order. Malformed items (no `:` before the actions) are kept as they are.
 *
 * @example Widening a push scope with a mount source
 * ```ts
 * import { mergeScopes } from "./scope.ts";
 * console.log(mergeScopes(["repository:a:pull,push", "repository:b:pull repository:a:push"]));
 * // ["repository:a:pull,push", "repository:b:pull"]
 * ```
 */
export function mergeScopes(scopes: readonly string[]): string[] {
  const resources = new Map<string, string[]>();
  const verbatim: string[] = [];
  for (const group of scopes) {
    for (const scope of group.split(" ")) {
      if (scope === "") continue;
      const split = scope.lastIndexOf(":");
      if (split <= 0 || scope.indexOf(":") === split) {
        if (!verbatim.includes(scope)) verbatim.push(scope);
        continue;
      }
      const resource = scope.slice(0, split);
      const actions = resources.get(resource) ?? [];
      for (const action of scope.slice(split + 1).split(",")) {
        if (action !== "" && !actions.includes(action)) actions.push(action);
      }
      resources.set(resource, actions);
    }
  }
  const merged = [...resources].map(([resource, actions]) => `${resource}:${actions.join(",")}`);
  return [...merged, ...verbatim];
}
