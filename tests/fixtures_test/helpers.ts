/** Helpers shared by the fixture self-tests. */

/** Whether process `pid` no longer exists (Linux: no `/proc/<pid>`). */
export async function pidGone(pid: number): Promise<boolean> {
  try {
    await Deno.stat(`/proc/${pid}`);
    return false;
  } catch {
    return true;
  }
}

/** Whether `path` exists. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Whether a TCP connect to 127.0.0.1:`port` is refused (nothing listens). */
export async function portClosed(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
    return false;
  } catch {
    return true;
  }
}
