/**
 * The public surface: what each entry point of `deno.json` exports, and that every exported
 * symbol (the CLI's `main` too) documents itself with a titled example that is not excluded from
 * the example run and imports from the package.
 */
import { assertEquals } from "../fixtures/assert.ts";
import * as root from "@ocipart/ocipart";
import * as auth from "@ocipart/ocipart/auth";
import * as blob from "@ocipart/ocipart/blob";
import * as errors from "@ocipart/ocipart/errors";
import * as parted from "@ocipart/ocipart/parted";
import * as testing from "@ocipart/ocipart/testing";
import * as transport from "@ocipart/ocipart/transport";

const ENTRY_POINTS = [
  "mod.ts",
  "cli.ts",
  "src/parted/mod.ts",
  "src/blob/mod.ts",
  "src/auth/mod.ts",
  "src/errors/mod.ts",
  "src/transport/mod.ts",
  "src/testing/mod.ts",
];

function valueNames(module: object): string[] {
  return Object.keys(module).sort();
}

Deno.test("the root export holds the clients, their helpers and the error classes, nothing internal", () => {
  assertEquals(valueNames(root), [
    "BlobClient",
    "DestinationExistsError",
    "DigestMismatchError",
    "NotFoundError",
    "NotPartedArtifactError",
    "OciError",
    "PartTooLargeError",
    "PartedClient",
    "SentinelError",
    "TooLargeError",
    "UnauthorizedError",
    "VERSION",
    "createAuthFetch",
    "findError",
    "fromFile",
    "fromStream",
    "retryable",
    "sha256Digest",
    "statusCode",
    "toDirectory",
    "toFile",
    "toStream",
  ]);
});

Deno.test("each subpath exports what its users call", () => {
  assertEquals(valueNames(blob), ["BlobClient"]);
  assertEquals(valueNames(auth), [
    "AuthRetryError",
    "DockerConfigFileError",
    "InputFileError",
    "OciError",
    "TOKEN_OPERATION",
    "TokenServiceError",
    "anonymousCredentials",
    "createAuthFetch",
    "dockerConfigCredentials",
    "dockerConfigPath",
    "eraseDockerLogin",
    "readInputFile",
    "saveDockerLogin",
    "staticCredentials",
  ]);
  assertEquals(
    valueNames(transport),
    [
      "HttpTransport",
      "fileBody",
      "guardedExternalTransport",
      "isForbiddenPeerAddress",
      "causeCodes",
      "ExchangeError",
      "failureReason",
    ].sort(),
  );
  assertEquals(valueNames(testing), ["MemoryStore", "RegistryHandler", "startMemoryRegistry"]);
  assertEquals(
    valueNames(parted),
    [
      "ANNOTATION_FILE_DIGEST",
      "ANNOTATION_FILE_SIZE",
      "ANNOTATION_FORMAT_VERSION",
      "ANNOTATION_PART_SIZE",
      "ANNOTATION_TITLE",
      "DEFAULT_PART_SIZE",
      "DEFAULT_WORKERS",
      "DestinationExistsError",
      "FORMAT_VERSION",
      "MAX_PARTS",
      "OciError",
      "PARTED_ARTIFACT_TYPE",
      "PARTED_LAYER_MEDIA_TYPE",
      "PARTIAL_SUFFIX",
      "PartSizeError",
      "PartedClient",
      "TooManyPartsError",
      "fromFile",
      "fromStream",
      "isPlainFileName",
      "isReservedAnnotation",
      "parseRegistriesConf",
      "readRegistriesConf",
      "registriesConfLocation",
      "toDirectory",
      "toFile",
      "toStream",
      // What the CLI and any program that shows registry-chosen text or explains a failure calls.
      "NoFileNameError",
      "PartialInUseError",
      "DISTRIBUTION_ERROR_CODES",
      "REFERENCE_RULES",
      "distributionErrorCodes",
      "errnoCode",
      "errnoMeaning",
      "hasUnsafeText",
      "isMirrorLocation",
      "jsonText",
      "mirrorHost",
      "parseReference",
      "registryOrigin",
      "replaceUnsafeText",
      "terminalText",
      "wholeBinaryUnit",
    ].sort(),
  );
});

Deno.test("./errors exports the shared error classes, all of them OciErrors", () => {
  const classes = Object.entries(errors).filter(([name]) => /^[A-Z]\w*Error$/.test(name));
  for (const [name, value] of classes) {
    assertEquals(
      value === errors.OciError || value.prototype instanceof errors.OciError,
      true,
      name,
    );
  }
  assertEquals(classes.length, 26);
});

interface DocTag {
  kind: string;
  doc?: string;
}
interface DocSymbol {
  name: string;
  declarations: { kind: string; jsDoc?: { tags?: DocTag[] } }[];
}

/** The declarations (with their examples) of every symbol the entry points export. */
async function exportedExamples(): Promise<{ name: string; examples: string[] }[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...ENTRY_POINTS],
    cwd: new URL("../../", import.meta.url),
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assertEquals(output.code, 0, "deno doc --json failed");
  const doc = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    nodes: Record<string, { symbols: DocSymbol[] }>;
  };
  const found: { name: string; examples: string[] }[] = [];
  for (const node of Object.values(doc.nodes)) {
    for (const symbol of node.symbols) {
      // A re-export inside another entry point's graph appears as a "reference" declaration.
      for (const declaration of symbol.declarations.filter((d) => d.kind !== "reference")) {
        const tags = (declaration.jsDoc?.tags ?? []).filter((tag) => tag.kind === "example");
        found.push({ name: symbol.name, examples: tags.map((tag) => tag.doc ?? "") });
      }
    }
  }
  return found;
}

/** Exported symbols of the entry points whose JSDoc lacks a titled, runnable example. */
async function symbolsWithoutRunnableExample(): Promise<string[]> {
  const missing = new Set<string>();
  for (const { name, examples } of await exportedExamples()) {
    const titled = examples.some((doc) => !doc.trimStart().startsWith("```"));
    const ignored = examples.some((doc) => /```ts\s+(ignore|no-eval|no-check)/.test(doc));
    if (!titled || ignored) missing.add(name);
  }
  return [...missing].sort();
}

Deno.test("every exported symbol has a titled example that the example run executes", async () => {
  assertEquals(await symbolsWithoutRunnableExample(), []);
});

Deno.test("every example of an exported symbol imports from the package, as a user would", async () => {
  const internal = new Set<string>();
  for (const { name, examples } of await exportedExamples()) {
    if (examples.some((doc) => /from\s+["']\.{1,2}\//.test(doc))) internal.add(name);
  }
  assertEquals([...internal].sort(), []);
});
