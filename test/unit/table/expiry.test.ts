/**
 * Snapshot expiry (src/table/expiry.ts, issue #33) against a model of what
 * readers may still use: any sequence of appends, compactions, time passing
 * and sweeps, with any `retain`. At every step, every snapshot that was
 * current at some moment of the last `retain` still reads whole (its
 * manifest list, manifests and live data files are all there, read with
 * avsc); once every journal is due and swept, the bucket holds exactly the
 * files the retained snapshots use (plus the metadata versions), so expired
 * snapshots' files are gone; and the table reads whole with icebird.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { appendToTable } from "../../../src/table/append";
import { compactTable } from "../../../src/table/compact";
import { loadTable } from "../../../src/table/commit";
import { EXPIRED_FOLDER, sweepExpired } from "../../../src/table/expiry";
import { HISTORY_MAX } from "../../../src/table/metadata";
import { memoryStore } from "../../../src/table/memory-store";
import { decodeWithAvsc } from "../../support/avsc-reader";
import { serveBucket } from "../../support/iceberg-reader";

const T0 = Date.UTC(2026, 11, 7);
const DAY = 86_400_000;

type Store = ReturnType<typeof memoryStore>;

/** The bucket keys a snapshot uses, read with avsc: its manifest list, its manifests, their live data files. */
async function used(s: Store, baseUri: string, manifestList: string): Promise<string[]> {
  const key = (uri: string) => uri.slice(baseUri.length + 1);
  const out = [key(manifestList)];
  const list = s.objects.get(key(manifestList));
  if (!list) throw new Error(`missing ${manifestList}`);
  for (const m of (await decodeWithAvsc(list)).records) {
    const bytes = s.objects.get(key(m.manifest_path as string));
    if (!bytes) throw new Error(`missing ${m.manifest_path}`);
    out.push(key(m.manifest_path as string));
    for (const e of (await decodeWithAvsc(bytes)).records) if (e.status !== 2) out.push(key((e.data_file as { file_path: string }).file_path));
  }
  return out;
}

const op = fc.oneof(
  fc.record({ kind: fc.constant("append" as const), rows: fc.integer({ min: 1, max: 4 }), days: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant("compact" as const) }),
  fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 1, max: 3_000 }) }),
  fc.record({ kind: fc.constant("sweep" as const) }),
);

describe("snapshot expiry", () => {
  test("a snapshot current within the last retain always reads whole; expired snapshots' files go once swept; the table reads whole", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1_000, max: 5_000 }), fc.array(op, { minLength: 5, maxLength: 40 }), async (retainMs, ops) => {
        const s = memoryStore();
        const served = await serveBucket(s);
        try {
          const baseUri = served.baseUri;
          const stream = "ex";
          let now = T0;
          let seq = 0;
          let rows = 0;
          // Each snapshot's manifest list and until when it was current (null: it still is).
          const history: { list: string; until: number | null }[] = [];
          const observe = async () => {
            const loaded = await loadTable(s, stream);
            const current = loaded?.table.snapshots.find((x) => x["snapshot-id"] === loaded.table["current-snapshot-id"]);
            if (!current || history.at(-1)?.list === current["manifest-list"]) return;
            if (history.length > 0) history.at(-1)!.until = now;
            history.push({ list: current["manifest-list"], until: null });
          };
          const common = { stream, baseUri, retainMs, partitionBy: "day", eventTime: "ts", schema: { id: "string", ts: "timestamp" } } as const;
          for (const o of ops) {
            if (o.kind === "append") {
              seq++;
              const batch = Array.from({ length: o.rows }, (_, i) => ({ id: `${seq}-${i}`, ts: T0 + ((i * o.days) % 3) * DAY }));
              await appendToTable(s, { ...common, rows: batch, commitSeq: seq, now });
              rows += batch.length;
            } else if (o.kind === "compact") await compactTable(s, stream, { minFiles: 2, targetBytes: 1 << 20, now, retainMs });
            else if (o.kind === "wait") now += o.ms;
            else await sweepExpired(s, stream, now, retainMs);
            await observe();
            // What a reader that loaded the table in the last retain may be reading is all there.
            for (const h of history) if (h.until === null || h.until >= now - retainMs) await used(s, baseUri, h.list);
          }
          if (seq === 0) return;
          // Long after, two appends retain apart: the second expires every snapshot replaced before the first (the one it
          // replaces stays: a reader may have just loaded it), and the sweep, once due, frees their files.
          for (const gap of [2 * retainMs + 1, retainMs + 1]) {
            now += gap;
            await appendToTable(s, { ...common, rows: [{ id: `last-${gap}`, ts: T0 }], commitSeq: ++seq, now });
            rows++;
          }
          now += retainMs + 1;
          const swept = await sweepExpired(s, stream, now, retainMs);
          expect(swept.nextDue).toBeNull();
          const { table } = (await loadTable(s, stream))!;
          expect(table.snapshots).toHaveLength(2);
          expect(table["snapshot-log"].map((e) => e["snapshot-id"])).toEqual(table.snapshots.map((x) => x["snapshot-id"]));
          const kept = new Set((await Promise.all(table.snapshots.map((x) => used(s, baseUri, x["manifest-list"])))).flat());
          const files = [...s.objects.keys()].filter((k) => /\/(data\/|metadata\/.*\.avro$)/.test(k));
          expect(files.sort()).toEqual([...kept].sort());
          expect([...s.objects.keys()].filter((k) => k.includes(EXPIRED_FOLDER))).toEqual([]);
          expect((await served.read(stream)).length).toBe(rows);
        } finally {
          await served.close();
        }
      }),
      { numRuns: 25 },
    );
  });

  test("past HISTORY_MAX snapshots within retain: they leave the metadata, their files stay until retain after they were replaced; old metadata versions go", async () => {
    const s = memoryStore();
    const stream = "many";
    const baseUri = "http://127.0.0.1:1";
    const retainMs = 60_000;
    let now = T0;
    for (let seq = 1; seq <= HISTORY_MAX + 5; seq++) {
      await appendToTable(s, { stream, baseUri, retainMs, schema: { id: "string" }, rows: [{ id: `r${seq}` }], commitSeq: seq, now: (now += 10) });
      if (seq % 4 === 0) await compactTable(s, stream, { minFiles: 2, targetBytes: 1 << 20, now: (now += 10), retainMs });
    }
    const { table } = (await loadTable(s, stream))!;
    expect(table.snapshots).toHaveLength(HISTORY_MAX);
    const journals = [...s.objects.keys()].filter((k) => k.includes(EXPIRED_FOLDER));
    expect(journals.length).toBeGreaterThan(0);
    const before = s.objects.size;
    expect((await sweepExpired(s, stream, now, retainMs)).deleted).toBe(0); // none due: a reader of the dropped snapshots may still be at it
    expect(s.objects.size).toBe(before);
    const later = await sweepExpired(s, stream, now + retainMs, retainMs);
    expect(later.deleted).toBeGreaterThan(0);
    expect(later.journals).toBe(journals.length);
    // What the retained snapshots use is all there.
    for (const x of table.snapshots) await used(s, baseUri, x["manifest-list"]);
    // The metadata versions below the log's oldest entry went; those in the log stay.
    const versions = () => [...s.objects.keys()].filter((k) => k.endsWith(".metadata.json")).map((k) => Number(/v(\d+)\.metadata/.exec(k)![1]));
    const oldestLogged = Number(/v(\d+)\.metadata/.exec(table["metadata-log"][0]["metadata-file"])![1]);
    expect(later.versions).toBe(oldestLogged - 1);
    expect(Math.min(...versions())).toBe(oldestLogged);
    for (const e of table["metadata-log"]) expect(s.objects.has(e["metadata-file"].slice(baseUri.length + 1)), e["metadata-file"]).toBe(true);
    // With v1 gone and no hint, the table is still found (the newest version listed), and the next commit follows it.
    const { version } = (await loadTable(s, stream))!;
    s.objects.delete(`tables/${stream}/metadata/version-hint.text`);
    expect((await loadTable(s, stream))!.version).toBe(version);
    await appendToTable(s, { stream, baseUri, retainMs, schema: { id: "string" }, rows: [{ id: "after" }], commitSeq: HISTORY_MAX + 6, now: now + retainMs });
    expect((await loadTable(s, stream))!.version).toBe(version + 1);
  });
});
