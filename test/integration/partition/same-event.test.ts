/**
 * What counts as the same event (DESIGN §11), end to end through the Worker:
 * conflicts (dropped or rejected) with their lane, receipts of the state
 * reader, the duplicates lane, content keys, and retries after a crash at
 * every step, which never write a lane entry twice.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { armFault, batchFaultKey, FAULT_POINTS } from "../../../src/instrument/faults";
import type { Partition } from "../../../src/partition/partition";
import { rowColumns } from "../../../src/stream/row-columns";
import { applyBatch, type DedupSettings } from "../../../src/stream/dedup";
import { applyOne, at, call, createStream, json, output, post } from "../helpers";

async function lane(stream: string, name: string): Promise<any[]> {
  const r = await call("GET", `/v1/streams/${stream}/${name}`);
  expect(r.status).toBe(200);
  return (await r.text())
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
const receipt = async (stream: string, row: unknown) =>
  (await json(call("GET", `/v1/streams/${stream}/state?row=${encodeURIComponent(JSON.stringify(row))}`))).keys;

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2, volatile: ["received_at"] };

describe("conflicts", () => {
  it("dropped (the default): counted in duplicates and conflicts, written to the conflicts lane with the kept copy's reference", async () => {
    await createStream("conf-drop", base);
    await post("conf-drop", [{ id: "A", ts: at(10, 0), amount: 10, received_at: 1 }], { "idempotency-key": "b1", "x-source": "shop" });
    const rows = [
      { id: "A", ts: at(10, 0), amount: 10, received_at: 2 }, // the same content but for a volatile field: a duplicate
      { id: "A", ts: at(10, 0), amount: 12, received_at: 3 }, // a corrected amount: a conflict
      { id: "B", ts: at(10, 1), amount: 1 },
      { id: "B", ts: at(10, 1), amount: 2 }, // conflicts with the row before it, in this batch
    ];
    const r = await post("conf-drop", rows, { "idempotency-key": "b2", "x-source": "shop" });
    expect(r).toMatchObject({ input: 4, emitted: 1, duplicates: 3, late: 0, conflicts: 2, rejected: [] });
    expect(r.emitted + r.duplicates + r.late + r.rejected.length).toBe(r.input);
    expect((await output("conf-drop")).map((x) => [x.id, x.amount])).toEqual([
      ["A", 10],
      ["B", 1],
    ]);
    expect(await lane("conf-drop", "conflicts")).toEqual([
      { source: "shop", batchId: "b2", index: 1, verdict: "dropped", kept: { batchId: "b1", source: "shop", seq: 1 }, row: rows[1] },
      // kept earlier in the same batch: the commit it takes (b2's own)
      { source: "shop", batchId: "b2", index: 3, verdict: "dropped", kept: { batchId: "b2", source: "shop", seq: 2 }, row: rows[3] },
    ]);
    expect(await lane("conf-drop", "duplicates")).toEqual([]); // keepDuplicates is off
    const progress = (await json(call("GET", "/v1/streams/conf-drop/progress"))).progress;
    expect(progress.map((p: any) => p.conflicts)).toEqual([0, 2]);
    // The receipt: where A's kept copy is, and what was dropped against it.
    expect(await receipt("conf-drop", { id: "A", ts: at(10, 0) })).toEqual([
      {
        key: '["A"]',
        eventTime: at(10, 0),
        expiresAt: at(10, 10),
        kept: { batchId: "b1", source: "shop", seq: 1, eventTime: at(10, 0) },
        dropped: 2,
        conflicts: 1,
      },
    ]);
    // A replay answers the same outcome and writes no lane entry again.
    expect(await post("conf-drop", rows, { "idempotency-key": "b2", "x-source": "shop" })).toEqual({ ...r, replayed: true });
    expect(await lane("conf-drop", "conflicts")).toHaveLength(2);
    expect((await receipt("conf-drop", { id: "A", ts: at(10, 0) }))[0]).toMatchObject({ dropped: 2, conflicts: 1 });
  });

  it("rejected: in rejected with the kept copy's batch id and commit, never emitted or remembered, and it does not move the watermark", async () => {
    await createStream("conf-reject", { ...base, onConflict: "reject" });
    await post("conf-reject", [{ id: "A", ts: at(10, 0), amount: 10 }], { "idempotency-key": "b1" });
    const rows = [
      { id: "A", ts: at(10, 30), amount: 11 },
      { id: "A", ts: at(10, 0), amount: 10, received_at: 9 },
      { id: "C", ts: at(10, 2) },
    ];
    const r = await post("conf-reject", rows, { "idempotency-key": "b2" });
    expect(r).toMatchObject({ input: 3, emitted: 1, duplicates: 1, late: 0, conflicts: 1 });
    expect(r.rejected).toEqual([
      { index: 0, error: 'conflict: its content differs from the kept copy of its key (batch "b1" from source "default", commit 1)' },
    ]);
    // 10:30 was rejected: the watermark is C's 10:02 - 10 minutes, not 10:20.
    expect(r.watermarkAfter).toBe(at(9, 52));
    expect((await output("conf-reject")).map((x) => x.id)).toEqual(["A", "C"]);
    expect(await lane("conf-reject", "rejected")).toEqual([{ source: "default", batchId: "b2", index: 0, reason: r.rejected[0].error, row: rows[0] }]);
    expect(await lane("conf-reject", "conflicts")).toEqual([
      { source: "default", batchId: "b2", index: 0, verdict: "rejected", kept: { batchId: "b1", source: "default", seq: 1 }, row: rows[0] },
    ]);
    expect(await receipt("conf-reject", { id: "A", ts: at(10, 0) })).toEqual([expect.objectContaining({ dropped: 1, conflicts: 1, expiresAt: at(10, 10) })]);
  });

  it("keepDuplicates: every dropped copy goes to the duplicates lane with the kept copy's reference", async () => {
    await createStream("conf-keep", { ...base, keepDuplicates: true });
    await post("conf-keep", [{ id: "A", ts: at(10, 0), v: 1 }], { "idempotency-key": "b1" });
    const rows = [
      { id: "A", ts: at(10, 0), v: 1 },
      { id: "A", ts: at(10, 0), v: 2 },
      { id: "B", ts: at(10, 0) },
    ];
    await post("conf-keep", rows, { "idempotency-key": "b2" });
    const kept = { batchId: "b1", source: "default", seq: 1 };
    expect(await lane("conf-keep", "duplicates")).toEqual([
      { source: "default", batchId: "b2", index: 0, kept, row: rows[0] },
      { source: "default", batchId: "b2", index: 1, kept, row: rows[1] },
    ]);
    expect(await lane("conf-keep", "conflicts")).toHaveLength(1);
  });

  it("volatile is bound at creation, like the key; onConflict and keepDuplicates are not", async () => {
    await createStream("conf-bound", base);
    const changed = await call("PUT", "/v1/streams/conf-bound", { ...base, volatile: ["received_at", "attempt"] });
    expect(changed.status).toBe(409);
    expect(await changed.text()).toContain("volatile");
    expect((await call("PUT", "/v1/streams/conf-bound", { ...base, key: { content: { exclude: [] } }, volatile: [] })).status).toBe(409);
    expect((await call("PUT", "/v1/streams/conf-bound", { ...base, onConflict: "reject", keepDuplicates: true })).status).toBe(200);
    const bad = await call("PUT", "/v1/streams/conf-bad", { key: { content: { exclude: ["x"] } }, mode: "global", volatile: ["y"] });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("key.content.exclude");
  });
});

describe("a partition's micro-batch against a model", () => {
  let n = 0;
  type Kept = { batch: string; e: number; t: number; digest: string; dropped: number; conflicts: number };
  it.each([
    ["text", { mode: "within-watermark", delay: 100, hasEventTime: true }],
    ["hashed", { mode: "within-watermark", delay: 100, hasEventTime: true, hashedKeys: true }],
    ["hashed, reject", { mode: "within-watermark", delay: 100, hasEventTime: true, hashedKeys: true, onConflict: "reject" }],
  ] as [string, DedupSettings][])("%s: decisions, kept batches, gaps and receipts of groups of entries, judged in order", async (_name, settings) => {
    const entry = fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d", "e"), fc.integer({ min: 0, max: 300 }), fc.constantFrom("1", "2")), { maxLength: 6 });
    const group = fc.record({ watermark: fc.integer({ min: 0, max: 1300 }), entries: fc.array(entry, { minLength: 1, maxLength: 3 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(group, { minLength: 1, maxLength: 6 }), async (groups) => {
        const p = env.PARTITION.getByName(`group-model-${++n}/0`) as DurableObjectStub<Partition>;
        const keys = new Map<string, Kept>();
        let wm = 0;
        let b = 0;
        for (const [g, { watermark, entries }] of groups.entries()) {
          wm = Math.max(wm, watermark);
          for (const [k, kept] of keys) if (kept.e <= wm) keys.delete(k);
          const batches = entries.map(() => `s\nb${++b}`);
          const rowsOf = entries.map((rows) => rows.map(([key, t, digest], index) => ({ index, key, eventTime: 1000 + t, digest })));
          const want = rowsOf.map((rows, i) => {
            const r = applyBatch(
              settings,
              wm,
              rows,
              (k) => keys.has(k),
              (k) => keys.get(k)?.digest ?? null,
            );
            const kept: { at: number; batch: string | null }[] = [];
            const gaps: number[] = [];
            const added = new Map(
              r.inserts.map((c) => [c.stateKey, { batch: batches[i], e: c.expiresAt!, t: c.eventTime!, digest: c.digest!, dropped: 0, conflicts: 0 }]),
            );
            rows.forEach((row, at) => {
              const d = r.decisions[at];
              if (d === "e" || d === "l") return;
              const held = keys.get(row.key) ?? added.get(row.key)!;
              if (d !== "x") held.dropped++;
              if (d !== "d") held.conflicts++;
              if (d !== "d") kept.push({ at, batch: held.batch });
              if (d !== "x") gaps.push(Math.abs(row.eventTime - held.t));
            });
            for (const [k, v] of added) keys.set(k, v);
            return { decisions: r.decisions.join(""), kept, gaps };
          });
          const got = await p.applyGroup({
            epoch: "e1",
            group: `g${g}`,
            watermark,
            entries: rowsOf.map((rows, i) => ({ batch: batches[i], settings, rows: rowColumns(rows) })),
          });
          expect(got.decisions).toEqual(want.map((w) => w.decisions));
          expect(got.kept ?? want.map(() => [])).toEqual(want.map((w) => w.kept));
          expect(got.gaps!.map((x) => [...x].sort())).toEqual(want.map((w) => [...w.gaps].sort()));
          expect(got.rows).toBe(keys.size);
        }
        for (const [k, kept] of keys) {
          expect((await p.lookup("e1", k))[0]).toMatchObject({ batch: kept.batch, dropped: kept.dropped, conflicts: kept.conflicts, expiresAt: kept.e });
        }
      }),
      { numRuns: 25 },
    );
  });
});

describe("a partition's names of batches", () => {
  it.each([false, true])(
    "go in chunks of many batches (one row each), answer every key's batch, and go when all their keys have (hashed: %s)",
    async (hashedKeys) => {
      const settings: DedupSettings = { mode: "within-watermark", delay: 100, hasEventTime: true, hashedKeys };
      const p = env.PARTITION.getByName(`names-${hashedKeys}/0`) as DurableObjectStub<Partition>;
      const batch = (b: number) => `source-with-a-long-name\nbatch-${String(b).padStart(4, "0")}-${"x".repeat(40)}`;
      // 200 batches of one key each (k0 at 1000 … k199 at 1199), and a duplicate of the key before.
      for (let b = 0; b < 200; b++) {
        const rows = [{ index: 0, key: `k${b}`, eventTime: 1000 + b }, ...(b > 0 ? [{ index: 1, key: `k${b - 1}`, eventTime: 1000 + b }] : [])];
        expect((await applyOne(p, { epoch: "e1", batch: batch(b), watermark: 0, settings, rows })).decisions).toBe(b > 0 ? "ed" : "e");
      }
      const chunks = () => runInDurableObject(p, (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM kept_names").one().n);
      expect(await chunks()).toBeGreaterThan(3); // ~30 names a chunk
      for (const b of [0, 1, 57, 58, 120, 198, 199]) expect((await p.lookup("e1", `k${b}`))[0]).toMatchObject({ batch: batch(b), dropped: b < 199 ? 1 : 0 });
      // A chunk's row keeps the names' shared start once (packNames).
      const stored = await runInDurableObject(p, (_o, state) =>
        state.storage.sql.exec<{ n: number; batches: string }>("SELECT n, batches FROM kept_names ORDER BY n").toArray(),
      );
      for (const r of stored) {
        const { p: prefix, b: rests } = JSON.parse(r.batches) as { p: string; b: string[] };
        expect(rests.map((rest) => prefix + rest)).toEqual(rests.map((_, i) => batch(r.n - 1 + i)));
        expect(prefix.startsWith("source-with-a-long-name\nbatch-0")).toBe(true);
        expect(r.batches.length).toBeLessThan(JSON.stringify(rests.map((rest) => prefix + rest)).length - (rests.length - 1) * prefix.length);
      }
      // A chunk as earlier releases stored it (a plain array) still answers.
      await runInDurableObject(p, (_o, state) => {
        const first = stored[1];
        const { p: prefix, b: rests } = JSON.parse(first.batches) as { p: string; b: string[] };
        state.storage.sql.exec("UPDATE kept_names SET batches = ? WHERE n = ?", JSON.stringify(rests.map((rest) => prefix + rest)), first.n);
      });
      for (let b = stored[1].n - 1; b < stored[2].n - 1; b++) expect((await p.lookup("e1", `k${b}`))[0]).toMatchObject({ batch: batch(b) });
      // Keys up to k99 expire: their chunks go, the others stay and still answer.
      const before = await chunks();
      await p.advance("e1", 1199);
      expect(await p.lookup("e1", "k99")).toEqual([]);
      for (const b of [100, 150, 199]) expect((await p.lookup("e1", `k${b}`))[0]).toMatchObject({ batch: batch(b) });
      const left = await runInDurableObject(p, (_o, state) =>
        state.storage.sql.exec<{ n: number; expired: number }>("SELECT count(*) AS n, count(*) FILTER (WHERE until <= 1199) AS expired FROM kept_names").one(),
      );
      expect(left.expired).toBe(0);
      expect(left.n).toBeLessThan(before);
      expect(left.n).toBeGreaterThan(0);
    },
  );
});

describe("a kept copy in the same micro-batch", () => {
  const request = (batchId: string, rows: unknown[]): IngestRequest => ({
    sourceHeader: null,
    batchId,
    auth: { kind: "admin" },
    rows,
    identity: `identity-of-${batchId}`,
    bytes: 100,
  });
  const b2 = [
    { id: "C", ts: at(10, 1), v: 1 },
    { id: "A", ts: at(10, 0), v: 9 },
  ];
  const b3 = [
    { id: "C", ts: at(10, 1), v: 1 },
    { id: "A", ts: at(10, 0), v: 1 },
    { id: "D", ts: at(10, 2), v: 1 },
    { id: "D", ts: at(10, 2), v: 2 },
  ];
  const lanes = async (name: string) => ({
    conflicts: (await lane(name, "conflicts")).map((x) => [x.batchId, x.index, x.kept]),
    duplicates: (await lane(name, "duplicates")).map((x) => [x.batchId, x.index, x.kept]),
  });
  const ref = (batchId: string, seq: number | null) => ({ batchId, source: "default", seq });
  // b3 drops C against b2 (committing with it), A against b1, D against its own first D.
  const expected = {
    conflicts: [
      ["b2", 1, ref("b1", 1)],
      ["b3", 3, ref("b3", 3)],
    ],
    duplicates: [
      ["b2", 1, ref("b1", 1)],
      ["b3", 0, ref("b2", 2)],
      ["b3", 1, ref("b1", 1)],
      ["b3", 3, ref("b3", 3)],
    ],
  };

  it("is named by the commit it takes with the dropped copy's (its members commit in order, with consecutive numbers)", async () => {
    const name = "same-group";
    await createStream(name, { ...base, keepDuplicates: true });
    await post(name, [{ id: "A", ts: at(10, 0), v: 1 }], { "idempotency-key": "b1" });
    const answers = await runInDurableObject(env.COORDINATOR.getByName(name), (c) => c.ingestMany([request("b2", b2), request("b3", b3)]));
    expect(answers.map((a) => a.kind)).toEqual(["done", "done"]);
    const progress = (await json(call("GET", `/v1/streams/${name}/progress`))).progress;
    expect(progress.map((p: any) => [p.batchId, p.commitSeq])).toEqual([
      ["b1", 1],
      ["b2", 2],
      ["b3", 3],
    ]);
    expect(await lanes(name)).toEqual(expected);
  });

  it("after the group crashed, its members' retries write the same entries (the kept copy's batch committed first)", async () => {
    const name = "same-group-crash";
    await createStream(name, { ...base, keepDuplicates: true });
    await post(name, [{ id: "A", ts: at(10, 0), v: 1 }], { "idempotency-key": "b1" });
    const crashed = await runInDurableObject(env.COORDINATOR.getByName(name), (c) => {
      armFault(batchFaultKey(name, "b2"), "after-decide");
      return c.ingestMany([request("b2", b2), request("b3", b3)]);
    });
    expect(crashed.map((a) => a.kind)).toEqual(["failed", "failed"]);
    expect(await lanes(name)).toEqual({ conflicts: [], duplicates: [] });
    // Each retried on its own, in order: b2 commits as 2, then b3 as 3 names b2 by its commit.
    for (const [batchId, rows] of [
      ["b2", b2],
      ["b3", b3],
    ] as const) {
      expect(await runInDurableObject(env.COORDINATOR.getByName(name), (c) => c.ingestMany([request(batchId, rows)]))).toMatchObject([{ kind: "done" }]);
    }
    expect(await lanes(name)).toEqual(expected);
  });
});

describe("content keys", () => {
  for (const stateKeys of ["text", "hashed"] as const) {
    it(`(${stateKeys} state) a row is keyed by the SHA-256 of its canonical JSON without the excluded fields`, async () => {
      const name = `content-${stateKeys}`;
      await createStream(name, {
        key: { content: { exclude: ["received_at", "meta.attempt"] } },
        eventTime: "ts",
        watermarkDelay: "10 minutes",
        partitions: 3,
        stateKeys,
      });
      const a = { ts: at(10, 0), user: "u1", amount: 5, received_at: 1, meta: { attempt: 1, region: "eu" } };
      // Another member order, another received_at and attempt: the same content.
      const again = JSON.parse('{"meta":{"region":"eu","attempt":3},"amount":5.0,"user":"u1","received_at":2,"ts":' + at(10, 0) + "}");
      const other = { ...a, amount: 6 };
      const r = await post(name, [a, again, other]);
      expect(r).toMatchObject({ emitted: 2, duplicates: 1, conflicts: 0 });
      expect((await output(name)).map((x) => x.amount)).toEqual([5, 6]);
      const jcs = `{"amount":5,"meta":{"region":"eu"},"ts":${at(10, 0)},"user":"u1"}`;
      const hex = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(jcs))), (b) => b.toString(16).padStart(2, "0")).join(
        "",
      );
      const [found] = await receipt(name, again);
      expect(found).toMatchObject({ expiresAt: at(10, 10), dropped: 1, kept: { seq: 1, eventTime: at(10, 0) } });
      if (stateKeys === "text") expect(found.key).toBe(JSON.stringify([hex]));
      else expect(found.key).toMatch(/^#[0-9a-f]{16}$/);
    });
  }
});

describe.each(FAULT_POINTS)("crash %s", (point) => {
  it("the retry writes each conflict and duplicate lane entry once, and counts each drop once", async () => {
    const name = `conf-crash-${point}`;
    await createStream(name, { ...base, keepDuplicates: true });
    await post(name, [{ id: "A", ts: at(10, 0), v: 1 }], { "idempotency-key": "b1" });
    const rows = [
      { id: "A", ts: at(10, 0), v: 1 },
      { id: "A", ts: at(10, 0), v: 2 },
      { id: "B", ts: at(10, 1) },
      { id: "C", ts: at(10, 2) },
    ];
    const crashed = await call("POST", `/v1/streams/${name}/events`, rows, { "idempotency-key": "b2", "x-test-fault": point });
    expect(crashed.status).toBe(500);
    expect(await lane(name, "conflicts")).toEqual([]);
    const retry = await post(name, rows, { "idempotency-key": "b2" });
    expect(retry).toMatchObject({ replayed: false, emitted: 2, duplicates: 2, conflicts: 1 });
    expect(await post(name, rows, { "idempotency-key": "b2" })).toEqual({ ...retry, replayed: true });
    expect((await lane(name, "conflicts")).map((x) => [x.batchId, x.index, x.kept])).toEqual([["b2", 1, { batchId: "b1", source: "default", seq: 1 }]]);
    expect((await lane(name, "duplicates")).map((x) => [x.batchId, x.index])).toEqual([
      ["b2", 0],
      ["b2", 1],
    ]);
    expect((await receipt(name, { id: "A", ts: at(10, 0) }))[0]).toMatchObject({ dropped: 2, conflicts: 1 });
  });
});

describe("a partition's receipts", () => {
  let n = 0;
  it.each([false, true])("name the batch that kept each key, in order or not, and are forgotten with their keys (hashed: %s; property)", async (hashedKeys) => {
    const settings: DedupSettings = { mode: "within-watermark", delay: 100, hasEventTime: true, hashedKeys };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d", "e", "f", "g"), fc.integer({ min: 0, max: 400 })), { minLength: 1, maxLength: 5 }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.integer({ min: 0, max: 450 }),
        async (batches, evictAt) => {
          const p = env.PARTITION.getByName(`receipts-${hashedKeys}-${++n}/0`) as DurableObjectStub<Partition>;
          const keptBy = new Map<string, { batch: string; e: number }>();
          for (const [b, rows] of batches.entries()) {
            const batch = `s\nb${b}`;
            const r = await applyOne(p, {
              epoch: "e1",
              batch,
              watermark: 0,
              settings,
              rows: rows.map(([key, t], index) => ({ index, key, eventTime: 1000 + t })),
            });
            rows.forEach(([key, t], i) => r.decisions[i] === "e" && keptBy.set(key, { batch, e: 1000 + t + 100 }));
          }
          for (const [key, kept] of keptBy) expect((await p.lookup("e1", key))[0]).toMatchObject({ batch: kept.batch, expiresAt: kept.e });
          await p.advance("e1", 1100 + evictAt);
          for (const [key, kept] of keptBy) {
            const found = await p.lookup("e1", key);
            expect(found.map((f) => f.batch)).toEqual(kept.e <= 1100 + evictAt ? [] : [kept.batch]);
          }
          // A batch's name does not outlive its keys: neither a chunk of names (kept_names) nor the open one (in the meta row).
          const left = await runInDurableObject(p, (_o, state) => {
            const rows = state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM kept_names WHERE until <= ?", 1100 + evictAt).one().n;
            const open = state.storage.sql.exec<{ names: string | null }>("SELECT names FROM meta").one().names;
            const chunk = open ? (JSON.parse(open) as { u?: number | null; b: string[] }) : null;
            return rows + (chunk && chunk.u != null && chunk.u <= 1100 + evictAt && chunk.b.length > 0 ? 1 : 0);
          });
          if (keptBy.size > 0 && [...keptBy.values()].some((k) => k.e <= 1100 + evictAt)) expect(left).toBe(0);
        },
      ),
      { numRuns: 25 },
    );
  });
});
