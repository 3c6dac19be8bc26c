/**
 * The README and the docs name package registries by what they are ("the npm registry"), never
 * by a host: where a registry lives is the package manager's setting, not this project's word.
 */
import { assertEquals } from "../fixtures/assert.ts";
import { PROJECT_ROOT } from "../cli/_cli.ts";

const HOSTS = /\b(registry\.npmjs\.org|npmjs\.com|registry\.yarnpkg\.com|jsr\.io|deno\.land)\b/g;

Deno.test("the README and docs/ name no package registry host", async () => {
  const files = ["README.md"];
  for await (const entry of Deno.readDir(`${PROJECT_ROOT}docs`)) {
    if (entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  const found: string[] = [];
  for (const file of files) {
    const text = await Deno.readTextFile(`${PROJECT_ROOT}${file}`);
    for (const match of text.matchAll(HOSTS)) found.push(`${file}: ${match[0]}`);
  }
  assertEquals(found, []);
});
