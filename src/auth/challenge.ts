/**
 * Parsing of `WWW-Authenticate` challenges (RFC 9110 §11.6.1).
 *
 * @module
 */
import { AuthChallengeError } from "../errors/kinds.ts";

/** One authentication challenge. */
export interface Challenge {
  /** The auth scheme, lowercased: `"bearer"`, `"basic"`, … */
  scheme: string;
  /** Auth parameters with lowercased names; values unquoted and unescaped. */
  params: Record<string, string>;
  /** The token68 form, when the challenge carries one instead of parameters. */
  token68?: string;
}

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const TOKEN68_CHAR = /[A-Za-z0-9\-._~+/]/;

/**
 * Parses a `WWW-Authenticate` value into its challenges: several challenges in one value (as
 * `Headers.get` joins repeated header lines with `", "`), quoted strings with escaped quotes and
 * commas, token68, and optional whitespace around `=`. Empty list elements are skipped.
 *
 * @throws {AuthChallengeError} The value is not a challenge list. The message never quotes the
 * value: a registry chooses that text.
 *
 * @example Two challenges in one value
 * ```ts
 * import { parseChallenges } from "./challenge.ts";
 * const value = 'Bearer realm="https://auth.example/token",service="reg",' +
 *   'scope="repository:a/b:pull,push", Basic realm="x"';
 * const [bearer, basic] = parseChallenges(value);
 * console.log(bearer?.params.scope, basic?.scheme); // "repository:a/b:pull,push" "basic"
 * ```
 */
export function parseChallenges(value: string): Challenge[] {
  const p = new Parser(value);
  const challenges: Challenge[] = [];
  let current: Challenge | undefined;
  while (true) {
    p.skipListSeparators();
    if (p.atEnd()) break;
    const name = p.token();
    if (name === "") p.fail();
    p.skipWhitespace();
    if (p.peek() === "=" && current !== undefined && !p.startsToken68Padding()) {
      // `name = value`: another parameter of the current challenge.
      p.next();
      p.skipWhitespace();
      const paramValue = p.paramValue();
      const key = name.toLowerCase();
      if (!(key in current.params)) current.params[key] = paramValue;
      p.endOfElement();
      continue;
    }
    if (p.peek() === "=") p.fail(); // a parameter before any scheme
    current = { scheme: name.toLowerCase(), params: Object.create(null) };
    challenges.push(current);
    if (p.atEnd() || p.peek() === ",") continue;
    // After the scheme: token68, or the first parameter.
    const token68 = p.tryToken68();
    if (token68 !== undefined) {
      current.token68 = token68;
      p.endOfElement();
      continue;
    }
    const first = p.token();
    if (first === "") p.fail();
    p.skipWhitespace();
    if (p.peek() !== "=") p.fail();
    p.next();
    p.skipWhitespace();
    const firstValue = p.paramValue();
    current.params[first.toLowerCase()] = firstValue;
    p.endOfElement();
  }
  return challenges;
}

class Parser {
  #text: string;
  #pos = 0;
  constructor(text: string) {
    this.#text = text;
  }
  atEnd(): boolean {
    return this.#pos >= this.#text.length;
  }
  peek(): string | undefined {
    return this.#text[this.#pos];
  }
  next(): string | undefined {
    return this.#text[this.#pos++];
  }
  fail(): never {
    throw new AuthChallengeError("challenge could not be read");
  }
  skipWhitespace(): void {
    while (this.peek() === " " || this.peek() === "\t") this.#pos++;
  }
  skipListSeparators(): void {
    while (this.peek() === " " || this.peek() === "\t" || this.peek() === ",") this.#pos++;
  }
  token(): string {
    const start = this.#pos;
    while (!this.atEnd() && TCHAR.test(this.#text[this.#pos]!)) this.#pos++;
    return this.#text.slice(start, this.#pos);
  }
  /** True when `=` at the cursor is followed only by more `=`, whitespace, then `,` or end. */
  startsToken68Padding(): boolean {
    let i = this.#pos;
    while (this.#text[i] === "=") i++;
    while (this.#text[i] === " " || this.#text[i] === "\t") i++;
    return i >= this.#text.length || this.#text[i] === ",";
  }
  /** Reads a token68 when one stands at the cursor, followed by `,` or the end. */
  tryToken68(): string | undefined {
    let i = this.#pos;
    while (i < this.#text.length && TOKEN68_CHAR.test(this.#text[i]!)) i++;
    if (i === this.#pos) return undefined;
    while (this.#text[i] === "=") i++;
    let j = i;
    while (this.#text[j] === " " || this.#text[j] === "\t") j++;
    if (j < this.#text.length && this.#text[j] !== ",") return undefined;
    const value = this.#text.slice(this.#pos, i);
    this.#pos = i;
    return value;
  }
  /** A parameter value: a quoted string, or a non-empty token. */
  paramValue(): string {
    if (this.peek() === '"') return this.quotedString();
    const value = this.token();
    if (value === "") this.fail();
    return value;
  }
  quotedString(): string {
    this.next(); // opening quote
    let out = "";
    while (true) {
      const c = this.next();
      if (c === undefined) this.fail();
      if (c === '"') return out;
      if (c === "\\") {
        const escaped = this.next();
        if (escaped === undefined) this.fail();
        out += escaped;
        continue;
      }
      out += c;
    }
  }
  /** After a parameter or token68: optional whitespace, then `,` or the end. */
  endOfElement(): void {
    this.skipWhitespace();
    if (!this.atEnd() && this.peek() !== ",") this.fail();
  }
}
