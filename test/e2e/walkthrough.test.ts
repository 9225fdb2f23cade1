/**
 * The walk-through can't drift: scripts/walkthrough.sh (every shell block of
 * docs/walkthrough.md and the README's first request, verbatim, each checked)
 * runs with bash against a real `wrangler dev` on 127.0.0.1 whose admin token
 * is the one the page uses.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { useServer } from "./server";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCRIPT = fileURLToPath(new URL("../../scripts/walkthrough.sh", import.meta.url));
const TIMEOUT_MS = 120_000;

const { server } = useServer({ token: "dev-admin-token" });

function run(port: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("bash", [SCRIPT], {
      cwd: ROOT,
      env: { ...process.env, PORT: port, HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (code, signal) => resolvePromise({ code, signal, output }));
  });
}

test(
  "scripts/walkthrough.sh passes against a real server",
  async () => {
    const port = new URL(server.url).port;
    const { code, signal, output } = await run(port);
    expect({ code, signal }, `${output}\n--- wrangler log tail ---\n${server.log()}`).toEqual({ code: 0, signal: null });
    expect(output).toContain("walkthrough: all steps passed");
  },
  TIMEOUT_MS + 30_000,
);
