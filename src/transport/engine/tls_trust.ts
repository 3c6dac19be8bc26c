/**
 * Which server certificates HTTPS trusts, the same on every client path of `HttpTransport`: the
 * runtime's roots plus the caller's `caCerts` (or nothing verified with `insecureTls`), without
 * any permission beyond the network's.
 *
 * A certificate in `caCerts` that names the host itself (a self-signed server certificate made
 * with `openssl req -x509`, which marks it as a CA) is accepted when the server presents exactly
 * that certificate, as curl's `--cacert` does. The runtime's own TLS clients refuse a CA
 * certificate used by a server, so such hosts are reached through `node:tls`, whose verifier
 * accepts a presented certificate that is byte for byte one of the trusted ones. So is every
 * host while `caCerts` holds a self-signed server certificate at all: the runtime would refuse
 * it whatever its names, and only `node:tls` tells a host the certificate does not name (a
 * wrong name) from a certificate that is not the one given.
 *
 * @module
 */
import * as tls from "node:tls";
import { isIP } from "node:net";
import { X509Certificate } from "node:crypto";

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function certificates(caCerts: readonly string[]): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (const pem of caCerts) {
    for (const block of pem.match(PEM_BLOCK) ?? []) {
      try {
        out.push(new X509Certificate(block));
      } catch { /* not a certificate: the TLS clients ignore it too */ }
    }
  }
  return out;
}

// Whether `cert` is valid for `host` as a server certificate: its alternative names, or without
// any, its common name (as TLS clients fall back to it for host names).
function namesSomeHost(cert: X509Certificate): boolean {
  return /(^|, )(DNS:|IP Address:)/.test(cert.subjectAltName ?? "");
}

function namesHost(cert: X509Certificate, host: string): boolean {
  if (isIP(host) !== 0) return cert.checkIP(host) !== undefined;
  if (cert.checkHost(host) !== undefined) return true;
  if (cert.subjectAltName !== undefined) return false;
  const common = /^CN=(.*)$/m.exec(cert.subject)?.[1];
  return common !== undefined && common.toLowerCase() === host.toLowerCase();
}

// Whether `cert` is a self-signed server certificate (as `openssl req -x509` makes one: a CA by
// its constraints, but with a host's names), not an authority that signs others. A root of a
// system bundle may carry other alternative names (an e-mail address): it names no host.
function selfSignedServer(cert: X509Certificate): boolean {
  if (cert.subject !== cert.issuer || (cert.ca && !namesSomeHost(cert))) return false;
  try {
    return cert.verify(cert.publicKey);
  } catch {
    return false;
  }
}

/** `node:tls` connection options that carry the trust decision. */
export type NodeTlsOptions = Pick<tls.ConnectionOptions, "ca" | "secureContext"> & {
  rejectUnauthorized?: false;
};

function nodeOptions(caCerts: readonly string[], insecure: boolean): NodeTlsOptions {
  const unverified = insecure ? { rejectUnauthorized: false as const } : {};
  if (!("Deno" in globalThis)) {
    // Node: `ca` replaces the default roots, so the caller's certificates are added to them.
    return caCerts.length === 0
      ? unverified
      : { ca: [...tls.rootCertificates, ...caCerts], ...unverified };
  }
  // Deno: `ca` replaces the runtime's roots too, and without it `node:https` reads the extra
  // roots of NODE_EXTRA_CA_CERTS under a permission of its own (--allow-sys=ca). A context on
  // the runtime's roots, extended with the caller's, carries the trust; the empty `ca` only
  // keeps that lookup away (a given context wins over `ca`).
  const secureContext = tls.createSecureContext({});
  const native = (secureContext as unknown as { context: { addCACert(pem: string): void } })
    .context;
  for (const pem of caCerts) native.addCACert(pem);
  return { secureContext, ca: [], ...unverified };
}

/** The trust of one transport. */
export class TlsTrust {
  /** Options for every `node:tls` connection (direct, guarded, tunnelled). */
  readonly nodeOptions: NodeTlsOptions;
  readonly #insecure: boolean;
  readonly #caCerts: readonly string[];
  #parsed: X509Certificate[] | undefined;
  #anySelfSigned: boolean | undefined;
  readonly #pinned = new Map<string, boolean>();

  /**
   * The trust of `caCerts` (PEM texts, each one or more certificates) in addition to the
   * runtime's roots; with `insecure`, nothing is verified.
   *
   * @example
   * ```ts
   * import { TlsTrust } from "./tls_trust.ts";
   * const trust = new TlsTrust([], false);
   * console.log(trust.runtimeVerifies("registry.example")); // true
   * ```
   */
  constructor(caCerts: readonly string[] | undefined, insecure: boolean) {
    this.#caCerts = caCerts ?? [];
    this.#insecure = insecure;
    this.nodeOptions = nodeOptions(this.#caCerts, insecure);
  }

  /**
   * Whether the runtime's own TLS clients (its HTTP client, its TLS sockets) decide about
   * `hostname` as `node:tls` does: not when nothing is verified, nor when a certificate of
   * `caCerts` names the host (the server may present it itself), nor while `caCerts` holds a
   * self-signed server certificate (the runtime would call a wrong name an unknown certificate).
   *
   * @example
   * ```ts
   * import { TlsTrust } from "./tls_trust.ts";
   * console.log(new TlsTrust([], true).runtimeVerifies("registry.example")); // false
   * ```
   */
  runtimeVerifies(hostname: string): boolean {
    if (this.#insecure) return false;
    if (this.#caCerts.length === 0) return true;
    this.#parsed ??= certificates(this.#caCerts);
    this.#anySelfSigned ??= this.#parsed.some(selfSignedServer);
    if (this.#anySelfSigned) return false;
    const host = hostname.replace(/^\[|\]$/g, "");
    let pinned = this.#pinned.get(host);
    if (pinned === undefined) {
      pinned = this.#parsed.some((cert) => namesHost(cert, host));
      this.#pinned.set(host, pinned);
    }
    return !pinned;
  }
}
