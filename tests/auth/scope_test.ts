import { mergeScopes, repositoryScope, scopeActionOf } from "../../src/auth/scope.ts";
import { assertEquals } from "../fixtures/assert.ts";

Deno.test("scope: pull for GET and HEAD, pull,push for every other method", () => {
  assertEquals(
    ["GET", "head", "POST", "PUT", "PATCH", "DELETE"].map(scopeActionOf),
    ["pull", "pull", "push", "push", "push", "push"],
  );
  assertEquals(repositoryScope("org/data", "pull"), "repository:org/data:pull");
  assertEquals(repositoryScope("org/data", "push"), "repository:org/data:pull,push");
});

Deno.test("scope: a challenge's own scope widens the method's scope", () => {
  // A mount challenge names the source repository too; actions arrive in any order.
  assertEquals(
    mergeScopes(["repository:dst:pull,push", "repository:dst:push,pull repository:src:pull"]),
    ["repository:dst:pull,push", "repository:src:pull"],
  );
  assertEquals(mergeScopes(["repository:a:pull", "repository:a:push"]), [
    "repository:a:pull,push",
  ]);
  // Resource types other than repository, and items without actions, are kept.
  assertEquals(mergeScopes(["registry:catalog:*", "odd", "odd"]), ["registry:catalog:*", "odd"]);
  assertEquals(mergeScopes([]), []);
});
