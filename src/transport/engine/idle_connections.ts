/**
 * The kept-alive connections of the transport's own download client, per route: an answer read
 * to its end leaves its connection here, and the next request of the same route takes it
 * instead of dialing. A route names everything a connection was vetted and secured for (scheme,
 * host, port, the TLS kind, the proxy), so a kept connection serves only requests its dial
 * would have made alike.
 *
 * @module
 */
import type { ByteDuplex } from "./dial.ts";

/** A connection the pool can hold: it may be told it is idle (not keeping the process alive). */
export interface PooledConnection extends ByteDuplex {
  /** Called with true when the connection goes idle in the pool, false when taken again. */
  idle?(idle: boolean): void;
  /** False once the connection is known to have ended (the peer closed it while idle). */
  readonly alive?: boolean;
}

interface Kept {
  readonly conn: PooledConnection;
  readonly since: number;
}

// A connection idle for longer is closed rather than reused: servers and load balancers drop
// idle connections after 60 s or more, and a reuse that meets a dropped one costs a new dial.
const IDLE_LIMIT_MS = 30_000;

/**
 * Idle connections per route, at most `maxIdlePerRoute` each, and the connections in use, so
 * that {@linkcode IdleConnections.close} ends every one of them.
 *
 * @example Keeping a connection for the next request
 * ```ts
 * import { IdleConnections } from "./idle_connections.ts";
 * const pool = new IdleConnections(4);
 * const conn = { read: () => Promise.resolve(null), write: () => Promise.resolve(), close() {} };
 * pool.inUse(conn, pool.closes);
 * pool.keep("http://r.example", conn);
 * console.log(pool.take("http://r.example") === conn); // true
 * pool.close();
 * ```
 */
export class IdleConnections {
  readonly #maxIdlePerRoute: number;
  readonly #idle = new Map<string, Kept[]>();
  readonly #busy = new Set<PooledConnection>();
  #closes = 0;

  /** A pool keeping at most `maxIdlePerRoute` idle connections per route. */
  constructor(maxIdlePerRoute: number) {
    this.#maxIdlePerRoute = maxIdlePerRoute;
  }

  /** The most recently kept live connection of `route`, now in use; undefined when none. */
  take(route: string): PooledConnection | undefined {
    const kept = this.#idle.get(route);
    const now = Date.now();
    while (kept !== undefined && kept.length > 0) {
      const { conn, since } = kept.pop()!;
      if (conn.alive === false || now - since > IDLE_LIMIT_MS) {
        conn.close();
        continue;
      }
      conn.idle?.(false);
      this.#busy.add(conn);
      return conn;
    }
    this.#idle.delete(route);
    return undefined;
  }

  /** How many times the pool was closed: a request started before a close belongs to it. */
  get closes(): number {
    return this.#closes;
  }

  /**
   * Counts `conn`, dialed by a request that began when {@linkcode IdleConnections.closes} was
   * `closes`, as in use until it is kept or {@linkcode IdleConnections.done}; false (`conn` not
   * counted, for its caller to close) when the pool was closed since the request began.
   */
  inUse(conn: PooledConnection, closes: number): boolean {
    if (closes !== this.#closes) return false;
    this.#busy.add(conn);
    return true;
  }

  /**
   * Keeps `conn`, whose answer was read to its end, for the next request of `route`; closes it
   * when the route holds enough or the pool was closed meanwhile.
   */
  keep(route: string, conn: PooledConnection): void {
    if (!this.#busy.delete(conn)) return conn.close();
    const kept = this.#idle.get(route) ?? [];
    if (kept.length >= this.#maxIdlePerRoute) return conn.close();
    conn.idle?.(true);
    kept.push({ conn, since: Date.now() });
    this.#idle.set(route, kept);
  }

  /** Closes `conn` and forgets it. */
  done(conn: PooledConnection): void {
    this.#busy.delete(conn);
    conn.close();
  }

  /** Closes every idle connection of `route` (one of them turned out dropped by the server). */
  drop(route: string): void {
    for (const { conn } of this.#idle.get(route) ?? []) conn.close();
    this.#idle.delete(route);
  }

  /** Closes every connection, idle or in use; the pool stays usable for later requests. */
  close(): void {
    this.#closes++;
    for (const kept of this.#idle.values()) for (const { conn } of kept) conn.close();
    this.#idle.clear();
    for (const conn of this.#busy) conn.close();
    this.#busy.clear();
  }
}
