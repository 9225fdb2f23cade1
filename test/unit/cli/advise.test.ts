import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import { parseAdviseArgs } from "../../../src/cli/advise.ts";
import { main } from "../../../src/cli/main.ts";
import type { Advice } from "../../../src/stream/advisor/index.ts";
import { parseInterval } from "../../../src/stream/interval.ts";
import { generateHistory, toNdjson } from "../history-gen.ts";

const bin = fileURLToPath(new URL("../../../bin/edge-dedup.mjs", import.meta.url));
const base = mkdtempSync(join(tmpdir(), "edge-dedup-advise-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const rows = generateHistory({ seed: 3, events: 3_000 });
const ndjson = join(base, "events.ndjson");
writeFileSync(ndjson, toNdjson(rows));
// the same history cut in two: an NDJSON file and a JSON array
const half = Math.floor(rows.length / 2);
writeFileSync(join(base, "a.ndjson"), toNdjson(rows.slice(0, half)) + "not json\n\n");
writeFileSync(join(base, "b.json"), JSON.stringify(rows.slice(half)));

const cli = (args: string[], input?: string) =>
  spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", timeout: 30_000, input, env: { ...process.env, NO_COLOR: "1" } });

describe("edge-dedup advise (a child node)", () => {
  test("--json on a generated NDJSON file", () => {
    const r = cli(["advise", ndjson, "--key", "id", "--time", "ts", "--source", "src", "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const a = JSON.parse(r.stdout) as Advice;
    expect(a.events).toBe(rows.length);
    expect(a.distinctKeys).toBe(3_000);
    expect(a.duplicates).toBe(rows.length - 3_000);
    expect(a.skipped.rows).toBe(0);
    expect(Object.keys(a.disorder.sources).sort()).toEqual(["batch", "mobile", "web"]);
    expect(a.gaps.count).toBe(a.duplicates);
    expect(a.gaps.max!).toBeGreaterThanOrEqual(a.gaps["p99.9"]!);
    const r0 = a.recommendation;
    expect(parseInterval(r0.watermarkDelay)).toBe(r0.delayMs);
    expect(r0.delayMs).toBeGreaterThanOrEqual(Math.max(a.gaps["p99.9"]!, a.disorder.overall["p99.9"]!) * 1.2 * 0.98);
    expect(a.simulation).toMatchObject({ delayMs: r0.delayMs, rows: rows.length, copies: a.duplicates });
    expect(a.simulation.caughtShare).toBeGreaterThan(0.99);
    expect(a.state.withinWatermark!.keys).toBe(2 * a.state.eventTimeKey!.keys);
    expect(a.state.bytesPerKey).toBe(50);
  });

  test("the table: figures, two histograms, the recommendation and the state", () => {
    const r = cli(["advise", ndjson, "--key", "id", "--time", "ts", "--source", "src", "--margin", "2"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^history: [\d,]+ events from 3 sources/);
    expect(r.stdout).toMatch(/recommended watermarkDelay: "\d+ (seconds?|minutes?|hours?)"/);
    expect(r.stdout).toContain("× margin 2 ≤ max(");
    expect(r.stdout.match(/│/g)!.length).toBeGreaterThan(10);
    expect(r.stdout).toContain("within-watermark");
  });

  test("NDJSON and a JSON array together give the same figures; stdin with -; bad lines are counted", () => {
    const whole = JSON.parse(cli(["advise", ndjson, "--key", "id", "--time", "ts", "--source", "src", "--json"]).stdout) as Advice;
    const split = cli(["advise", join(base, "a.ndjson"), join(base, "b.json"), "--key", "id", "--time", "ts", "--source", "src", "--json"]);
    expect(split.status, split.stderr).toBe(0);
    const s = JSON.parse(split.stdout) as Advice;
    expect(s.skipped).toEqual({ rows: 1, examples: [`${join(base, "a.ndjson")}:${half + 1}: not valid JSON`] });
    expect({ ...s, skipped: null }).toEqual({ ...whole, skipped: null });
    const piped = cli(["advise", "-", "--key", "id", "--time", "ts", "--source", "src", "--json"], toNdjson(rows));
    expect(piped.status, piped.stderr).toBe(0);
    expect(JSON.parse(piped.stdout)).toEqual(whole);
  });

  test("usage errors exit 2; an unreadable file or no usable row exits 1", () => {
    expect(cli(["advise", ndjson, "--time", "ts"]).status).toBe(2);
    expect(cli(["advise", ndjson, "--key", "id", "--time", "ts", "--unit", "h"]).stderr).toContain("--unit must be ms or s");
    const missing = cli(["advise", join(base, "nope.ndjson"), "--key", "id", "--time", "ts"]);
    expect([missing.status, missing.stderr]).toEqual([1, expect.stringContaining("nope.ndjson: cannot read")]);
    const wrong = cli(["advise", ndjson, "--key", "id", "--time", "when", "--json"]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain("no row had a key and an event time");
    const help = cli(["advise", "--help"]);
    expect([help.status, help.stdout]).toEqual([0, expect.stringContaining("Usage: edge-dedup advise FILE...")]);
  });
});

describe("advise arguments", () => {
  test("keys, unit, margin and bytes per key", () => {
    expect(parseAdviseArgs(["f", "--key", "id, tenant", "--time", "ts", "--unit", "s", "--margin", "1.5", "--bytes-per-key", "120"])).toEqual({
      kind: "advise",
      files: ["f"],
      json: false,
      options: { key: ["id", "tenant"], time: "ts", source: undefined, unit: "s", margin: 1.5, bytesPerKey: 120 },
    });
    for (const bad of [["--margin", "0.5"], ["--margin", "x"], ["--bytes-per-key", "0"], ["--key", "a,,b"], ["--nope"]]) {
      expect(parseAdviseArgs(["f", "--key", "id", "--time", "ts", ...bad]).kind).toBe("error");
    }
    expect(parseAdviseArgs(["--key", "id", "--time", "ts"])).toMatchObject({ kind: "error", message: expect.stringContaining("name at least one file") });
  });

  test("main dispatches advise; the general help names it", async () => {
    let out = "";
    const io = { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true, isTTY: false }, env: {}, stdin: () => "" };
    expect(await main(["--help"], io)).toBe(0);
    expect(out).toContain("edge-dedup advise FILE...");
  });
});
