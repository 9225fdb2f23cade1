import { describe, expect, test } from "vitest";
import { batchId, chunkRows, FileError, rowsOf, sha256hex } from "../../../src/cli/chunk.ts";

const rows = (n: number, from = 0) => Array.from({ length: n }, (_, i) => JSON.stringify({ id: `e${from + i}`, v: i }));
const text = (b: { body: Uint8Array }) => Buffer.from(b.body).toString("utf8");

describe("rowsOf", () => {
  test("a JSON array is one row per element, an object one row, each on one line", () => {
    expect(rowsOf('[\n {"a": 1,\n  "b": [1, 2]},\n {"a": 2}\n]\n', "json")).toEqual(['{"a":1,"b":[1,2]}', '{"a":2}']);
    expect(rowsOf('\uFEFF{"a": "x\\ny"}', "json")).toEqual(['{"a":"x\\ny"}']);
    expect(rowsOf("[]", "json")).toEqual([]);
    expect(rowsOf("  \n", "json")).toEqual([]);
  });

  test("a .json scalar or invalid JSON is a file error", () => {
    expect(() => rowsOf("42", "json")).toThrow(FileError);
    expect(() => rowsOf("null", "json")).toThrow(/array or an object/);
    expect(() => rowsOf("[1,", "json")).toThrow(/line 1 is not valid JSON/);
  });

  test("a .json file of one object per line (JSON Lines, as Spark writes part-….json) is one row per line; errors never quote it", () => {
    expect(rowsOf('{"a": 1}\n{"a": 2}\n', "json")).toEqual(['{"a": 1}', '{"a": 2}']);
    expect(rowsOf('{"a": 1}\r\n\r\n{"a": 2}', "json")).toEqual(['{"a": 1}', '{"a": 2}']);
    let message = "";
    try {
      rowsOf('{"a": 1}\n{"password": "hunter2\n', "json");
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^line 2 is not valid JSON/);
    expect(message).not.toContain("hunter2");
  });

  test("NDJSON keeps each non-blank line as written (trimmed, CRLF too) and names a bad line", () => {
    expect(rowsOf('{"a": 1}\r\n\n  {"a":2}  \n', "ndjson")).toEqual(['{"a": 1}', '{"a":2}']);
    expect(() => rowsOf('{"a": 1}\n{"a": \n', "ndjson")).toThrow(/line 2 /);
  });
});

describe("chunkRows", () => {
  test("cuts at maxRows, in order, each body NDJSON ending in a newline", () => {
    const r = rows(7);
    const batches = chunkRows("a.json", r, { maxRows: 3, maxBytes: 1 << 20 });
    expect(batches.map((b) => b.rows)).toEqual([3, 3, 1]);
    expect(batches.map((b) => b.index)).toEqual([0, 1, 2]);
    expect(batches.map(text).join("")).toBe(r.join("\n") + "\n");
    for (const b of batches) expect(text(b).endsWith("\n")).toBe(true);
  });

  test("cuts before maxBytes; a row larger than the limit goes alone", () => {
    const r = ["x".repeat(10), "y".repeat(10), "z".repeat(50), "w".repeat(5)].map((s) => JSON.stringify(s));
    const batches = chunkRows("a.json", r, { maxRows: 100, maxBytes: 30 });
    expect(batches.map((b) => b.rows)).toEqual([2, 1, 1]);
    for (const b of batches) if (b.rows > 1) expect(b.body.byteLength).toBeLessThanOrEqual(30);
    expect(chunkRows("a.json", [], { maxRows: 3, maxBytes: 100 })).toEqual([]);
  });

  test("counts bytes, not characters", () => {
    const r = [JSON.stringify("é".repeat(10)), JSON.stringify("é".repeat(10))]; // 22 bytes + newline each
    expect(chunkRows("f", r, { maxRows: 10, maxBytes: 40 }).map((b) => b.rows)).toEqual([1, 1]);
    expect(chunkRows("f", r, { maxRows: 10, maxBytes: 46 }).map((b) => b.rows)).toEqual([2]);
  });
});

describe("batch ids", () => {
  const limits = { maxRows: 4, maxBytes: 1 << 20 };

  test("are cli:<sha256(path)[:16]>:<index>:<sha256(body)[:16]>, visible ASCII, at most 255", () => {
    const [b] = chunkRows("dir/a.ndjson", rows(2), limits);
    expect(b.id).toBe(`cli:${sha256hex("dir/a.ndjson").slice(0, 16)}:0:${sha256hex(b.body).slice(0, 16)}`);
    expect(b.id).toBe(batchId("dir/a.ndjson", 0, b.body));
    expect(b.id).toMatch(/^[\x21-\x7e]{1,255}$/);
  });

  test("the same bytes give the same ids", () => {
    const a = chunkRows("x/y.json", rows(10), limits);
    const b = chunkRows("x/y.json", rows(10), limits);
    expect(b.map((x) => x.id)).toEqual(a.map((x) => x.id));
    expect(new Set(a.map((x) => x.id)).size).toBe(a.length);
  });

  test("another path or another position gives other ids for the same bytes", () => {
    const a = chunkRows("a.json", rows(4), limits);
    const b = chunkRows("b.json", rows(4), limits);
    expect(b[0].id).not.toBe(a[0].id);
    const twice = chunkRows("a.json", [...rows(4), ...rows(4)], limits);
    expect(text(twice[0])).toBe(text(twice[1]));
    expect(twice[0].id).not.toBe(twice[1].id);
  });

  test("an edited row changes only its chunk's id; appended rows change only the last chunk and add new ones", () => {
    const before = chunkRows("f.ndjson", rows(10), limits); // 4 + 4 + 2
    const edited = rows(10);
    edited[5] = JSON.stringify({ id: "e5", v: "changed" });
    const after = chunkRows("f.ndjson", edited, limits);
    expect(after.map((b, i) => b.id === before[i].id)).toEqual([true, false, true]);

    const appended = chunkRows("f.ndjson", rows(13), limits); // 4 + 4 + 4 + 1
    expect(appended.map((b, i) => b.id === before[i]?.id)).toEqual([true, true, false, false]);
  });
});
