/**
 * Runs the RSS check (`rss.ts`) in a process of its own and prints its report as JSON: the
 * process's memory is then the check's alone, whatever other tests run beside it in the test
 * runner's process. Arguments: transfers, warm-up, push every.
 *
 * @module
 */
import { runRssCheck } from "./rss.ts";

const [transfers, warmup, pushEvery] = Deno.args.map(Number);
console.log(JSON.stringify(await runRssCheck({ transfers, warmup, pushEvery })));
