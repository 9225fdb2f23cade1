import { env } from "cloudflare:workers";
import { it } from "vitest";
import type { Partition } from "../../src/partition/partition";
import type { DedupSettings } from "../../src/stream/dedup";
import { contentDigest } from "../../src/stream/content";

for (const hashedKeys of [true, false, true, false]) it(`timing hashed=${hashedKeys}`, async () => {
  const p = env.PARTITION.getByName(`timing-${hashedKeys}-${Math.random()}/0`) as DurableObjectStub<Partition>;
  const settings: DedupSettings = { mode: "within-watermark", delay: 3_600_000, hasEventTime: true, hashedKeys };
  const t0 = Date.now() - 7_200_000;
  let i = 0; const recent: number[] = []; let seed = 1;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const batches = Array.from({ length: 300 }, (_, b) => Array.from({ length: 62 }, (_, j) => {
      let id: number;
      if (recent.length > 0 && rnd() < 0.2) id = recent[Math.floor(rnd() * recent.length)];
      else { id = i; recent.push(id); if (recent.length > 500) recent.shift(); }
      const ts = t0 + (i++) * 8;
      return { index: j, key: `["w-${id}"]`, eventTime: ts, digest: contentDigest({ id: `w-${id}` }, []) };
    }));
  const start = performance.now();
  // The clock only moves on I/O: measure with Date around awaits (each call is real I/O to the DO)
  const t = Date.now();
  for (const [b, rows] of batches.entries()) {
    await p.applyGroup({ epoch: "e1", group: `g${b}`, watermark: 0, entries: [{ batch: `default\nbench-batch-${b}-abcdefgh`, settings, rows }], forget: b > 0 ? [`g${b - 1}`] : [] });
  }
  console.log(`hashed=${hashedKeys}: ${Date.now() - t} ms for 300 applies of 62 rows (${performance.now() - start})`);
});
