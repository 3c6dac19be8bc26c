/**
 * The documentation's links hold together, and the code points at them: every link to a heading
 * of a `docs/*.md` page (from `src/`, `docs/` and the README, and `#anchor` links inside a page)
 * names a heading that exists, by GitHub's slug rule; and no comment in `src/` refers a reader to
 * "the specification" (or "spec '…'", "the spec's table"…) without a `docs/` link on the same or
 * the next line, since no such document is in the repository.
 */
import { assertEquals } from "../fixtures/assert.ts";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/`([^`]*)`/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M} _-]/gu, "").replace(/ /g, "-");
}

/** Every anchor a markdown page offers: its headings' slugs (numbered when repeated), ids, names. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

async function filesUnder(dir: string, ext: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await filesUnder(path, ext));
    else if (entry.name.endsWith(ext)) found.push(path);
  }
  return found.sort();
}

/** A link to `page#anchor` found in `from` (line number for the message). */
interface AnchorLink {
  from: string;
  line: number;
  page: string;
  anchor: string;
}

/** Links to a heading of a docs page: `docs/x.md#a` in code, markdown links in pages. */
function linksIn(path: string, text: string): AnchorLink[] {
  const links: AnchorLink[] = [];
  const from = relative(ROOT, path);
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    const add = (page: string, anchor: string) =>
      links.push({ from, line: i + 1, page, anchor: decodeURIComponent(anchor) });
    if (path.endsWith(".ts")) {
      for (const m of line.matchAll(/\bdocs\/([\w.-]+\.md)#([\w%-]+)/g)) {
        add(join(ROOT, "docs", m[1]), m[2]);
      }
      return;
    }
    // Markdown: relative links to a page of this repository, and anchors within the page.
    for (const m of line.matchAll(/\]\(([^)\s#]*)#([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/i.test(target)) continue;
      if (target !== "" && !target.endsWith(".md")) continue;
      add(target === "" ? path : join(dirname(path), target), m[2]);
    }
  });
  return links;
}

/** Every link to a docs heading whose heading does not exist, as `file:line → page#anchor`. */
async function brokenAnchorLinks(): Promise<string[]> {
  const sources = [
    ...await filesUnder(join(ROOT, "src"), ".ts"),
    ...await filesUnder(join(ROOT, "docs"), ".md"),
    join(ROOT, "README.md"),
  ];
  const anchors = new Map<string, Set<string> | undefined>();
  const broken: string[] = [];
  for (const source of sources) {
    for (const link of linksIn(source, await Deno.readTextFile(source))) {
      if (!anchors.has(link.page)) {
        const page = await Deno.readTextFile(link.page).catch(() => undefined);
        anchors.set(link.page, page === undefined ? undefined : anchorsOf(page));
      }
      if (anchors.get(link.page)?.has(link.anchor)) continue;
      broken.push(`${link.from}:${link.line} → ${relative(ROOT, link.page)}#${link.anchor}`);
    }
  }
  return broken;
}

/** A comment that sends the reader to a specification the repository does not hold. */
const VAGUE_SPEC =
  /\b(?:the|both|parted|blob)\s+spec(?:ification)?s?\b|\bspec(?:ification)?['’]s\b|\bspec\s*["':]/i;

/** The comment text of a line of TypeScript (a `//` tail, or a JSDoc / block comment line). */
function commentOf(line: string): string | undefined {
  const trimmed = line.trimStart();
  if (/^(\/\/|\/\*|\*)/.test(trimmed)) return trimmed;
  const tail = line.indexOf("// ");
  return tail < 0 ? undefined : line.slice(tail);
}

/** Comments in `src/` that mention a specification with no `docs/` link beside them. */
async function unlinkedSpecMentions(): Promise<string[]> {
  const found: string[] = [];
  for (const path of await filesUnder(join(ROOT, "src"), ".ts")) {
    const lines = (await Deno.readTextFile(path)).split("\n");
    lines.forEach((line, i) => {
      const comment = commentOf(line);
      if (comment === undefined || !VAGUE_SPEC.test(comment)) return;
      const near = `${line}\n${lines[i + 1] ?? ""}`;
      if (/\bdocs\/[\w.-]+\.md\b/.test(near)) return;
      found.push(`${relative(ROOT, path)}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

Deno.test("slug: GitHub's rule for the headings the docs use", () => {
  assertEquals(slug("Rule → the one file that owns it"), "rule--the-one-file-that-owns-it");
  assertEquals(slug("pull: the destination, and resuming"), "pull-the-destination-and-resuming");
  assertEquals(slug("`PartedClient` options"), "partedclient-options");
  assertEquals(slug("Resume inside a part"), "resume-inside-a-part");
});

Deno.test("every link to a docs heading names a heading that exists", async () => {
  assertEquals(await brokenAnchorLinks(), []);
});

Deno.test("the docs name the protocol sections the code links to", async () => {
  const anchors = anchorsOf(await Deno.readTextFile(join(ROOT, "docs", "protocol.md")));
  for (
    const section of [
      "push",
      "pull",
      "resume-from-the-partial-file",
      "resume-inside-a-part",
      "copy",
      "verify",
      "inspect",
      "blob-operations",
      "authentication",
      "confidentiality",
      "retries",
      "errors-and-exit-codes",
    ]
  ) {
    assertEquals(anchors.has(section), true, `docs/protocol.md has no #${section}`);
  }
});

Deno.test("no comment in src/ cites a specification without a docs/ link", async () => {
  assertEquals(await unlinkedSpecMentions(), []);
});
