/**
 * Child processes and ports for the tests and the bench: each `wrangler dev`
 * runs in its own process group so that it dies whole (wrangler, its node child
 * and workerd). Plain, erasable TypeScript: `node --experimental-strip-types`
 * runs it for the bench.
 */
import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}

export function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A port that was free a moment ago on 127.0.0.1. It is picked below the
 * kernel's ephemeral range (32768-60999 by default) and checked by binding it:
 * a port handed out for `bind(0)` and closed again is soon handed to the next
 * process that binds port 0 (other workerd instances on this machine do), so it
 * would race wrangler. Falls back to binding port 0.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (
      await bindAndRelease(port).then(
        () => true,
        () => false,
      )
    )
      return port;
  }
  return bindAndRelease(0);
}

function bindAndRelease(port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(port, "127.0.0.1", () => {
      const address = srv.address();
      if (address === null || typeof address === "string") return reject(new Error("no port"));
      srv.close(() => resolvePort(address.port));
    });
  });
}

/** The environment of a `wrangler dev` child: no network at run time, its own logs and dev registry under `base`. */
export function wranglerEnv(base: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    WRANGLER_SEND_METRICS: "false",
    WRANGLER_SEND_ERROR_REPORTS: "false",
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_LOG_PATH: join(base, "logs"),
    WRANGLER_REGISTRY_PATH: join(base, "registry"), // not shared with other dev sessions
    WRANGLER_HIDE_BANNER: "true",
    DO_NOT_TRACK: "1",
    NO_COLOR: "1",
    FORCE_COLOR: "0",
    CI: "true",
  };
}
