/**
 * Basic authentication end to end: the real Distribution registry with `auth.htpasswd`
 * (bcrypt), driven by the parted client and by the authenticated fetch.
 */
import { createAuthFetch } from "../../src/auth/create_auth_fetch.ts";
import { staticCredentials } from "../../src/auth/credential.ts";
import { dockerConfigCredentials } from "../../src/auth/docker_config.ts";
import { basicAuthorization } from "../../src/auth/token_exchange.ts";
import { findError } from "../../src/errors/find_error.ts";
import { UnauthorizedError } from "../../src/errors/sentinels.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { assert, assertEquals, assertRejects } from "../fixtures/assert.ts";
import { patternBytes, sha256File, writePatternFile } from "../fixtures/files.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { countingTransport, uploadBlob, withCredentialHelper } from "./_registry_helpers.ts";

const PART = 64 * 1024;
const SIZE = 3 * PART + 17;

registryTest(
  "basic auth: push and pull with explicit, config-file and helper credentials",
  { needs: ["htpasswd"] },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "pw" } });
    await using dir = await tempDir();
    using transport = countingTransport();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, SIZE);
    const host = registry.host;

    using explicit = new PartedClient({
      plainHttp: true,
      transport: transport.fetch,
      credential: { username: "alice", password: "pw" },
    });
    await explicit.push(`${host}/team/data:v1`, fromFile(src), { partSize: PART, workers: 1 });
    // One refusal of the anonymous first request, then Basic on every request.
    assertEquals(transport.log.filter((r) => r.status === 401).length, 1);
    assertEquals(transport.log[0]?.authorization, null);
    const basic = basicAuthorization("alice", "pw");
    assert(transport.log.slice(1).every((r) => r.authorization === basic));
    await explicit.pull(`${host}/team/data:v1`, toFile(`${dir.path}/a.bin`));
    assertEquals(await sha256File(`${dir.path}/a.bin`), digest);

    const configPath = `${dir.path}/config.json`;
    await Deno.writeTextFile(
      configPath,
      JSON.stringify({ auths: { [`http://${host}`]: { username: "alice", password: "pw" } } }),
    );
    using fromConfig = new PartedClient({
      plainHttp: true,
      credentials: dockerConfigCredentials({ configPath }),
    });
    await fromConfig.pull(`${host}/team/data:v1`, toFile(`${dir.path}/b.bin`));
    assertEquals(await sha256File(`${dir.path}/b.bin`), digest);

    await withCredentialHelper(async (asked) => {
      const helperConfig = `${dir.path}/helper.json`;
      await Deno.writeTextFile(helperConfig, JSON.stringify({ credsStore: "ocitest" }));
      using fromHelper = new PartedClient({
        plainHttp: true,
        credentials: dockerConfigCredentials({ configPath: helperConfig }),
      });
      await fromHelper.push(`${host}/team/helper:v1`, fromFile(src), { partSize: PART });
      await fromHelper.pull(`${host}/team/helper:v1`, toFile(`${dir.path}/c.bin`));
      assertEquals(await sha256File(`${dir.path}/c.bin`), digest);
      // One authenticator per client: asked once, for both transfers.
      assertEquals(await asked(), [host]);
    });
  },
);

registryTest(
  "basic auth: wrong password and anonymous are unauthorized with zero part attempts",
  { needs: ["htpasswd"] },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "pw" } });
    await using dir = await tempDir();
    using transport = countingTransport();
    const src = `${dir.path}/src.bin`;
    await writePatternFile(src, SIZE);
    const cases = [
      // Wrong password: the anonymous refusal is answered once, the answer is refused: final.
      { credentials: staticCredentials({ username: "alice", password: "nope" }), requests: 2 },
      // Anonymous: nothing to answer the challenge with.
      { credentials: staticCredentials({}), requests: 1 },
    ];
    for (const { credentials, requests } of cases) {
      transport.log.length = 0;
      using client = new PartedClient({ plainHttp: true, transport: transport.fetch, credentials });
      const err = await assertRejects(() =>
        client.push(`${registry.host}/team/data:v1`, fromFile(src), { partSize: PART, workers: 1 })
      );
      assert(findError(err, UnauthorizedError), "unauthorized");
      assertEquals(
        transport.log.map((r) => [r.method, r.status]),
        Array(requests).fill(["HEAD", 401]),
        "no session opened, no part sent",
      );
    }

    // The authenticated fetch for blob-library users: a raw upload with Basic.
    const authFetch = createAuthFetch({
      registry: registry.host,
      plainHttp: true,
      fetch: transport.fetch,
      credentials: staticCredentials({ username: "alice", password: "pw" }),
    });
    await uploadBlob(authFetch, registry.url, "team/raw", patternBytes(1000, 2));
  },
);
