/**
 * Workers RPC (src/rpc) as a user meets it locally: edge-dedup under one
 * `wrangler dev`, a caller Worker (test/support/delivery-helper-worker.js)
 * under another, joined by the dev registry. Between two sessions the call
 * goes through wrangler's registry proxy, which folds a custom error name
 * into the message: a refusal must still read "404 missing: …".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort, groupAlive, killGroup, wranglerEnv } from "../support/processes";
import { useServer } from "./server";

const { server, api } = useServer();
const WRANGLER = fileURLToPath(new URL("../../node_modules/wrangler/bin/wrangler.js", import.meta.url));
const CALLER = fileURLToPath(new URL("../support/delivery-helper-worker.js", import.meta.url));

const base = mkdtempSync(join(tmpdir(), "edge-dedup-rpc-e2e-"));
let caller: ChildProcess | undefined;
let callerUrl = "";

interface Answer {
  ok: boolean;
  value?: any;
  name?: string;
  message?: string;
}

const rpc = async (method: string, ...args: unknown[]): Promise<Answer> =>
  (await fetch(`${callerUrl}/rpc`, { method: "POST", body: JSON.stringify({ method, args }), signal: AbortSignal.timeout(30_000) })).json();

beforeAll(async () => {
  writeFileSync(
    join(base, "wrangler.toml"),
    [
      'name = "rpc-caller"',
      `main = ${JSON.stringify(CALLER)}`,
      'compatibility_date = "2026-11-01"',
      "[[services]]",
      'binding = "DEDUP"',
      'service = "edge-dedup"',
      'entrypoint = "EdgeDedup"',
    ].join("\n"),
  );
  const [port, inspector] = [await freePort(), await freePort()];
  caller = spawn(
    process.execPath,
    [
      WRANGLER,
      "dev",
      "--port",
      String(port),
      "--ip",
      "127.0.0.1",
      "--inspector-port",
      String(inspector),
      "--inspector-ip",
      "127.0.0.1",
      "--persist-to",
      join(base, "state"),
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
    ],
    { cwd: base, detached: true, stdio: "ignore", env: { ...wranglerEnv(base), WRANGLER_REGISTRY_PATH: server.registryPath } },
  );
  callerUrl = `http://127.0.0.1:${port}`;
  // Up, and connected to edge-dedup through the registry: a read answers.
  const deadline = Date.now() + 90_000;
  for (let last = ""; ; await new Promise((r) => setTimeout(r, 250))) {
    if (Date.now() > deadline) throw new Error(`the caller Worker did not reach edge-dedup: ${last}`);
    try {
      const a = await rpc("describe", "none-yet");
      if (a.ok) break;
      last = a.message ?? "";
    } catch (e) {
      last = String(e);
    }
  }
}, 120_000);

afterAll(async () => {
  if (caller?.pid !== undefined) {
    killGroup(caller, "SIGTERM");
    for (let i = 0; i < 100 && groupAlive(caller.pid); i++) await new Promise((r) => setTimeout(r, 50));
    killGroup(caller, "SIGKILL");
  }
  rmSync(base, { recursive: true, force: true });
});

describe("Workers RPC between two wrangler dev sessions", () => {
  test("a refusal reads '<status> <kind>: …'; tryIngest answers it as a value and leaves no 'Uncaught' in edge-dedup's log", async () => {
    await api.putStream("rpc-e2e", { key: ["id"], mode: "global" });
    expect((await rpc("ingest", "rpc-e2e", [{ id: 1 }], { batchId: "b1" })).value).toMatchObject({ batchId: "b1", emitted: 1 });

    const answered = await rpc("tryIngest", "rpc-e2e-tried", [{ id: 1 }]);
    expect(answered.value).toEqual({
      ok: false,
      status: 404,
      kind: "missing",
      detail: 'stream "rpc-e2e-tried" does not exist; create it with PUT /v1/streams/rpc-e2e-tried',
    });
    expect((await rpc("tryIngest", "rpc-e2e", [{ id: 2 }], { batchId: "b1" })).value).toMatchObject({ ok: false, status: 422, kind: "conflict" });

    const thrown = await rpc("ingest", "rpc-e2e-thrown", [{ id: 1 }]);
    expect(thrown).toMatchObject({ ok: false, message: '404 missing: stream "rpc-e2e-thrown" does not exist; create it with PUT /v1/streams/rpc-e2e-thrown' });
    expect((await rpc("ingest", "rpc-e2e", [{ id: 2 }], { batchId: "b1" })).message).toMatch(/^422 conflict: batch id "b1"/);
    expect((await rpc("ingest", "bad/name", [])).message).toBe('400 invalid: stream name "bad/name" is invalid');

    // workerd logs what an RPC method throws: once the throw above is in the log, the answered refusals would be too.
    const deadline = Date.now() + 20_000;
    while (!server.log().includes('Uncaught Error: 404 missing: stream "rpc-e2e-thrown"') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect(server.log()).toContain('Uncaught Error: 404 missing: stream "rpc-e2e-thrown"');
    expect(server.log()).not.toContain("rpc-e2e-tried");
    expect(server.log()).not.toMatch(/IngestRefused/);
  });
});
