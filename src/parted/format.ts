/**
 * The parted format's contract: media types, annotation keys and limits. Changing any of these
 * is a new format version.
 *
 * @module
 */
import { hasUnsafeNameText } from "../registry/untrusted_text.ts";
import { hasMixedScripts, hasSeparatorLookalike } from "../registry/name_lookalikes.ts";
import { NAME_LIMIT_BYTES, PARTIAL_SUFFIX } from "./fs_partial.ts";

/**
 * The format version recorded in the {@linkcode ANNOTATION_FORMAT_VERSION} annotation and carried
 * in the media types below.
 *
 * @example The current format version
 * ```ts
 * import { FORMAT_VERSION } from "@ocipart/ocipart/parted";
 * console.log(FORMAT_VERSION); // "1"
 * ```
 */
export const FORMAT_VERSION = "1";

/**
 * The manifest's `artifactType`: identifies a parted file artifact, format version 1.
 *
 * @example Recognising a parted manifest
 * ```ts
 * import { PARTED_ARTIFACT_TYPE } from "@ocipart/ocipart/parted";
 * console.log(PARTED_ARTIFACT_TYPE); // "application/vnd.ocipart.parted.v1"
 * ```
 */
export const PARTED_ARTIFACT_TYPE = "application/vnd.ocipart.parted.v1";

/**
 * The media type of every layer (one per part) of a parted manifest, format version 1.
 *
 * @example The media type of each part
 * ```ts
 * import { PARTED_LAYER_MEDIA_TYPE } from "@ocipart/ocipart/parted";
 * console.log(PARTED_LAYER_MEDIA_TYPE); // "application/vnd.ocipart.parted.part.v1"
 * ```
 */
export const PARTED_LAYER_MEDIA_TYPE = "application/vnd.ocipart.parted.part.v1";

/**
 * Manifest annotation: the part size in bytes, a decimal integer.
 *
 * @example Reading the part size of a manifest
 * ```ts
 * import { ANNOTATION_PART_SIZE } from "@ocipart/ocipart/parted";
 * const annotations: Record<string, string> = { "dev.ocipart.parted.v1.part-size": "536870912" };
 * console.log(annotations[ANNOTATION_PART_SIZE]); // "536870912"
 * ```
 */
export const ANNOTATION_PART_SIZE = "dev.ocipart.parted.v1.part-size";

/**
 * Manifest annotation: the sha256 digest of the whole file, `sha256:<hex>`. Pull checks it only
 * when asked (`verifyFileDigest`), with one sequential hash that follows the parts as they land.
 *
 * @example Reading the file digest of a manifest
 * ```ts
 * import { ANNOTATION_FILE_DIGEST } from "@ocipart/ocipart/parted";
 * const digest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
 * const annotations: Record<string, string> = { "dev.ocipart.parted.v1.file-digest": digest };
 * console.log(annotations[ANNOTATION_FILE_DIGEST]?.startsWith("sha256:")); // true
 * ```
 */
export const ANNOTATION_FILE_DIGEST = "dev.ocipart.parted.v1.file-digest";

/**
 * Manifest annotation: the file size in bytes, a decimal integer.
 *
 * @example Reading the file size of a manifest
 * ```ts
 * import { ANNOTATION_FILE_SIZE } from "@ocipart/ocipart/parted";
 * const annotations: Record<string, string> = { "dev.ocipart.parted.v1.file-size": "1073741824" };
 * console.log(annotations[ANNOTATION_FILE_SIZE]); // "1073741824"
 * ```
 */
export const ANNOTATION_FILE_SIZE = "dev.ocipart.parted.v1.file-size";

/**
 * Manifest annotation: the format version, {@linkcode FORMAT_VERSION}.
 *
 * @example Reading the format version of a manifest
 * ```ts
 * import { ANNOTATION_FORMAT_VERSION } from "@ocipart/ocipart/parted";
 * const annotations: Record<string, string> = { "dev.ocipart.parted.v1.format-version": "1" };
 * console.log(annotations[ANNOTATION_FORMAT_VERSION]); // "1"
 * ```
 */
export const ANNOTATION_FORMAT_VERSION = "dev.ocipart.parted.v1.format-version";

/**
 * The default part size: 512 MiB.
 *
 * @example The default part size
 * ```ts
 * import { DEFAULT_PART_SIZE } from "@ocipart/ocipart/parted";
 * console.log(DEFAULT_PART_SIZE === 512 * 1024 * 1024); // true
 * ```
 */
export const DEFAULT_PART_SIZE: number = 512 * 1024 * 1024;

/**
 * The default number of concurrent workers of push and pull.
 *
 * @example The default worker count
 * ```ts
 * import { DEFAULT_WORKERS } from "@ocipart/ocipart/parted";
 * console.log(DEFAULT_WORKERS); // 8
 * ```
 */
export const DEFAULT_WORKERS = 8;

/**
 * The most parts one artifact may have. A file that needs more is rejected by push.
 *
 * @example The smallest part size for a file
 * ```ts
 * import { MAX_PARTS } from "@ocipart/ocipart/parted";
 * const fileSize = 3 * 1024 ** 4; // 3 TiB
 * console.log(Math.ceil(fileSize / MAX_PARTS)); // 805306368 bytes: 768 MiB parts or larger
 * ```
 */
export const MAX_PARTS = 4096;

/**
 * Manifest annotation (the OCI image spec's pre-defined title; docs/format.md): the file's base
 * name, recorded by push; a pull into a directory writes the file under this name, after
 * checking it is a plain file name (see {@linkcode isPlainFileName}).
 *
 * @example Reading the file name of a manifest
 * ```ts
 * import { ANNOTATION_TITLE } from "@ocipart/ocipart/parted";
 * const annotations: Record<string, string> = { "org.opencontainers.image.title": "model.bin" };
 * console.log(annotations[ANNOTATION_TITLE]); // "model.bin"
 * ```
 */
export const ANNOTATION_TITLE = "org.opencontainers.image.title";

/**
 * Whether a caller may set annotation `key` on push: the format's own keys
 * (`dev.ocipart.parted.*`) and the title (the source's base name) are reserved.
 *
 * @example Checking a caller's annotation keys
 * ```ts
 * import { isReservedAnnotation } from "@ocipart/ocipart/parted";
 * console.log(isReservedAnnotation("org.opencontainers.image.source")); // false
 * console.log(isReservedAnnotation("dev.ocipart.parted.v1.part-size")); // true
 * ```
 */
export function isReservedAnnotation(key: string): boolean {
  return key.startsWith("dev.ocipart.parted.") || key === ANNOTATION_TITLE;
}

/** The longest title (UTF-8 bytes): the file-name limit, less the partial file's suffix. */
const TITLE_LIMIT_BYTES = NAME_LIMIT_BYTES - PARTIAL_SUFFIX.length;

// Names Windows maps to devices whatever follows the first dot (`nul.txt` is `NUL`).
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\.|$)/i;
// Characters no Windows file name may hold; `:` would also name an NTFS alternate stream.
const WINDOWS_FORBIDDEN = /[<>:"|?*]/;

/**
 * Whether `name` is a plain file name: one that stays inside the directory it is joined to,
 * shows as what it is, and names the same ordinary file on Linux, macOS and Windows. Refused:
 * - empty, `.`, `..`, or holding `/` or `\`;
 * - any character that would hide or disguise the name (the set of
 *   `src/registry/untrusted_text.ts`): controls (C0, DEL, C1), format characters such as the
 *   bidirectional U+202E (`\u202egnp.exe` shows as `exe.png`), every default-ignorable code
 *   point, joiners included (`notes\u200d.txt` lists as `notes.txt`), the Hangul and Braille
 *   fillers and other blank-looking characters (U+3164 names a file that looks blank),
 *   noncharacters, private-use and unassigned code points, and white space other than U+0020
 *   (no-break spaces, U+2000–U+200A, U+3000);
 * - a leading dot (a hidden file), `-` (`rm *` in that directory would read `-rf` as an
 *   option) or `~` (a shell reads `~name` as a home directory), leading or trailing white
 *   space, a trailing dot (Windows drops those), and Windows' forbidden characters
 *   `< > : " | ? *`;
 * - a character drawn like `/` or `\` (`a／b.bin`, `a∕b.bin`), and a dot-separated label that
 *   mixes scripts whose letters look alike (UTS #39's highly restrictive level: `pаypal.bin`
 *   with a Cyrillic `а`), see `src/registry/name_lookalikes.ts`;
 * - a name not in Unicode's NFC form (`école.bin` written with a combining accent would be a
 *   second file that looks the same as the composed one);
 * - Windows device names (`CON`, `PRN`, `AUX`, `NUL`, `COM1`…, `LPT1`…, with any extension);
 * - a name ending in {@linkcode PARTIAL_SUFFIX} (it would be taken for another pull's partial
 *   file), or longer than 240 UTF-8 bytes (the partial file's name must fit in 255).
 *
 * The same rule everywhere, so an artifact pulls into a directory alike on every system.
 *
 * @example Titles a pull into a directory accepts and refuses
 * ```ts
 * import { isPlainFileName } from "@ocipart/ocipart/parted";
 * console.log(isPlainFileName("model.safetensors")); // true
 * console.log(isPlainFileName("../etc/passwd")); // false
 * console.log(isPlainFileName("\u202egnp.exe")); // false: shows as "exe.png"
 * console.log(isPlainFileName("notes\u200d.txt")); // false: lists as "notes.txt"
 * console.log(isPlainFileName(".bashrc"), isPlainFileName("nul.txt")); // false false
 * console.log(isPlainFileName("-rf"), isPlainFileName("a\uff0fb.bin")); // false false
 * ```
 */
export function isPlainFileName(name: string): boolean {
  if (name === "" || /^[.~-]/.test(name) || /[/\\]/.test(name)) return false;
  if (name !== name.normalize("NFC")) return false;
  if (hasSeparatorLookalike(name) || hasMixedScripts(name)) return false;
  if (hasUnsafeNameText(name) || WINDOWS_FORBIDDEN.test(name) || WINDOWS_DEVICE.test(name)) {
    return false;
  }
  if (/^\s|[\s.]$/u.test(name)) return false;
  if (name.toLowerCase().endsWith(PARTIAL_SUFFIX)) return false;
  return new TextEncoder().encode(name).byteLength <= TITLE_LIMIT_BYTES;
}
