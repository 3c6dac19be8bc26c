/**
 * The whole-run leak scan: reads every error string collected under a directory during a test
 * or stress run (by `tests/fixtures/error_observer.ts` and the scenarios' `recordErrors` /
 * `recordText`) and checks each against the leak rules of `leak_scan.ts` plus the test suite's
 * planted passwords and secrets.
 *
 * Usage: `deno run --allow-read --allow-env tests/reliability/leak_report.ts [dir]` (default:
 * `$OCIPART_LEAK_SCAN_DIR`), also `deno task leak-scan`. Prints one summary line
 * (`leak scan: <n> distinct error strings (<m> library errors observed in <i> isolates,
 * <s> scenario strings): <h> hits`) and every offending string; exits 1 on a hit, and when
 * nothing was collected (the observer did not run, so zero hits would prove nothing).
 *
 * API:
 * - `scanLeakDir(dir: string): Promise<LeakReport>`.
 * - `formatLeakReport(report: LeakReport): string` — the summary line.
 * - `LeakReport`: `{ files, isolates, errorsObserved, strings, scenarioStrings, hits }`, where
 *   `hits` are `{ text, where, rules }` with planted secrets redacted.
 *
 * @module
 */
import { findLeaks, SUITE_SECRETS } from "./leak_scan.ts";

/** One offending string. */
export interface LeakHit {
  /** The string, planted secrets replaced by `<secret>`. */
  text: string;
  /** Where it was built (`src/...:line`) or which scenario recorded it. */
  where: string;
  /** The names of the rules it breaks. */
  rules: string[];
}

/** What a scan found. */
export interface LeakReport {
  /** Files read. */
  files: number;
  /**
   * Isolates (test modules, the stress process, driver child processes) that reported how many
   * errors they saw: those that were not killed.
   */
  isolates: number;
  /** Errors of the package built in those isolates (all, before de-duplication). */
  errorsObserved: number;
  /** Distinct strings scanned. */
  strings: number;
  /** Of which recorded by reliability scenarios (rendered errors, child standard error). */
  scenarioStrings: number;
  /** Strings breaking a rule. */
  hits: LeakHit[];
}

/** Scans every `.jsonl` file under `dir`. */
export async function scanLeakDir(dir: string): Promise<LeakReport> {
  const report: LeakReport = {
    files: 0,
    isolates: 0,
    errorsObserved: 0,
    strings: 0,
    scenarioStrings: 0,
    hits: [],
  };
  const texts = new Map<string, string>(); // text → where
  const scenario = new Set<string>();
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".jsonl")) continue;
    report.files++;
    let counted = false;
    const content = await Deno.readTextFile(`${dir}/${entry.name}`);
    for (const line of content.split("\n")) {
      if (line.trim() === "") continue;
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line);
      } catch {
        continue; // a line cut by a SIGKILLed writer
      }
      if (record.kind === "count" && typeof record.errors === "number") {
        if (!counted) report.isolates++;
        counted = true;
        report.errorsObserved += record.errors;
      } else if (record.kind === "error" && typeof record.text === "string") {
        if (!texts.has(record.text)) texts.set(record.text, String(record.where ?? "?"));
      } else if (typeof record.source === "string" && typeof record.text === "string") {
        if (!texts.has(record.text)) {
          texts.set(record.text, `scenario ${record.source}`);
          scenario.add(record.text);
        }
      }
    }
  }
  report.strings = texts.size;
  report.scenarioStrings = scenario.size;
  for (const [text, where] of texts) {
    const rules = findLeaks(text, [...SUITE_SECRETS]);
    if (rules.length > 0) report.hits.push({ text: redact(text), where, rules });
  }
  return report;
}

/** The summary line of a scan. */
export function formatLeakReport(report: LeakReport): string {
  return `leak scan: ${report.strings} distinct error strings (${report.errorsObserved} library ` +
    `errors observed in ${report.isolates} isolates, ${report.scenarioStrings} scenario ` +
    `strings): ${report.hits.length} hits`;
}

function redact(text: string): string {
  let out = text;
  for (const secret of SUITE_SECRETS) out = out.split(secret).join("<secret>");
  return out;
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? Deno.env.get("OCIPART_LEAK_SCAN_DIR");
  if (dir === undefined || dir === "") {
    console.error("leak scan: no directory (pass one or set OCIPART_LEAK_SCAN_DIR)");
    Deno.exit(2);
  }
  let report: LeakReport;
  try {
    report = await scanLeakDir(dir);
  } catch (err) {
    console.error(`leak scan: cannot read the collected strings: ${String(err)}`);
    Deno.exit(1);
  }
  for (const hit of report.hits) {
    console.log(`leak: [${hit.rules.join(", ")}] ${hit.where}: ${hit.text}`);
  }
  console.log(formatLeakReport(report));
  if (report.files === 0 || report.strings === 0) {
    console.log("leak scan: nothing was collected; the error observer did not run");
    Deno.exit(1);
  }
  Deno.exit(report.hits.length === 0 ? 0 : 1);
}
