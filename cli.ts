/**
 * Reference command-line tool (being built).
 *
 * @module
 */
if (import.meta.main) {
  console.error("usage: ocipart push|pull [flags] <ref> <file>");
  Deno.exit(2);
}
