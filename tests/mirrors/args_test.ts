/** `--mirror` and `--registries-conf` on the command line. */
import { assertEquals, assertThrows } from "../fixtures/assert.ts";
import { parseCommandLine } from "../../src/cli/arguments/args.ts";
import { UsageError } from "../../src/cli/arguments/usage_error.ts";

const REF = "registry.example/fleet/model:v1";

Deno.test("args: --mirror is repeatable and kept in order on pull, inspect, verify and copy", () => {
  const flags = ["--mirror", "a.lan:5000", "--mirror", "b.lan/ns", "--registries-conf", "r.conf"];
  for (
    const argv of [
      ["pull", ...flags, REF, "out.bin"],
      ["inspect", ...flags, REF],
      ["verify", ...flags, REF, "f.bin"],
      ["copy", ...flags, REF, "other.example/x:v1"],
    ]
  ) {
    const command = parseCommandLine(argv) as { mirrors: string[]; registriesConf: string };
    assertEquals(command.mirrors, ["a.lan:5000", "b.lan/ns"], argv[0]);
    assertEquals(command.registriesConf, "r.conf", argv[0]);
  }
});

Deno.test("args: push, login and logout take no mirror flags", () => {
  for (
    const argv of [
      ["push", "--mirror", "a.lan", REF, "f.bin"],
      ["login", "--username", "u", "--password-stdin", "--mirror", "a.lan", "r.example"],
      ["logout", "--registries-conf", "r.conf", "r.example"],
    ]
  ) {
    assertThrows(() => parseCommandLine(argv), UsageError);
  }
});

Deno.test("args: a --mirror with a scheme, a path that is no namespace, or control characters is refused", () => {
  for (const bad of ["https://a.lan", "a.lan/", "a.lan/UP", "a.lan:99999", "a\u001b[31m.lan", ""]) {
    assertThrows(
      () => parseCommandLine(["pull", "--mirror", bad, REF, "o"]),
      UsageError,
      "--mirror",
    );
  }
  assertThrows(
    () => parseCommandLine(["pull", "--registries-conf", "", REF, "o"]),
    UsageError,
    "--registries-conf",
  );
});
