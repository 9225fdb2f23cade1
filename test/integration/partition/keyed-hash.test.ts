/**
 * Hashed state keys that can't be collided on purpose (issue 27): a partition
 * that fixes a hashed layout draws a secret and stores keys by SipHash-2-4
 * under it; a partition that stored keys by the unkeyed MurmurHash3 before
 * keeps working with it, and the stream's health says so.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { PARTITION_MIGRATIONS } from "../../../src/partition/migrations";
import type { Partition } from "../../../src/partition/partition";
import type { DedupSettings } from "../../../src/stream/dedup";
import { partitionFor } from "../../../src/stream/partition-for";
import { keyHash64, keyHashLabel } from "../../../src/stream/key-hash";
import { keyedKeyHash64 } from "../../../src/stream/keyed-key-hash";
import { migrate } from "../../../src/storage/migrations";
import { applyOne, at, call, createStream, json, post, rewriteOpen, storedEntries } from "../helpers";

const hashed: DedupSettings = { mode: "within-watermark", delay: 3_600_000, hasEventTime: true, hashedKeys: true };
const meta = (stub: DurableObjectStub<Partition>) =>
  runInDurableObject(stub, (_p, state) => ({
    ...state.storage.sql.exec<{ hashed: number; hash_key: string | null }>("SELECT hashed, hash_key FROM meta").one(),
    keys: Object.values(storedEntries(state.storage.sql))
      .flat()
      .map((e) => e.key)
      .sort(),
  }));

it("a new hashed partition draws its own secret and stores SipHash-2-4 under it, not the unkeyed hash", async () => {
  const [p, q] = ["keyed-new/0", "keyed-new/1"].map((n) => env.PARTITION.getByName(n) as DurableObjectStub<Partition>);
  const t0 = Date.UTC(2026, 0, 1);
  for (const stub of [p, q]) {
    const r = await applyOne(stub, {
      epoch: "e1",
      batch: "s\nb1",
      watermark: 0,
      settings: hashed,
      rows: [
        { index: 0, key: "A", eventTime: t0 },
        { index: 1, key: "A", eventTime: t0 },
      ],
    });
    expect(r.decisions).toBe("ed");
  }
  const [mp, mq] = [await meta(p), await meta(q)];
  expect(mp.hashed).toBe(2);
  expect(mp.hash_key).toMatch(/^[0-9a-f]{32}$/);
  expect(mp.hash_key).not.toBe(mq.hash_key);
  expect(mp.keys).toEqual([keyedKeyHash64(mp.hash_key!, "A")]);
  expect(mp.keys).not.toEqual([keyHash64("A")]);
  // The secret is storage, not memory: after a restart the same key is still found.
  await evictDurableObject(p);
  expect((await applyOne(p, { epoch: "e1", batch: "s\nb2", watermark: 0, settings: hashed, rows: [{ index: 0, key: "A", eventTime: t0 }] })).decisions).toBe(
    "d",
  );
  expect(await p.describe("e1")).not.toHaveProperty("unkeyedHash");
});

it("a hashed partition of version 7 keeps its unkeyed hash after the upgrade, finds its keys by it, and says so", async () => {
  const stub = env.PARTITION.getByName("keyed-old/0") as DurableObjectStub<Partition>;
  const t0 = Date.UTC(2026, 0, 1);
  const first = await applyOne(stub, { epoch: "e1", batch: "s\nb1", watermark: 0, settings: hashed, rows: [{ index: 0, key: "A", eventTime: t0 }] });
  expect(first.decisions).toBe("e");
  // Rewrite it as version 7 left a hashed partition: meta.hashed 1, no secret column, the key stored by MurmurHash3.
  await runInDurableObject(stub, async (_p, state) => {
    const [row] = storedEntries(state.storage.sql).open;
    const m = state.storage.sql.exec<{ width: number; base: number; watermark: number }>("SELECT width, base, watermark FROM meta").one();
    await state.storage.deleteAll();
    migrate(
      state.storage.sql,
      PARTITION_MIGRATIONS.filter((x) => x.version <= 7),
      (fn) => state.storage.transactionSync(fn),
    );
    state.storage.sql.exec(
      "INSERT INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, base) VALUES (1, 'e1', ?, 1, ?, ?, 1, ?)",
      m.watermark,
      t0 + 3_600_000,
      m.width,
      m.base,
    );
    // Version 7's row: b and e relative, t the batch's number (a hashed key with an expiry).
    state.storage.sql.exec(`INSERT INTO keys (b, k, t, e, d) VALUES (?, ${keyHash64("A")}, ?, ?, NULL)`, row.b, row.n, row.e);
  });
  await evictDurableObject(stub);
  const r = await applyOne(stub, {
    epoch: "e1",
    batch: "s\nb2",
    watermark: 0,
    settings: hashed,
    rows: [
      { index: 0, key: "A", eventTime: t0 },
      { index: 1, key: "B", eventTime: t0 },
    ],
  });
  expect(r.decisions).toBe("de");
  const m = await meta(stub);
  expect(m).toMatchObject({ hashed: 1, hash_key: null });
  expect(m.keys.sort()).toEqual([keyHash64("A"), keyHash64("B")].sort());
  expect((await stub.list("e1", "", 10)).map((x) => x.key).sort()).toEqual([keyHashLabel("A"), keyHashLabel("B")].sort());
  expect(await stub.describe("e1")).toMatchObject({ rows: 2, unkeyedHash: true });
});

it("a hashed stream's health warns while a partition keeps the unkeyed hash, and a new one's does not", async () => {
  const body = { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2, stateKeys: "hashed" };
  for (const name of ["keyed-health-old", "keyed-health-new"]) {
    await createStream(name, body);
    expect(await post(name, [{ id: "a", ts: at(10, 0) }])).toMatchObject({ emitted: 1 });
  }
  const health = async (name: string) => json(call("GET", `/v1/streams/${name}/health`));
  expect((await health("keyed-health-new")).reasons.map((r: { code: string }) => r.code)).not.toContain("unkeyed-key-hash");
  // The old stream's partition as an earlier release left it: the unkeyed hash (meta.hashed 1, no secret).
  const stub = env.PARTITION.getByName(`keyed-health-old/${partitionFor('["a"]', 2)}`) as DurableObjectStub<Partition>;
  await runInDurableObject(stub, (_p, state) => {
    rewriteOpen(state.storage.sql, true, (e) => ({ ...e, key: keyHash64('["a"]') }));
    state.storage.sql.exec("UPDATE meta SET hashed = 1, hash_key = NULL");
  });
  await evictDurableObject(stub);
  const old = await health("keyed-health-old");
  expect(old.status).toBe("warn");
  expect(old.reasons).toEqual([
    expect.objectContaining({ code: "unkeyed-key-hash", severity: "warn", detail: expect.stringMatching(/^1 partition\(s\) store keys by the unkeyed/) }),
  ]);
  expect(old.state).toMatchObject({ unkeyedHashPartitions: 1 });
  expect((await json(call("GET", "/v1/streams/keyed-health-old"))).state).toMatchObject({ rows: 1, unkeyedHashPartitions: 1 });
  // And it still dedups by that hash.
  expect(await post("keyed-health-old", [{ id: "a", ts: at(10, 1) }])).toMatchObject({ emitted: 0, duplicates: 1 });
});
