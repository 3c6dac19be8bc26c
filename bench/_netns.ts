/**
 * A per-connection-capped link on one machine: a network namespace whose loopback gives every
 * TCP connection to or from the registry port its own HTB class (128 classes keyed by the low 7
 * bits of the client port; the namespace's ephemeral range is exactly 128 ports, so two open
 * connections never share a class). Needs root and iproute2; `htb` and `u32` suffice.
 *
 * API:
 * - `enterCappedNamespace(script, args): Promise<number>` — runs `deno run -A script --inside
 *   …args` inside a fresh namespace and removes it afterwards; returns the exit code, or 0 after
 *   printing why when the machine cannot do it (not root, no `ip`/`tc`).
 * - `capPorts(ports, rateMbit): Promise<void>` — from inside: caps every connection to or from
 *   one of `ports` (a registry, its storage) at `rateMbit` in each direction, replacing an
 *   earlier cap.
 *
 * @module
 */

async function run(args: string[], stdin?: string): Promise<{ ok: boolean; stderr: string }> {
  const child = new Deno.Command(args[0], {
    args: args.slice(1),
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const out = await child.output();
  return { ok: out.success, stderr: new TextDecoder().decode(out.stderr) };
}

async function must(args: string[], stdin?: string): Promise<void> {
  const result = await run(args, stdin);
  if (!result.ok) throw new Error(`${args.slice(0, 4).join(" ")} failed: ${result.stderr}`);
}

/** Why this machine cannot build the namespace, or undefined when it can. */
async function missingPrerequisite(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return "needs root (network namespace and tc)";
  for (const tool of ["ip", "tc"]) {
    if (!(await run(["sh", "-c", `command -v ${tool}`])).ok) return `needs iproute2 (${tool})`;
  }
  return undefined;
}

/** Runs `script` inside a fresh capped namespace; see the module doc. */
export async function enterCappedNamespace(script: string, args: string[]): Promise<number> {
  const missing = await missingPrerequisite();
  if (missing !== undefined) {
    console.log(`capped-link benchmark skipped: ${missing}`);
    return 0;
  }
  const ns = `ocipart-cap-${Deno.pid}`;
  await must(["ip", "netns", "add", ns]);
  try {
    const inside = ["ip", "netns", "exec", ns];
    await must([...inside, "ip", "link", "set", "lo", "up"]);
    await must([
      ...inside,
      "sysctl",
      "-qw",
      "net.ipv4.ip_local_port_range=40000 40127",
      "net.ipv4.tcp_tw_reuse=1",
    ]);
    const child = new Deno.Command(inside[0], {
      args: [...inside.slice(1), Deno.execPath(), "run", "-A", script, "--inside", ...args],
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    return (await child.status).code;
  } finally {
    await run(["ip", "netns", "del", ns]);
  }
}

/** Caps each connection of `ports` at `rateMbit`; see the module doc. */
export async function capPorts(ports: number[], rateMbit: number): Promise<void> {
  await run(["tc", "qdisc", "del", "dev", "lo", "root"]);
  const rate = `${rateMbit}mbit`;
  const lines = [
    "qdisc add dev lo root handle 1: htb default 999 r2q 1000",
    "class add dev lo parent 1: classid 1:999 htb rate 10gbit",
  ];
  for (let i = 0; i < 128; i++) {
    const flow = `flowid 1:${i + 1}`;
    lines.push(`class add dev lo parent 1: classid 1:${i + 1} htb rate ${rate} ceil ${rate}`);
    for (const port of ports) {
      lines.push(
        `filter add dev lo parent 1: protocol ip prio 1 u32 match ip sport ${i} 0x007f ` +
          `match ip dport ${port} 0xffff ${flow}`,
        `filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport ${i} 0x007f ` +
          `match ip sport ${port} 0xffff ${flow}`,
      );
    }
  }
  await must(["tc", "-batch", "-"], lines.join("\n") + "\n");
}
