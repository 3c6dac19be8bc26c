/**
 * Seeded, bounded fuzzing of every parser that reads registry-chosen or user-typed text.
 *
 * API:
 * - `FUZZ_TARGETS: FuzzTarget[]` — `reference`, `manifest`, `challenge`, `content-range`,
 *   `range-request`, `upload-range`, `location`, `token-json`.
 * - `runFuzzTarget(target, { seed, cases }) → Promise<FuzzReport>` — `cases` mutated inputs
 *   from the target's corpus with a mulberry32 generator seeded by `seed` (case `i` uses
 *   `seed + i`, so one failing case reproduces alone with `{ seed: seed + i, cases: 1 }`).
 *   Each case must return, or throw one of the target's documented error classes, within the
 *   per-case watchdog; returned values must satisfy the target's invariants; every error's
 *   rendered text goes through the leak scan. Failures are collected, not thrown.
 * - `mutate(random, text, dictionary) → string` — one to four stacked mutations.
 * - `FuzzReport`: `{ target, seed, cases, accepted, rejected, failures: string[] }`.
 *
 * @module
 */
import { OciError } from "../../src/errors/oci_error.ts";
import {
  AuthChallengeError,
  HttpStatusError,
  InvalidManifestError,
  InvalidReferenceError,
  LocationError,
  ProtocolError,
} from "../../src/errors/kinds.ts";
import { NotPartedArtifactError, UnauthorizedError } from "../../src/errors/sentinels.ts";
import { formatReference, parseReference } from "../../src/registry/reference.ts";
import { decodeManifest, encodeManifest } from "../../src/parted/manifest.ts";
import { planParts } from "../../src/parted/plan.ts";
import { parseChallenges } from "../../src/auth/challenge.ts";
import {
  parseContentRange,
  parseRangeRequest,
  parseUploadRange,
  validateContentRange,
} from "../../src/registry/range.ts";
import { resolveLocation, withDigestQuery } from "../../src/registry/location.ts";
import { requestToken } from "../../src/auth/token_exchange.ts";
import { seededRandom } from "../fixtures/random.ts";
import { findLeaks, renderedStrings } from "../reliability/leak_scan.ts";

/** Secret markers planted in the corpora: no error may ever render them. */
export const FUZZ_SECRETS = ["s3cretRealmPath", "hunter2pass", "tok3nValue", "signedQ"];

/** One fuzzed parser. */
export interface FuzzTarget {
  /** Name printed in the summary. */
  name: string;
  /** Seed inputs. */
  corpus: string[];
  /** Extra tokens the mutator splices in. */
  dictionary: string[];
  /** Error classes the target may throw. */
  allowed: (abstract new (...args: never[]) => Error)[];
  /** Runs one input; throws an `InvariantError` when a returned value is wrong. */
  run(input: string): unknown;
}

/** A returned value broke an invariant of its target. */
export class InvariantError extends Error {}

/** The outcome of one target's run. */
export interface FuzzReport {
  target: string;
  seed: number;
  cases: number;
  accepted: number;
  rejected: number;
  failures: string[];
}

const DIGEST = "sha256:" + "ab".repeat(32);
const DIGEST2 = "sha256:" + "cd".repeat(32);
const COMMON = [
  "",
  " ",
  "\t",
  "\r\n",
  "\u0000",
  "\u00e9",
  "\ud800",
  "\uffff",
  "=",
  ",",
  ";",
  '"',
  "\\",
  "/",
  ":",
  "@",
  "?",
  "#",
  "%",
  "%00",
  "%2F",
  "-",
  "*",
  "..",
  "0",
  "-1",
  "1e3",
  "00",
  "9007199254740993",
  "18446744073709551616",
  "NaN",
  "Infinity",
  "null",
  "true",
  "{}",
  "[]",
  "{",
  "}",
  "[",
  "]",
];

function invariant(ok: boolean, what: string): void {
  if (!ok) throw new InvariantError(what);
}

const referenceTarget: FuzzTarget = {
  name: "reference",
  corpus: [
    "registry.example/org/data:v1",
    `localhost:5000/a/b/c@${DIGEST}`,
    `127.0.0.1:5000/models/llama:v1@${DIGEST}`,
    "[::1]:5000/x:latest",
    "ghcr.io/o-r_g/n.a__me:TAG_1.0-rc",
  ],
  dictionary: [...COMMON, "localhost", "sha256:", DIGEST, "A", "__", "--", ".."],
  allowed: [InvalidReferenceError],
  run(input) {
    const ref = parseReference(input);
    invariant(ref.tag !== undefined || ref.digest !== undefined, "neither tag nor digest");
    invariant(ref.repository === ref.repository.toLowerCase(), "uppercase repository");
    const again = parseReference(formatReference(ref));
    invariant(JSON.stringify(again) === JSON.stringify(ref), "format/parse round trip");
    return ref;
  },
};

const validManifest = new TextDecoder().decode(encodeManifest({
  partSize: 4,
  fileSize: 10,
  fileDigest: DIGEST,
  partDigests: [DIGEST, DIGEST2, DIGEST],
}));
const manifestTarget: FuzzTarget = {
  name: "manifest",
  corpus: [
    validManifest,
    new TextDecoder().decode(encodeManifest({
      partSize: 10,
      fileSize: 0,
      fileDigest: DIGEST,
      partDigests: [DIGEST],
    })),
  ],
  dictionary: [
    ...COMMON,
    '"schemaVersion":2',
    '"size":4',
    '"size":-4',
    '"size":4.5',
    '"layers":[]',
    '"annotations":{}',
    DIGEST,
    "sha256:00",
    '"mediaType":"application/vnd.oci.image.index.v1+json"',
    '"artifactType":"x"',
    "application/vnd.ocipart.parted.part.v1",
    "dev.ocipart.parted.v1.part-size",
    '"1e400"',
    '"0x10"',
  ],
  allowed: [InvalidManifestError, NotPartedArtifactError],
  run(input) {
    const manifest = decodeManifest(new TextEncoder().encode(input));
    const plan = planParts(manifest.fileSize, manifest.partSize);
    invariant(plan.length === manifest.parts.length, "part count differs from the split rule");
    for (const [i, part] of manifest.parts.entries()) {
      invariant(part.index === i, "part index");
      invariant(part.offset === plan[i].offset && part.size === plan[i].size, "part range");
      invariant(/^sha256:[0-9a-f]{64}$/.test(part.digest), "part digest");
    }
    return manifest;
  },
};

const challengeTarget: FuzzTarget = {
  name: "challenge",
  corpus: [
    'Bearer realm="https://auth.example/s3cretRealmPath?x=signedQ",service="reg",scope="repository:a/b:pull,push"',
    'Basic realm="hunter2pass", Bearer realm="http://127.0.0.1:9/t",error="insufficient_scope"',
    "Negotiate tok3nValue==",
    'Bearer realm = "a\\"b,c" , service=reg',
  ],
  dictionary: [...COMMON, "Bearer", "Basic", "realm=", 'scope="', "error=", "==", '\\"'],
  allowed: [AuthChallengeError],
  run(input) {
    const challenges = parseChallenges(input);
    for (const c of challenges) {
      invariant(c.scheme === c.scheme.toLowerCase() && c.scheme !== "", "scheme");
      for (const name of Object.keys(c.params)) invariant(name === name.toLowerCase(), "param");
    }
    return challenges;
  },
};

const contentRangeTarget: FuzzTarget = {
  name: "content-range",
  corpus: ["bytes 0-9/10", "bytes 5-9/*", "bytes */10", "bytes 100-199/1000"],
  dictionary: [...COMMON, "bytes", "bytes ", "*/", "/*"],
  allowed: [ProtocolError],
  run(input) {
    const parsed = parseContentRange(input);
    if ("unsatisfied" in parsed) {
      invariant(Number.isSafeInteger(parsed.total) && parsed.total >= 0, "unsatisfied total");
    } else {
      invariant(Number.isSafeInteger(parsed.start) && Number.isSafeInteger(parsed.end), "ints");
      invariant(parsed.start <= parsed.end, "start after end");
      if (parsed.total !== undefined) invariant(parsed.end < parsed.total, "end beyond total");
    }
    // The same value as the answer to a request from 5 of a 10-byte blob.
    try {
      const v = validateContentRange(input, { start: 5, end: 9, total: 10 }, "GET blob");
      invariant(v.start === 5 && v.end <= 9 && v.end >= 5, "validated range");
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
    }
    return parsed;
  },
};

const rangeRequestTarget: FuzzTarget = {
  name: "range-request",
  corpus: ["bytes=0-", "bytes=5-9", "bytes=-3", "bytes=10-", "bytes=0-0,2-3"],
  dictionary: [...COMMON, "bytes=", "bytes", "-"],
  allowed: [],
  run(input) {
    const size = 10;
    const r = parseRangeRequest(input, size);
    if (r !== undefined && !("unsatisfied" in r)) {
      invariant(r.start >= 0 && r.start <= r.end && r.end < size, "range within size");
    }
    return r;
  },
};

const uploadRangeTarget: FuzzTarget = {
  name: "upload-range",
  corpus: ["0-0", "0-1048575", "bytes=0-99", " 0-5 "],
  dictionary: [...COMMON, "bytes=", "-"],
  allowed: [ProtocolError],
  run(input) {
    const r = parseUploadRange(input);
    invariant(Number.isSafeInteger(r.end) && r.start <= r.end, "upload range");
    return r;
  },
};

const base = new URL("https://registry.example/v2/org/data/blobs/uploads/");
const locationTarget: FuzzTarget = {
  name: "location",
  corpus: [
    "/v2/org/data/blobs/uploads/abc?_state=signedQ",
    "https://storage.example/bucket/s3cretRealmPath?X-Amz-Signature=signedQ&a=%2F",
    "http://127.0.0.1:9/x",
    "https://user:hunter2pass@x.example/y",
    "relative/path?q=1#frag",
    "//other.example/p",
  ],
  dictionary: [...COMMON, "https://", "http://", "ftp://", "//", "user:pw@", "?digest=", "&", "#"],
  allowed: [LocationError],
  run(input) {
    const url = resolveLocation(input, base, "POST blob upload");
    invariant(url.protocol === "https:" || url.protocol === "http:", "scheme");
    invariant(url.protocol === "https:", "https to http downgrade");
    invariant(url.username === "" && url.password === "", "credentials");
    invariant(url.hostname !== "", "host");
    const committed = withDigestQuery(url, DIGEST);
    invariant(committed.searchParams.getAll("digest").length === 1, "one digest parameter");
    invariant(committed.searchParams.get("digest") === DIGEST, "digest parameter");
    invariant(committed.origin === url.origin && committed.pathname === url.pathname, "target");
    return committed;
  },
};

const tokenTarget: FuzzTarget = {
  name: "token-json",
  corpus: [
    '{"token":"tok3nValue","expires_in":300}',
    '{"access_token":"tok3nValue","issued_at":"2020-01-01T00:00:00Z"}',
    '{"token":"","access_token":"tok3nValue"}',
    '{"token":"a b\\u0000tok3nValue"}',
  ],
  dictionary: [...COMMON, '"token":', '"access_token":', '"expires_in":', "-5", "1e309"],
  allowed: [AuthChallengeError, HttpStatusError, UnauthorizedError],
  async run(input) {
    const answer = await requestToken({
      fetch: () => Promise.resolve(new Response(input, { status: 200 })),
      realm: new URL("https://auth.example/s3cretRealmPath"),
      service: "reg",
      scopes: ["repository:a/b:pull"],
      credential: { username: "u", password: "hunter2pass" },
      access: "pull",
    });
    invariant(/^[\x21-\x7e]+$/.test(answer.token), "token is a visible ASCII header value");
    if (answer.expiresIn !== undefined) invariant(answer.expiresIn > 0, "expires_in");
    return answer;
  },
};

/** Every fuzzed parser. */
export const FUZZ_TARGETS: FuzzTarget[] = [
  referenceTarget,
  manifestTarget,
  challengeTarget,
  contentRangeTarget,
  rangeRequestTarget,
  uploadRangeTarget,
  locationTarget,
  tokenTarget,
];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)];
}

/** Applies one to four stacked mutations to `text`. */
export function mutate(random: () => number, text: string, dictionary: string[]): string {
  let out = text;
  const rounds = 1 + Math.floor(random() * 4);
  for (let r = 0; r < rounds; r++) {
    const at = Math.floor(random() * (out.length + 1));
    const len = Math.floor(random() * Math.min(16, out.length - at + 1));
    switch (Math.floor(random() * 9)) {
      case 0: // replace one character with a random code unit
        out = out.slice(0, at) + String.fromCharCode(Math.floor(random() * 0x250)) +
          out.slice(at + 1);
        break;
      case 1: // delete a run
        out = out.slice(0, at) + out.slice(at + len);
        break;
      case 2: // insert a dictionary token
        out = out.slice(0, at) + pick(random, dictionary) + out.slice(at);
        break;
      case 3: // replace a run with a dictionary token
        out = out.slice(0, at) + pick(random, dictionary) + out.slice(at + len);
        break;
      case 4: // duplicate a run
        out = out.slice(0, at + len) + out.slice(at, at + len) + out.slice(at + len);
        break;
      case 5: // truncate
        out = out.slice(0, at);
        break;
      case 6: // flip ASCII case of a run
        out = out.slice(0, at) +
          [...out.slice(at, at + len)].map((c) =>
            c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()
          ).join("") + out.slice(at + len);
        break;
      case 7: // change a digit run into an extreme number
        out = out.replace(/\d+/, pick(random, ["0", "-1", "4294967296", "9".repeat(30), "1.5"]));
        break;
      default: // repeat a long run (size bomb, bounded)
        out = out.slice(0, at) + out.slice(at, at + len).repeat(1 + Math.floor(random() * 200)) +
          out.slice(at + len);
    }
  }
  return out;
}

const CASE_TIMEOUT_MS = 2_000;

/** Runs `cases` mutated inputs of `target`; see the module doc. */
export async function runFuzzTarget(
  target: FuzzTarget,
  options: { seed: number; cases: number },
): Promise<FuzzReport> {
  const report: FuzzReport = {
    target: target.name,
    seed: options.seed,
    cases: 0,
    accepted: 0,
    rejected: 0,
    failures: [],
  };
  for (let i = 0; i < options.cases; i++) {
    const caseSeed = (options.seed + i) >>> 0;
    const random = seededRandom(caseSeed);
    const input = random() < 0.05
      ? pick(random, target.corpus)
      : mutate(random, pick(random, target.corpus), target.dictionary);
    report.cases++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const started = performance.now();
      const result = target.run(input);
      if (result instanceof Promise) {
        await Promise.race([
          result,
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new HangError()), CASE_TIMEOUT_MS);
          }),
        ]);
      } else if (performance.now() - started > CASE_TIMEOUT_MS) {
        throw new HangError();
      }
      report.accepted++;
    } catch (err) {
      const allowed = target.allowed.some((cls) => err instanceof cls);
      if (!allowed) {
        report.failures.push(
          `${target.name} seed=${caseSeed}: ${
            err instanceof HangError
              ? "hang"
              : err instanceof InvariantError
              ? `invariant: ${err.message}`
              : `unexpected ${(err as Error)?.constructor?.name}: ${(err as Error)?.message}`
          } input=${JSON.stringify(input.slice(0, 200))}`,
        );
        continue;
      }
      report.rejected++;
      // Every error class used here extends OciError: messages are scanned for leaks.
      if (!(err instanceof OciError)) {
        report.failures.push(`${target.name} seed=${caseSeed}: not an OciError`);
      }
      for (const text of renderedStrings(err)) {
        const hits = findLeaks(text, FUZZ_SECRETS);
        if (hits.length > 0) {
          report.failures.push(
            `${target.name} seed=${caseSeed}: leak [${hits.join(", ")}] in ${
              JSON.stringify(text.slice(0, 200))
            }`,
          );
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }
  return report;
}

class HangError extends Error {}
