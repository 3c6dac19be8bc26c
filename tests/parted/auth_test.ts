import { assert, assertEquals, assertInstanceOf, assertRejects } from "../fixtures/assert.ts";
import { sha256File, writePatternFile } from "../fixtures/files.ts";
import { startFaultProxy } from "../fixtures/fault_proxy.ts";
import { registryTest, startRegistry } from "../fixtures/registry.ts";
import { tempDir } from "../fixtures/tmp.ts";
import { findError, UnauthorizedError } from "../../src/errors/mod.ts";
import { dockerConfigCredentials } from "../../src/auth/docker_config.ts";
import { fromFile, PartedClient, toFile } from "../../src/parted/mod.ts";
import { startTokenRegistry } from "../auth/_registry_helpers.ts";

registryTest(
  "auth: htpasswd registry with an explicit credential and with a docker config; refused without",
  {
    needs: ["htpasswd"],
  },
  async () => {
    await using registry = await startRegistry({ htpasswd: { alice: "s3cret-pw" } });
    await using proxy = await startFaultProxy({ target: registry.url });
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 300_000, 3);
    const ref = `${proxy.host}/auth/f:v1`;

    using anonymous = new PartedClient({
      plainHttp: true,
      credentials: { get: () => Promise.resolve({}) },
    });
    const err = await assertRejects(() =>
      anonymous.push(ref, fromFile(src), { partSize: 100_000 })
    );
    assertInstanceOf(findError(err, UnauthorizedError), UnauthorizedError);
    assertEquals(proxy.count({ method: "PUT" }), 0, "no part upload attempted");
    assert(!(err as Error).message.includes("s3cret"));

    using explicit = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "s3cret-pw" },
    });
    await explicit.push(ref, fromFile(src), { partSize: 100_000 });
    await explicit.pull(ref, toFile(`${dir.path}/a.bin`));
    assertEquals(await sha256File(`${dir.path}/a.bin`), digest);

    const config = `${dir.path}/config.json`;
    await Deno.writeTextFile(
      config,
      JSON.stringify({ auths: { [proxy.host]: { auth: btoa("alice:s3cret-pw") } } }),
    );
    using fromConfig = new PartedClient({
      plainHttp: true,
      credentials: dockerConfigCredentials({ configPath: config }),
    });
    await fromConfig.pull(ref, toFile(`${dir.path}/b.bin`));
    assertEquals(await sha256File(`${dir.path}/b.bin`), digest);

    using wrong = new PartedClient({
      plainHttp: true,
      credential: { username: "alice", password: "wrong" },
    });
    const refused = await assertRejects(() => wrong.pull(ref, toFile(`${dir.path}/c.bin`)));
    assertInstanceOf(findError(refused, UnauthorizedError), UnauthorizedError);
  },
);

registryTest(
  "auth: a client's transfers share one token cache: a second pull exchanges no token",
  async () => {
    await using pair = await startTokenRegistry();
    await using dir = await tempDir();
    const src = `${dir.path}/src.bin`;
    const digest = await writePatternFile(src, 300_000, 5);
    const ref = `${pair.registry.host}/auth/cache:v1`;
    const credential = { username: "alice", password: "pw" };
    using client = new PartedClient({ plainHttp: true, credential });
    await client.push(ref, fromFile(src), { partSize: 100_000 });
    await client.pull(ref, toFile(`${dir.path}/a.bin`));
    const exchanged = pair.tokens.requests.length;
    assert(exchanged > 0, "the registry asked for a token");

    await client.pull(ref, toFile(`${dir.path}/b.bin`));
    assertEquals(await sha256File(`${dir.path}/b.bin`), digest);
    assertEquals(pair.tokens.requests.length, exchanged, "the second pull reused the token");

    // The cache belongs to the client: another client exchanges its own.
    using other = new PartedClient({ plainHttp: true, credential });
    await other.pull(ref, toFile(`${dir.path}/c.bin`));
    assert(pair.tokens.requests.length > exchanged, "a new client asked for its own token");
  },
);
