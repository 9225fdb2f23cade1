/**
 * The cases of `npm run bench:hot` (bench/hot-path.ts bundles this file, as
 * wrangler bundles the Worker, and runs it in Node): the per-row work of one
 * ingest outside SQL, on the rows bench/run.ts sends ({id, ts, v}; the
 * stream: key ["id"], event time "ts", volatile ["ts", "v"], 8 partitions).
 * Each case is one batch's worth of a step; "was" cases run the first version
 * of the content digest (test/support/content-oracle.ts) on the same rows.
 */
import { parseRows } from "../src/http/body";
import { mergeDecisions, encodeOutput, planBatch } from "../src/stream/batch";
import { parseStreamConfig } from "../src/stream/config";
import { canonicalText, contentDigest, int64Decimal, omissionOf } from "../src/stream/content";
import { murmur3 } from "../src/lib/murmur3";
import { partitionFor, PARTITION_SEED } from "../src/stream/partition-for";
import { encodeKey } from "../src/stream/key";
import { digestBlindFields, rowJudge } from "../src/stream/schema";
import { sha256Utf8 } from "../src/lib/sha256";
import { oracleCanonicalJson, oracleSha256Words, oracleWithoutFields } from "../test/support/content-oracle";

export interface Case {
  /** what it measures */
  name: string;
  /** the step it replaces, when it has a "was" twin */
  was?: string;
  run: () => unknown;
}

const HOUR = 3_600_000;
const parsed = parseStreamConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 8, volatile: ["ts", "v"] });
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const config = parsed.config;
const encoder = new TextEncoder();

/** One batch of `n` bench rows (ids counting up from `from`), and every case on it. */
export function casesFor(n: number, from = 0): { rows: number; cases: Case[] } {
  const base = Date.now() - 2 * HOUR;
  const now = Date.now();
  const objects = Array.from({ length: n }, (_, i) => ({ id: `bench-${from + i}`, ts: base + from + i, v: from + i }));
  const body = encoder.encode(n === 1 ? JSON.stringify(objects[0]) : JSON.stringify(objects));
  const rows = parseRows(body, "application/json");
  const context = { source: "default", watermark: 0, batchId: `bench-${from}` };
  const blindPaths = digestBlindFields(config, context.batchId);
  const blind = omissionOf(blindPaths);
  const plan = planBatch(config, rows, now, context);
  // Every row emitted (as a batch of new ids is): the partitions' answer, one code per row.
  const decisions = new Map([...plan.subBatches].map(([p, sub]) => [p, "e".repeat(sub.length)]));
  const texts = objects.map((r) => oracleCanonicalJson(oracleWithoutFields(r, blindPaths)));
  const bytes = texts.map((t) => encoder.encode(t));
  const keys = objects.map((r) => encodeKey([r.id]));
  const judge = rowJudge(config, now, context);
  const each = (f: (i: number) => unknown) => () => {
    let x: unknown;
    for (let i = 0; i < n; i++) x = f(i);
    return x;
  };
  return {
    rows: n,
    cases: [
      { name: "parse the body (parseRows)", run: () => parseRows(body, "application/json") },
      { name: "copy the rows as a DO call does (structuredClone)", run: () => structuredClone(rows) },
      { name: "planBatch (validate, key, digest, route)", run: () => planBatch(config, rows, now, context) },
      { name: "  validate one row (rowJudge), digest included", run: each((i) => judge(rows[i], i)) },
      { name: "  content digest", run: each((i) => contentDigest(objects[i], blind)) },
      {
        name: "  content digest, first version",
        was: "  content digest",
        run: each((i) => {
          const h = oracleSha256Words(encoder.encode(oracleCanonicalJson(oracleWithoutFields(objects[i], blindPaths))));
          return int64Decimal(h[0], h[1]);
        }),
      },
      { name: "    canonical text without the volatile fields", run: each((i) => canonicalText(objects[i], blind)) },
      {
        name: "    canonical text, first version (copy, then write)",
        was: "    canonical text without the volatile fields",
        run: each((i) => oracleCanonicalJson(oracleWithoutFields(objects[i], blindPaths))),
      },
      { name: "    SHA-256 of the text", run: each((i) => sha256Utf8(texts[i])) },
      { name: "    SHA-256, first version (encode, pad, hash)", was: "    SHA-256 of the text", run: each((i) => oracleSha256Words(encoder.encode(texts[i]))) },
      { name: "    SHA-256 of the UTF-8 bytes, first version", run: each((i) => oracleSha256Words(bytes[i])) },
      { name: "  key and partition", run: each((i) => partitionFor(encodeKey([objects[i].id]), 8)) },
      { name: "  key and partition, encoding the key", was: "  key and partition", run: each((i) => murmur3(encoder.encode(keys[i]), PARTITION_SEED) % 8) },
      { name: "merge the decisions (mergeDecisions)", run: () => mergeDecisions(plan, decisions) },
      { name: "encode the output (encodeOutput)", run: () => encodeOutput(rows as Record<string, unknown>[]) },
    ],
  };
}
