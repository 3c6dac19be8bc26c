/**
 * Leak scan: collects every error string a reliability scenario produced and checks it for
 * what the spec says must never appear in a rendered error.
 *
 * API:
 * - `renderedStrings(err: unknown): string[]` — what a user can see of `err`: `String(err)`
 *   and the message of every error of the package (`OciError`) in its `cause` chain. Raw
 *   causes from the platform (a socket error naming an address) are fields, not renderings,
 *   and are not scanned.
 * - `recordErrors(source: string, errors: unknown[]): void` — scans at once (throws on a hit)
 *   and keeps the strings for `collected()`. When `OCIPART_LEAK_SCAN_DIR` is set, the strings
 *   are also appended to `<dir>/errors-<pid>.jsonl`, so a summary can scan a whole run.
 * - `recordText(source: string, text: string): void` — the same for text such as a CLI's
 *   standard error (one string per line).
 * - `findLeaks(text: string, secrets?: string[]): string[]` — names of the rules `text`
 *   breaks (empty = clean). `secrets` are exact strings that must not appear (passwords,
 *   tokens, the registry's host:port, file paths).
 * - `addSecrets(...values: string[])` — registers exact strings for every later scan.
 * - `SUITE_SECRETS` — the distinctive passwords, tokens and planted secrets of the whole test
 *   suite, for the whole-run scan (`leak_report.ts`).
 * - `collected(): { source: string; text: string }[]`, `readCollected(dir)`.
 *
 * @module
 */
import { OciError } from "../../src/errors/oci_error.ts";
import { causeChain } from "../../src/errors/find_error.ts";

const RULES: [string, RegExp][] = [
  ["url", /[a-z][a-z0-9+.-]*:\/\//i],
  ["ipv4 host", /\b\d{1,3}(\.\d{1,3}){3}\b/],
  ["ipv6 host", /\[[0-9a-f]*:[0-9a-f:]*\]/i],
  ["ipv6 loopback", /(^|[^0-9a-z:])::1\b/i],
  ["localhost", /localhost/i],
  ["host:port", /\b[a-z0-9-]+(\.[a-z0-9-]+)+:\d{2,5}\b/i],
  ["query string", /\?[^\s?]*=/],
  ["digest", /sha256:/i],
  ["hex run", /[0-9a-f]{32,}/i],
  ["jwt", /eyJ[A-Za-z0-9_-]{8,}/],
  ["credential scheme", /\b(bearer|basic)\s+[A-Za-z0-9+/=._-]{6,}/i],
  // Realm text is the challenge parameter and its value (the URL rules catch the value alone);
  // "token realm" as a field name in a fixed message is allowed.
  ["realm text", /realm\s*=/i],
  ["registry path", /\/v2\//],
  ["temp path", /\/tmp\//],
];

/**
 * Passwords, tokens and planted secrets the test suite hands to the library (distinctive ones:
 * short words such as "pw" would match ordinary text). No error string may contain them.
 */
export const SUITE_SECRETS: readonly string[] = [
  "s3cret",
  "pl4nted",
  "planted-secret",
  "helper-pass",
  "hunter2",
  "hub-pass",
  "reg-token",
  "ocipart-test-secret",
];

const secrets = new Set<string>();
const strings: { source: string; text: string }[] = [];

/** Registers exact strings that no later error may contain. */
export function addSecrets(...values: string[]): void {
  for (const value of values) if (value.length >= 3) secrets.add(value);
}

/** The rules `text` breaks; empty when clean. */
export function findLeaks(text: string, extra: string[] = []): string[] {
  const hits: string[] = [];
  for (const [name, rule] of RULES) if (rule.test(text)) hits.push(name);
  for (const secret of [...secrets, ...extra]) {
    if (secret.length >= 3 && text.includes(secret)) hits.push("secret");
  }
  return hits;
}

/** What a user can see of `err`. */
export function renderedStrings(err: unknown): string[] {
  const out = [String(err)];
  for (const link of causeChain(err)) {
    if (link instanceof OciError) out.push(`${link.name}: ${link.message}`);
  }
  return out;
}

/** Scans and keeps the rendered strings of `errors`; throws listing every hit. */
export function recordErrors(source: string, errors: unknown[], extra: string[] = []): void {
  const texts = errors.flatMap(renderedStrings);
  keep(source, texts, extra);
}

/** Scans and keeps every non-empty line of `text`. */
export function recordText(source: string, text: string, extra: string[] = []): void {
  keep(source, text.split("\n").map((l) => l.trim()).filter((l) => l !== ""), extra);
}

/** Everything recorded in this process. */
export function collected(): { source: string; text: string }[] {
  return [...strings];
}

/** Everything recorded under `dir` by any process of the run. */
export async function readCollected(dir: string): Promise<{ source: string; text: string }[]> {
  const out: { source: string; text: string }[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith(".jsonl")) continue;
    const text = await Deno.readTextFile(`${dir}/${entry.name}`);
    for (const line of text.split("\n")) if (line !== "") out.push(JSON.parse(line));
  }
  return out;
}

function keep(source: string, texts: string[], extra: string[]): void {
  const hits: string[] = [];
  for (const text of texts) {
    strings.push({ source, text });
    const found = findLeaks(text, extra);
    if (found.length > 0) hits.push(`${source}: [${found.join(", ")}] ${redact(text, extra)}`);
  }
  const dir = Deno.env.get("OCIPART_LEAK_SCAN_DIR");
  if (dir !== undefined && texts.length > 0) {
    Deno.writeTextFileSync(
      `${dir}/errors-${Deno.pid}.jsonl`,
      texts.map((text) => JSON.stringify({ source, text })).join("\n") + "\n",
      { append: true },
    );
  }
  if (hits.length > 0) throw new Error(`leak scan: ${hits.length} hit(s)\n${hits.join("\n")}`);
}

// The failure report must not itself print a secret.
function redact(text: string, extra: string[]): string {
  let out = text;
  for (const secret of [...secrets, ...extra]) out = out.split(secret).join("<secret>");
  return out;
}
