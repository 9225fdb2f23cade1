import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SIZE_EVERY_ROWS, type Partition } from "../../../src/partition/partition";
import { applyOne, storedEntries, type OneBatch } from "../helpers";
import { rowColumns } from "../../../src/stream/row-columns";
import type { DedupSettings } from "../../../src/stream/dedup";

const within: DedupSettings = { mode: "within-watermark", delay: 100, hasEventTime: true };
const etk: DedupSettings = { mode: "event-time-key", delay: 100, hasEventTime: true };

let n = 0;
function fresh() {
  return env.PARTITION.getByName(`p-test-${++n}/0`) as DurableObjectStub<Partition>;
}
function req(batch: string, rows: [key: string, t: number][], watermark = 0, settings = within, epoch = "e1"): OneBatch {
  return { epoch, batch, watermark, settings, rows: rows.map(([key, eventTime], index) => ({ index, key, eventTime })) };
}

describe("Partition", () => {
  for (const [layout, settings] of [
    ["text", within],
    ["hashed (the kept time from the expiry)", { ...within, hashedKeys: true }],
  ] as const) {
    it(`reports each duplicate's event-time gap to the copy kept: stored before, earlier in the batch, in an earlier entry; ${layout} keys`, async () => {
      const p = fresh();
      await applyOne(p, req("s\nb0", [["A", 1000]], 0, settings));
      const rows = (batch: string, list: [string, number | null][]) => ({
        batch,
        settings,
        resumed: false,
        rows: rowColumns(list.map(([key, eventTime], index) => ({ index, key, eventTime }))),
      });
      const r = await p.applyGroup({
        epoch: "e1",
        watermark: 0,
        entries: [
          rows("s\nb1", [
            ["A", 1300],
            ["B", 2000],
            ["B", 1900],
            ["C", 500],
          ]),
          rows("t\nb2", [
            ["C", 520],
            ["A", 1000],
            ["D", 3000],
          ]),
        ],
      });
      expect(r.decisions).toEqual(["dede", "dde"]);
      expect(r.gaps).toEqual([
        [300, 100],
        [20, 0],
      ]);
      // No duplicates, no gaps (and no extra statement: duplicateGaps returns before its SELECT).
      expect((await p.applyGroup({ epoch: "e1", watermark: 0, entries: [rows("s\nb3", [["E", 10]])] })).gaps).toEqual([[]]);
    });
  }

  it("reports its storage size as read when its key count last moved by SIZE_EVERY_ROWS; describe reads it afresh", async () => {
    const p = fresh();
    const size = () => runInDurableObject(p, (_o, state) => state.storage.sql.databaseSize);
    const first = await applyOne(p, req("s\nb0", [["A", 1000]]));
    expect(first.bytes).toBe(await size());
    // Many keys at once: the size is read again, and is the storage's.
    const keys = (prefix: string, n: number) => Array.from({ length: n }, (_, i): [string, number] => [`${prefix}${i}-${"x".repeat(200)}`, 1000]);
    const big = await applyOne(p, req("s\nb1", keys("K", SIZE_EVERY_ROWS)));
    expect(big.bytes).toBe(await size());
    expect(big.bytes).toBeGreaterThan(first.bytes);
    // Fewer keys than that since: the figure stays as read, while the storage grows; describe says what it is now.
    let last = big;
    for (let b = 0; b < 3; b++) last = await applyOne(p, req(`s\nc${b}`, keys(`c${b}-`, 10)));
    expect(last.bytes).toBe(big.bytes);
    const now = await p.describe("e1");
    expect(now.bytes).toBe(await size());
    expect(now.bytes).toBeGreaterThan(big.bytes);
    // Once SIZE_EVERY_ROWS more keys have come since the last reading, the next call reads it again.
    const after = await applyOne(p, req("s\nd", keys("d", SIZE_EVERY_ROWS)));
    expect(after.bytes).toBe(await size());
  });

  it("decides first copy wins, late rows, and counts state", async () => {
    const p = fresh();
    const r = await applyOne(
      p,
      req(
        "s\nb1",
        [
          ["A", 1000],
          ["B", 1000],
          ["A", 1001],
          ["C", 400],
        ],
        500,
      ),
    );
    expect(r.decisions).toBe("eedl");
    expect(r).toMatchObject({ replayed: false, inserted: 2, removed: 0, rows: 2, watermark: 500 });
  });

  it("replays a batch's recorded decisions instead of judging it a duplicate of itself", async () => {
    const p = fresh();
    const first = await applyOne(
      p,
      req("s\nb1", [
        ["A", 1000],
        ["B", 1000],
        ["A", 1000],
      ]),
    );
    expect(first.decisions).toBe("eed");
    const again = await applyOne(
      p,
      req("s\nb1", [
        ["A", 1000],
        ["B", 1000],
        ["A", 1000],
      ]),
    );
    expect(again).toMatchObject({ decisions: "eed", replayed: true, inserted: 0, rows: 2 });
    // Another batch with the same keys is a duplicate, as it should be.
    expect((await applyOne(p, req("s\nb2", [["A", 1000]]))).decisions).toBe("d");
    // The ledger survives the object being evicted from memory.
    await evictDurableObject(p);
    expect(
      (
        await applyOne(
          p,
          req("s\nb1", [
            ["A", 1000],
            ["B", 1000],
            ["A", 1000],
          ]),
        )
      ).decisions,
    ).toBe("eed");
  });

  it("a retried batch keeps its earlier decisions and judges only rows new to this partition", async () => {
    const p = fresh();
    const part: OneBatch = {
      ...req("s\nb1", []),
      rows: [
        { index: 0, key: "A", eventTime: 1000 },
        { index: 2, key: "B", eventTime: 1000 },
      ],
    };
    expect((await applyOne(p, part)).decisions).toBe("ee");
    const whole: OneBatch = {
      ...part,
      rows: [...part.rows, { index: 3, key: "A", eventTime: 1000 }, { index: 4, key: "C", eventTime: 1000 }],
    };
    const r = await applyOne(p, whole);
    expect(r.decisions).toBe("eede");
    expect(r.rows).toBe(3);
  });

  it("keeps the highest watermark it was given and judges with max(partition, batch)", async () => {
    const p = fresh();
    await p.advance("e1", 1000);
    const r = await applyOne(
      p,
      req(
        "s\nb1",
        [
          ["A", 900],
          ["B", 1000],
          ["C", 1001],
        ],
        200,
      ),
    );
    expect(r.decisions).toBe("lle");
    expect(r.watermark).toBe(1000);
    expect((await p.advance("e1", 10)).watermark).toBe(1000);
    expect((await p.describe("e1")).watermark).toBe(1000);
  });

  it("evicts within-watermark keys when wm >= T_first + delay (equality evicts)", async () => {
    const p = fresh();
    await applyOne(
      p,
      req("s\nb1", [
        ["A", 1000],
        ["B", 1050],
      ]),
    );
    expect(await p.list("e1", "", 10)).toEqual([
      { key: "A", eventTime: 1000, expiresAt: 1100 },
      { key: "B", eventTime: 1050, expiresAt: 1150 },
    ]);
    expect(await p.advance("e1", 1099)).toMatchObject({ removed: 0, rows: 2 });
    expect(await p.advance("e1", 1100)).toMatchObject({ removed: 1, rows: 1 });
    // A is forgotten: a later copy (not late) is emitted again; B is still remembered.
    expect(
      (
        await applyOne(
          p,
          req(
            "s\nb2",
            [
              ["A", 1200],
              ["B", 1201],
            ],
            1100,
          ),
        )
      ).decisions,
    ).toBe("ed");
  });

  it("event-time-key state is keyed by key and T and expires at T", async () => {
    const p = fresh();
    expect(
      (
        await applyOne(
          p,
          req(
            "s\nb1",
            [
              ["A", 1000],
              ["A", 1001],
              ["A", 1000],
            ],
            0,
            etk,
          ),
        )
      ).decisions,
    ).toBe("eed");
    expect(await p.advance("e1", 1000)).toMatchObject({ removed: 1, rows: 1 });
  });

  it("global keys never expire", async () => {
    const p = fresh();
    const g: DedupSettings = { mode: "global", delay: 100, hasEventTime: true };
    await applyOne(p, req("s\nb1", [["A", 1000]], 0, g));
    expect(await p.advance("e1", 10_000_000)).toMatchObject({ removed: 0, rows: 1 });
    expect((await applyOne(p, req("s\nb2", [["A", 20_000_000]], 10_000_000, g))).decisions).toBe("d");
  });

  it("drops state left by an earlier incarnation of the stream", async () => {
    const p = fresh();
    await applyOne(p, req("s\nb1", [["A", 1000]]));
    const r = await applyOne(p, req("s\nb1", [["A", 1000]], 0, within, "e2"));
    expect(r).toMatchObject({ decisions: "e", replayed: false, rows: 1 });
  });

  it("stores a whole sub-batch's keys in one packed chunk and keeps its row count in step with what is stored", async () => {
    const p = fresh();
    const rows: [string, number][] = Array.from({ length: 500 }, (_, i) => [`k${i % 300}`, 1000 + i]);
    const r = await applyOne(p, req("s\nbig", rows));
    expect(r.inserted).toBe(300);
    const stored = await runInDurableObject(p, (_o, state) => storedEntries(state.storage.sql));
    expect(new Set([...stored.sealed, ...stored.open].map((e) => e.key)).size).toBe(300);
    expect(r.rows).toBe(300);
  });
});
