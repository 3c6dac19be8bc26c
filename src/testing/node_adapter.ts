/**
 * Bridges node:http requests and responses to the fetch-shaped registry handler.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Converts a node:http request to a web `Request` whose URL origin is `http://<Host header>`
 * (like Distribution, which builds absolute Locations from the Host the client used).
 *
 * @example
 * ```ts ignore
 * import { createServer } from "node:http";
 * import { toWebRequest } from "./node_adapter.ts";
 * createServer((req, res) => console.log(toWebRequest(req, "127.0.0.1:1").url));
 * ```
 */
export function toWebRequest(req: IncomingMessage, fallbackHost: string): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  }
  const host = req.headers.host ?? fallbackHost;
  const method = (req.method ?? "GET").toUpperCase();
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(`http://${host}${req.url ?? "/"}`, {
    method,
    headers,
    body: hasBody ? nodeBodyStream(req) : null,
    // @ts-ignore: `duplex` is required for streamed request bodies but missing from some typings
    duplex: "half",
  });
}

/**
 * Writes a web `Response` to a node:http response, streaming its body with backpressure.
 *
 * @example
 * ```ts ignore
 * import { writeWebResponse } from "./node_adapter.ts";
 * // inside a node:http handler:
 * // await writeWebResponse(res, new Response("hi"));
 * ```
 */
export async function writeWebResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => headers[name] = value);
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) break;
      if (!res.write(value)) {
        await new Promise<void>((resolve) => {
          const finish = () => {
            res.off("drain", finish);
            res.off("close", finish);
            resolve();
          };
          res.on("drain", finish);
          res.on("close", finish);
        });
      }
    }
  } finally {
    reader.releaseLock();
  }
  res.end();
}

/**
 * A web stream of a node:http request body with backpressure. Cancelling it discards the rest
 * of the body (the connection stays usable); a body cut off by the client errors the stream.
 *
 * @example
 * ```ts ignore
 * import { createServer } from "node:http";
 * import { nodeBodyStream } from "./node_adapter.ts";
 * createServer(async (req, res) => res.end(String((await new Response(nodeBodyStream(req)).bytes()).length)));
 * ```
 */
export function nodeBodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.on("data", (chunk: Uint8Array) => {
        if (!open) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) req.pause();
      });
      req.on("end", () => {
        if (!open) return;
        open = false;
        controller.close();
      });
      const fail = (err: unknown) => {
        if (!open) return;
        open = false;
        controller.error(err);
      };
      req.on("error", fail);
      req.on("close", () => {
        if (!req.complete) fail(new Error("request body cut off"));
      });
    },
    pull() {
      req.resume();
    },
    cancel() {
      open = false;
      req.resume(); // discard the rest
    },
  }, { highWaterMark: 4 << 20, size: (chunk) => chunk.byteLength });
}
