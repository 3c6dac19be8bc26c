/**
 * What the tests of pulls into streams and pushes from streams share: a stream that keeps what it
 * is given, a byte stream to push from, and the entries of a spill directory.
 */
/** A stream that keeps a copy of every chunk written, and the bytes it was given. */
export function collector(): { writable: WritableStream<Uint8Array>; bytes: () => Uint8Array } {
  const chunks: Uint8Array[] = [];
  return {
    writable: new WritableStream<Uint8Array>({ write: (c) => void chunks.push(c.slice()) }),
    bytes: () => {
      const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
      chunks.reduce((at, c) => (out.set(c, at), at + c.byteLength), 0);
      return out;
    },
  };
}

/** The names in `dir`. */
export async function entries(dir: string): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names;
}

/** A byte stream (BYOB-capable) of `bytes`, `piece` bytes a read, failing with `fail` at the end. */
export function byteSource(
  bytes: Uint8Array,
  piece: number,
  fail?: Error,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= bytes.byteLength) {
        if (fail) controller.error(fail);
        else {
          controller.close();
          controller.byobRequest?.respond(0);
        }
        return;
      }
      const request = controller.byobRequest;
      if (request?.view) {
        const view = new Uint8Array(
          request.view.buffer,
          request.view.byteOffset,
          request.view.byteLength,
        );
        const n = Math.min(piece, view.byteLength, bytes.byteLength - at);
        view.set(bytes.subarray(at, at + n));
        at += n;
        request.respond(n);
      } else {
        const n = Math.min(piece, bytes.byteLength - at);
        controller.enqueue(bytes.slice(at, at + n));
        at += n;
      }
    },
  });
}
