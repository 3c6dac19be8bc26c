/**
 * A TCP relay on a free loopback port to `127.0.0.1:<target>` that counts the bytes it passes
 * from the server to the client. It writes each piece before reading the next, so it passes on
 * the client's own backpressure: what it counted is what the client took from its socket (plus
 * kernel buffers).
 *
 * API:
 * - `startCountingRelay(targetPort) → { port, fromServer(), close(), [Symbol.dispose] }`.
 *
 * @module
 */

/** A running relay. */
export interface CountingRelay {
  readonly port: number;
  /** Bytes passed from the server to clients so far, over every connection. */
  fromServer(): number;
  close(): void;
  [Symbol.dispose](): void;
}

/** See the module doc. */
export function startCountingRelay(targetPort: number): CountingRelay {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let passed = 0;
  const pipe = async (from: Deno.Conn, to: Deno.Conn, count: boolean) => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buffer);
        if (n === null) break;
        let written = 0;
        while (written < n) written += await to.write(buffer.subarray(written, n));
        if (count) passed += n;
      }
    } catch { /* either side closed */ }
    for (const conn of [from, to]) {
      try {
        conn.close();
      } catch { /* closed */ }
      open.delete(conn);
    }
  };
  (async () => {
    try {
      for await (const client of listener) {
        open.add(client);
        Deno.connect({ hostname: "127.0.0.1", port: targetPort }).then((server) => {
          open.add(server);
          pipe(client, server, false);
          pipe(server, client, true);
        }, () => client.close());
      }
    } catch { /* closed */ }
  })();
  const close = () => {
    try {
      listener.close();
    } catch { /* closed */ }
    for (const conn of open) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    open.clear();
  };
  return {
    port: (listener.addr as Deno.NetAddr).port,
    fromServer: () => passed,
    close,
    [Symbol.dispose]: close,
  };
}
