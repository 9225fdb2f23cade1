/**
 * `npm run bench:hot`: the per-row cost of ingest's pure steps (parse, the RPC
 * copy, planBatch and its parts: validation, content digest, key and
 * partition; merging decisions, encoding the output) on the bench's rows, in
 * Node, in µs per row, for 500-row batches and for single-row ones (the
 * webhook case). Where a step was made faster, its first version runs on the
 * same rows next to it and the ratio is printed: the content digest's first
 * version is kept as the test oracle (test/support/content-oracle.ts).
 *
 * bench/hot-path-cases.ts is bundled with esbuild (wrangler's bundler, which
 * wrangler installs) into a temporary directory, as the Worker is bundled,
 * and imported. Cases run in interleaved rounds; each prints the median.
 * No server, no network; bounded by HOT_SECONDS (default 20).
 *
 * Where the CPU goes in the running Worker (SQL included) is `npm run
 * bench:profile` (bench/profile.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { BENCH_DIR, fmt, median, table } from "./harness.ts";
import type { Case } from "./hot-path-cases.ts";

const SECONDS = Number(process.env.HOT_SECONDS ?? 20);
const ROUNDS = 7;

async function load(): Promise<typeof import("./hot-path-cases.ts")> {
  const dir = mkdtempSync(join(tmpdir(), "edge-dedup-hot-path-"));
  try {
    const out = join(dir, "cases.mjs");
    await build({
      entryPoints: [join(BENCH_DIR, "hot-path-cases.ts")],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "es2023",
      outfile: out,
      logLevel: "warning",
    });
    return await import(pathToFileURL(out).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** µs per call of `run`, timed over about `ms`. */
function timeIt(run: () => unknown, ms: number): number {
  let calls = 0;
  const t0 = performance.now();
  let t = t0;
  do {
    for (let i = 0; i < 10; i++) run();
    calls += 10;
    t = performance.now();
  } while (t - t0 < ms);
  return ((t - t0) * 1000) / calls;
}

async function main(): Promise<void> {
  const { casesFor } = await load();
  const batches = [casesFor(500, 0), casesFor(1, 1_000_000)];
  const total = batches.reduce((n, b) => n + b.cases.length, 0);
  const slice = (SECONDS * 1000) / (total * (ROUNDS + 1));
  console.log(`edge-dedup hot path (Node ${process.version}): µs per row, median of ${ROUNDS} interleaved rounds, ~${fmt(slice, 0)} ms per case and round\n`);
  for (const { rows, cases } of batches) {
    for (const c of cases) timeIt(c.run, slice); // warm-up: every case JIT-compiled before any is timed
    const times = new Map<Case, number[]>(cases.map((c) => [c, []]));
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? cases : [...cases].reverse();
      for (const c of order) times.get(c)!.push(timeIt(c.run, slice) / rows);
    }
    const perRow = new Map(cases.map((c) => [c.name, median(times.get(c)!)]));
    console.log(`${rows === 1 ? "1-row batches (one event per request)" : `${rows}-row batches`}`);
    table(
      ["step", "µs/row", "the first version ÷ now"],
      cases.map((c) => {
        const now = perRow.get(c.name)!;
        const faster = cases.find((x) => x.was === c.name);
        return [c.name, fmt(now, 3), faster ? `${fmt(perRow.get(faster.name)! / now, 2)}×` : ""];
      }),
    );
    console.log("");
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? e.stack : e);
    process.exit(1);
  },
);
