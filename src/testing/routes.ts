/**
 * Recognising the distribution-spec endpoints a test registry serves.
 *
 * @module
 */

/** The endpoint families of the distribution API. */
export type RouteName = "base" | "blob" | "upload" | "session" | "manifest" | "tags";

/** A recognised endpoint: its family, repository and path parameter. */
export interface Route {
  /** Endpoint family: `upload` is `POST …/blobs/uploads/`, `session` is `…/uploads/<id>`. */
  name: RouteName;
  /** Repository name (empty for `base`). */
  repository: string;
  /** Blob digest, upload session id, or manifest tag/digest. */
  parameter: string;
}

const NAME = "[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*)*";
const DIGEST = "[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+";
const TAG = "[\\w][\\w.-]{0,127}";

const PATTERNS: { name: RouteName; pattern: RegExp; methods: readonly string[] }[] = [
  { name: "base", pattern: /^\/v2\/?$/, methods: ["GET", "HEAD"] },
  {
    name: "upload",
    pattern: new RegExp(`^/v2/(${NAME})/blobs/uploads/?$`),
    methods: ["POST"],
  },
  {
    name: "session",
    pattern: new RegExp(`^/v2/(${NAME})/blobs/uploads/([A-Za-z0-9_-]+)$`),
    methods: ["GET", "PATCH", "PUT", "DELETE"],
  },
  {
    name: "blob",
    pattern: new RegExp(`^/v2/(${NAME})/blobs/(${DIGEST})$`),
    methods: ["GET", "HEAD", "DELETE"],
  },
  {
    name: "manifest",
    pattern: new RegExp(`^/v2/(${NAME})/manifests/(${TAG}|${DIGEST})$`),
    methods: ["GET", "HEAD", "PUT", "DELETE"],
  },
  { name: "tags", pattern: new RegExp(`^/v2/(${NAME})/tags/list$`), methods: ["GET"] },
];

/**
 * Matches a request's method and path (without query) to a distribution endpoint; undefined
 * when no endpoint has that path and method.
 *
 * @example
 * ```ts
 * import { matchRoute } from "./routes.ts";
 * console.log(matchRoute("POST", "/v2/demo/app/blobs/uploads/")?.name); // "upload"
 * ```
 */
export function matchRoute(method: string, pathname: string): Route | undefined {
  for (const { name, pattern, methods } of PATTERNS) {
    const match = pattern.exec(pathname);
    if (match === null) continue;
    if (!methods.includes(method.toUpperCase())) return undefined;
    return { name, repository: match[1] ?? "", parameter: match[2] ?? "" };
  }
  return undefined;
}
