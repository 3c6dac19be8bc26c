/**
 * The registries configuration reader and the prefix rules of the mirror table.
 */
import { assert, assertEquals, assertRejects, assertThrows } from "../fixtures/assert.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { LocalFileError } from "../../src/errors/kinds.ts";
import {
  parseRegistriesConf,
  readRegistriesConf,
  registriesConfLocation,
} from "../../src/parted/registries_conf.ts";
import { connect, partedSession } from "../../src/parted/connection.ts";
import { mirrorsOf, withMirrorHosts } from "../../src/remote/mirror_table.ts";
import { parseReference } from "../../src/registry/reference.ts";

const FULL = `
unqualified-search-registries = ["docker.io", "quay.io"]
short-name-mode = "permissive"
credential-helpers = ["containers-auth.json"]
some-future-key = { nested = true }

[aliases]
"fedora" = "registry.fedoraproject.org/fedora"

[[registry]]
prefix = "ghcr.io"
location = "ghcr.io"
insecure = false
blocked = false
unknown-registry-key = 7

[[registry.mirror]]
location = "cache-0.lan:5000"

[[registry.mirror]]
location = "cache-1.lan/mirrors/ghcr/"
insecure = true
pull-from-mirror = "digest-only"
unknown-mirror-key = "x"

[[registry.mirror]]
location = "fresh.lan"
pull-from-mirror = "tag-only"

[[registry]]
location = "ghcr.io/acme/private"

[[registry]]
prefix = "*.corp.example"
location = ""
mirror-by-digest-only = true

[[registry.mirror]]
location = "corp-cache.lan"
`;

Deno.test("registries.conf: mirrors, modes and insecure are read; unknown keys are ignored", () => {
  const table = parseRegistriesConf(FULL);
  assertEquals(Object.keys(table).sort(), ["*.corp.example", "ghcr.io", "ghcr.io/acme/private"]);
  assertEquals(table["ghcr.io"], [
    { location: "cache-0.lan:5000", pullFromMirror: "all", plainHttp: false, insecure: false },
    // The trailing slash is dropped, as the containers tools do.
    {
      location: "cache-1.lan/mirrors/ghcr",
      pullFromMirror: "digest-only",
      plainHttp: false,
      insecure: true,
    },
    { location: "fresh.lan", pullFromMirror: "tag-only", plainHttp: false, insecure: false },
  ]);
  assertEquals(table["ghcr.io/acme/private"], [], "a longer prefix without mirrors");
  assertEquals(table["*.corp.example"][0].pullFromMirror, "digest-only");
});

Deno.test("registries.conf: which mirrors a reference gets, and where its repository is there", () => {
  const table = parseRegistriesConf(FULL);
  const byTag = mirrorsOf(table, parseReference("ghcr.io/acme/model:v1"));
  assertEquals(byTag.map((m) => [m.host, m.repository, m.resolvesTag]), [
    ["cache-0.lan:5000", "acme/model", true],
    ["cache-1.lan", "mirrors/ghcr/acme/model", false],
    ["fresh.lan", "acme/model", true],
  ]);
  // insecure: HTTPS without verification first (the host's settings), then plain HTTP.
  assertEquals(byTag.map((m) => m.plainHttpFallback), [false, true, false]);
  const settings = withMirrorHosts(new Map(), table, "registries configuration");
  assertEquals(Object.fromEntries(settings), {
    "cache-1.lan": { plainHttp: false, insecureTls: true },
  });
  const stack = partedSession({ registryTable: settings, mirrors: table });
  try {
    const { repo } = connect(stack, parseReference("ghcr.io/acme/model:v1"), true);
    const blob = { digest: `sha256:${"b".repeat(64)}` };
    assertEquals(repo.mirrors?.candidates(blob).map((m) => m.repo.origin.href), [
      "https://cache-0.lan:5000/",
      "https://cache-1.lan/",
      "http://cache-1.lan/",
      "https://fresh.lan/",
    ]);
  } finally {
    stack.close();
  }
  const digest = `sha256:${"a".repeat(64)}`;
  const byDigest = mirrorsOf(table, parseReference(`ghcr.io/acme/model@${digest}`));
  assertEquals(byDigest.map((m) => m.host), ["cache-0.lan:5000", "cache-1.lan"], "no tag-only");
  assertEquals(mirrorsOf(table, parseReference("ghcr.io/acme/private:v1")), []);
  assertEquals(mirrorsOf(table, parseReference("ghcr.io/acme/private/sub:v1")), []);
  // "ghcr.io/acme/privatex" is not under "ghcr.io/acme/private": the registry's mirrors apply.
  assertEquals(mirrorsOf(table, parseReference("ghcr.io/acme/privatex:v1")).length, 3);
  assertEquals(mirrorsOf(table, parseReference("ghcr.io:8443/acme/m:v1")), [], "another port");
  const corp = mirrorsOf(table, parseReference("a.b.corp.example:5000/team/m:v1"));
  assertEquals(corp.map((m) => [m.host, m.repository, m.resolvesTag]), [
    ["corp-cache.lan", "team/m", false],
  ]);
  assertEquals(mirrorsOf(table, parseReference("corp.example/team/m:v1")), [], "not a subdomain");
  assertEquals(mirrorsOf(table, parseReference("quay.io/a/b:v1")), []);
});

Deno.test("registries.conf: a prefix maps onto its mirror's location (the containers rewrite)", () => {
  const table = parseRegistriesConf(`
[[registry]]
prefix = "example.com/foo"
location = "internal.example.net/bar"
[[registry.mirror]]
location = "mirror-0.lan/mirror-for-foo"
`);
  const [mirror] = mirrorsOf(table, parseReference("example.com/foo/image:latest"));
  assertEquals([mirror.host, mirror.repository], ["mirror-0.lan", "mirror-for-foo/image"]);
});

Deno.test("registries.conf: an empty file, comments only, or the version 1 format give no mirrors", () => {
  assertEquals(parseRegistriesConf(""), {});
  assertEquals(parseRegistriesConf("# nothing here\n"), {});
  assertEquals(
    parseRegistriesConf(
      '[registries.search]\nregistries = ["docker.io"]\n[registries.insecure]\nregistries = []\n',
    ),
    {},
  );
});

Deno.test("registries.conf: what cannot be used is a LocalFileError naming the entry, never its value", () => {
  const cases: [string, RegExp][] = [
    ["registry = 3", /registry must be an array of tables/],
    ['[[registry]]\nprefix = "ghcr.io/acme:v1"', /registry\[0\]\.prefix is not host/],
    ['[[registry]]\nprefix = "a.*.example"', /registry\[0\]\.prefix is not host/],
    ['[[registry]]\nlocation = "a.io"\nmirror = "m.io"', /registry\[0\]\.mirror must be an array/],
    [
      '[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\nlocation = "m.io/UP"',
      /mirror\[0\]\.location is not host/,
    ],
    [
      '[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\npull-from-mirror = "all"',
      /mirror\[0\]\.location is missing/,
    ],
    [
      '[[registry]]\nlocation = "a.io"\nmirror-by-digest-only = "yes"',
      /mirror-by-digest-only must be true or false/,
    ],
    ["[[registry]]\nprefix = 5", /registry\[0\]\.prefix must be a string/],
    ["a = \n", /not valid TOML \(line 1, column \d+\)/],
  ];
  for (const [text, expected] of cases) {
    const err = assertThrows(() => parseRegistriesConf(text), LocalFileError);
    assert(expected.test(err.message), `${err.message} ~ ${expected}`);
    assert(!/m\.io|a\.io|ghcr/.test(err.message), `no value in ${err.message}`);
  }
});

Deno.test("registries.conf: the location follows CONTAINERS_REGISTRIES_CONF, then the user's file, then the system's", async () => {
  await using dir = await tempDir("ocipart-regconf-");
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assertEquals(
    await registriesConfLocation({
      env: env({ CONTAINERS_REGISTRIES_CONF: "/x.conf", HOME: dir.path }),
    }),
    { path: "/x.conf", required: true },
  );
  assertEquals(
    await registriesConfLocation({ env: env({ HOME: dir.path }) }),
    { path: "/etc/containers/registries.conf", required: false },
  );
  const user = `${dir.path}/.config/containers/registries.conf`;
  await Deno.mkdir(`${dir.path}/.config/containers`, { recursive: true });
  await Deno.writeTextFile(user, "");
  assertEquals(await registriesConfLocation({ env: env({ HOME: dir.path }) }), {
    path: user,
    required: false,
  });
  assertEquals(
    await registriesConfLocation({ env: env({ HOME: dir.path }), readable: () => false }),
    undefined,
  );
  assertEquals(await readRegistriesConf({ path: `${dir.path}/absent`, required: false }), {});
  await assertRejects(
    () => readRegistriesConf({ path: `${dir.path}/absent`, required: true }),
    LocalFileError,
    "cannot be read (ENOENT",
  );
});
