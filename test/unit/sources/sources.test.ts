import { describe, expect, it } from "vitest";
import { HttpError } from "../../../src/http/problem";
import {
  addFailed,
  addOutcome,
  addSkipped,
  emptyTotals,
  fileVerdict,
  judgeError,
  keepError,
  MAX_ERRORS,
  needsListing,
  planPage,
  retryDelayMs,
  takeSlice,
} from "../../../src/sources/files/plan";
import { BATCH_ID_PATTERN } from "../../../src/ingest/batch-id-namespaces";
import { fileMode, isGzip } from "../../../src/sources/file-kind";
import { bareEtag, canonicalJson, fileBatchId, messageHash, queueBatchId } from "../../../src/sources/ids";
import { corruptRow, fileRows, parseJsonText } from "../../../src/sources/files/parse";
import { archiveKey, groupsOf, publicationLag, publicationState, PUBLISH_WAIT_MS } from "../../../src/sources/files/plan";
import { runBody } from "../../../src/sources/files/run-body";
import { TooManyRows } from "../../../src/http/body";
import { parseStreamConfig } from "../../../src/stream/config";
import { CORRUPT_LINE, validateRow } from "../../../src/stream/schema";
import { classify, queueVerdict, retryDelaySeconds, streamOfKey } from "../../../src/sources/queue/messages";
import { resultOf, type CoordinatorAnswer } from "../../../src/ingest/result";

describe("batch ids", () => {
  it("names an object version r2:{key}@{etag}", async () => {
    expect(await fileBatchId("in/a.json", "c846ff7a18f28c2e262116d6e8719ef0")).toBe("r2:in/a.json@c846ff7a18f28c2e262116d6e8719ef0");
    expect(await fileBatchId("in/a.json", '"c846ff7a"')).toBe("r2:in/a.json@c846ff7a");
    expect(bareEtag('W/"abc"')).toBe("abc");
  });

  it("hashes ids that are not 1-255 visible ASCII characters, deterministically", async () => {
    const long = `in/${"x".repeat(300)}.json`;
    const a = await fileBatchId(long, "e1");
    expect(a).toMatch(/^r2h:[0-9a-f]{64}$/);
    expect(await fileBatchId(long, "e1")).toBe(a);
    expect(await fileBatchId(long, "e2")).not.toBe(a);
    const spaced = await fileBatchId("in/my file.json", "e1");
    expect(spaced).toMatch(/^r2h:[0-9a-f]{64}$/);
    expect(await fileBatchId("in/été.json", "e1")).toMatch(/^r2h:/);
    // 255 characters exactly still fits as it is.
    const fits = `in/${"y".repeat(255 - "r2:in/@e1".length - ".json".length)}.json`;
    expect(await fileBatchId(fits, "e1")).toBe(`r2:${fits}@e1`);
    expect(BATCH_ID_PATTERN.test(`r2:${fits}@e1`)).toBe(true);
  });

  it("derives a queue batch id from the content, whatever the key order", async () => {
    const a = await messageHash("s", [{ id: 1, at: 2, nested: { b: 1, a: [1, { y: 2, x: 1 }] } }]);
    const b = await messageHash("s", [{ nested: { a: [1, { x: 1, y: 2 }], b: 1 }, at: 2, id: 1 }]);
    expect(a).toBe(b);
    expect(queueBatchId(a)).toMatch(/^q:[0-9a-f]{64}$/);
    expect(await messageHash("other", [{ id: 1, at: 2, nested: { b: 1, a: [1, { y: 2, x: 1 }] } }])).not.toBe(a);
    expect(await messageHash("s", [{ id: 2 }, { id: 1 }])).not.toBe(await messageHash("s", [{ id: 1 }, { id: 2 }]));
    expect(canonicalJson({ b: [1, "x", null, true], a: { d: undefined, c: 1.5 } })).toBe('{"a":{"c":1.5},"b":[1,"x",null,true]}');
  });

  it("reads .json as JSON and .ndjson/.jsonl as lines; nothing else", () => {
    expect(fileMode("a/b.json")).toBe("json");
    expect(fileMode("a/b.JSON")).toBe("json");
    expect(fileMode("a/b.ndjson")).toBe("ndjson");
    expect(fileMode("a/b.jsonl")).toBe("ndjson");
    expect(fileMode("a/b.csv")).toBeNull();
    expect(fileMode("a/json")).toBeNull();
    expect(fileMode("a/b.json.gz")).toBe("json");
    expect(fileMode("a/b.ndjson.GZ")).toBe("ndjson");
    expect(fileMode("a/b.jsonl.gz")).toBe("ndjson");
    expect(fileMode("a/b.csv.gz")).toBeNull();
    expect(isGzip("a/b.json.gz")).toBe(true);
    expect(isGzip("a/b.json")).toBe(false);
  });
});

describe("file rows, as Spark's JSON source reads them", () => {
  const text = (rows: unknown[], eol = "\n") => rows.map((r) => JSON.stringify(r)).join(eol) + eol;
  const a = { id: 1 };
  const b = { id: 2, nested: { x: [1, 2] } };

  it(".json: JSON Lines, unless the file is one document (then as it always was: the bare-hash identity)", () => {
    expect(fileRows(text([a, b]), "json", undefined, 10)).toEqual({ rows: [a, b], readAs: "ndjson", corruptLines: [] });
    expect(fileRows(text([a, b], "\r\n"), "json", undefined, 10).rows).toEqual([a, b]);
    expect(fileRows(JSON.stringify([a, b], null, 2), "json", undefined, 10)).toEqual({ rows: [a, b], readAs: "json", corruptLines: [] });
    expect(fileRows(JSON.stringify(b, null, 2), "json", undefined, 10)).toEqual({ rows: [b], readAs: "json", corruptLines: [] });
    expect(fileRows("\ufeff" + text([a]), "json", undefined, 10).rows).toEqual([a]);
    // .ndjson never reads whole: a one-line array is one (rejected) row, as before.
    expect(fileRows(JSON.stringify([a, b]), "ndjson", undefined, 10).rows).toEqual([[a, b]]);
  });

  it("a line that is not JSON is a placeholder row naming its line, none of its bytes; blank lines are skipped", () => {
    const r = fileRows(`${JSON.stringify(a)}\n\n{"id": 3, "password": "hunter2\n${JSON.stringify(b)}\n`, "json", undefined, 10);
    expect(r.rows).toEqual([a, corruptRow(3), b]);
    expect(r.corruptLines).toEqual([3]);
    expect(JSON.stringify(r)).not.toContain("hunter2");
    // Validation rejects the placeholder with a reason that names the line; a real row with more fields is not one.
    const parsed = parseStreamConfig({ key: ["id"], mode: "global" });
    if (!parsed.ok) throw new Error("config");
    const config = parsed.config;
    expect(validateRow(config, r.rows[1], 1, 0)).toEqual({ index: 1, error: "line 3 is not valid JSON" });
    expect(validateRow(config, { [CORRUPT_LINE]: 3, id: 1 }, 0, 0)).toMatchObject({ key: expect.any(String) });
  });

  it("multiLine: true reads the file whole only; false reads lines only", () => {
    expect(() => fileRows(text([a, b]), "json", true, 10)).toThrow(/not one JSON document/);
    expect(fileRows(JSON.stringify([a, b], null, 2), "json", true, 10).rows).toEqual([a, b]);
    const lines = fileRows(JSON.stringify(b, null, 2), "json", false, 100);
    expect(lines.readAs).toBe("ndjson");
    expect(lines.corruptLines.length).toBeGreaterThan(2);
  });

  it("refuses empty files, too many rows and deep nesting, without quoting the input", () => {
    expect(() => fileRows("  \n", "json", undefined, 10)).toThrow(/empty/);
    expect(() => fileRows("[]", "json", undefined, 10)).toThrow(/empty JSON array/);
    expect(() => fileRows(text([a, a, a]), "json", undefined, 2)).toThrow(TooManyRows);
    expect(() => fileRows(JSON.stringify([a, a, a]), "json", undefined, 2)).toThrow(TooManyRows);
    const deep = "[".repeat(70) + "]".repeat(70); // past MAX_JSON_DEPTH (64)
    expect(() => fileRows(deep, "json", undefined, 10)).toThrow(/nests more than/);
    const deepLine = fileRows(`${JSON.stringify(a)}\n${deep}\n`, "ndjson", undefined, 10);
    expect(deepLine.corruptLines).toEqual([2]);
    // Its reason says why: it is JSON, nested too deep (not "not valid JSON").
    const parsed = parseStreamConfig({ key: ["id"], mode: "global" });
    if (!parsed.ok) throw new Error("config");
    expect(validateRow(parsed.config, deepLine.rows[1], 1, 0)).toEqual({
      index: 1,
      error: "line 2 nests arrays and objects more than 64 levels deep; at most 64 are accepted",
    });
    expect(validateRow(parsed.config, { [CORRUPT_LINE]: 2, _corrupt_why: "other", id: 1 }, 0, 0)).toMatchObject({ key: expect.any(String) });
    expect(parseJsonText("{bad")).toEqual({ ok: false, why: "invalid" });
  });
});

describe("run publication and options", () => {
  const p = { commitSeq: 5, manifest: 5, table: 5, since: 1000 };
  it("is published when the manifest and the table (if any) hold the run's last commit; gives up after a while", () => {
    expect(publicationState(p, 1000)).toBe("published");
    expect(publicationState({ ...p, table: null }, 1000)).toBe("published");
    expect(publicationState({ ...p, table: 4 }, 1000)).toBe("waiting");
    expect(publicationState({ ...p, manifest: 4 }, 1000)).toBe("waiting");
    expect(publicationState({ ...p, manifest: 4 }, 1000 + PUBLISH_WAIT_MS)).toBe("timed-out");
    expect(publicationLag({ ...p, table: 3, snapshot: null })).toMatch(/the table holds commit 3/);
  });
  it("with several shards waits for each shard's own last commit, whatever the counts over them say", () => {
    const B = 1_000_000_000_000;
    const shards = [
      { commitSeq: 3, manifest: 3, table: 3 },
      { commitSeq: B + 2, manifest: B + 1, table: B + 2 },
    ];
    // Counted over shards the manifest holds enough (another shard's later commits make up for it): not published.
    expect(publicationState({ commitSeq: 5, manifest: 9, table: 9, since: 1000, shards }, 1000)).toBe("waiting");
    shards[1].manifest = B + 2;
    expect(publicationState({ commitSeq: 5, manifest: 5, table: 5, since: 1000, shards }, 1000)).toBe("published");
  });
  it("groups files into micro-batches of maxFilesPerTrigger; archives under the directory", () => {
    expect(groupsOf([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(groupsOf([1, 2], undefined)).toEqual([[1], [2]]);
    expect(archiveKey("done/", "in/a.json")).toBe("done/in/a.json");
    expect(runBody.safeParse({ prefix: "in/", cleanSource: "archive", sourceArchiveDir: "done/" }).success).toBe(true);
    expect(runBody.safeParse({ prefix: "in/", cleanSource: "archive", sourceArchiveDir: "in/old/" }).success).toBe(false);
    expect(runBody.safeParse({ prefix: "", cleanSource: "archive", sourceArchiveDir: "x/" }).success).toBe(false);
  });
});

describe("run planning", () => {
  const o = (key: string, etag = "e", size = 10) => ({ key, etag, size });

  it("splits a listing page into pending, skipped (done at that etag) and ignored", () => {
    const done = new Set(["a.json@e", "b.ndjson@old"]);
    const plan = planPage([o("a.json"), o("b.ndjson"), o("c.jsonl"), o("d.csv"), o("e.txt")], (k, e) => done.has(`${k}@${e}`));
    expect(plan.pending.map((f) => f.key)).toEqual(["b.ndjson", "c.jsonl"]);
    expect(plan.skipped.map((f) => f.key)).toEqual(["a.json"]);
    expect(plan.ignored).toBe(2);
  });

  it("takes a bounded slice per alarm, never none", () => {
    expect(takeSlice([], 20, 100)).toBe(0);
    expect(
      takeSlice(
        Array.from({ length: 50 }, () => ({ size: 1 })),
        20,
        100,
      ),
    ).toBe(20);
    expect(takeSlice([{ size: 60 }, { size: 30 }, { size: 20 }], 20, 100)).toBe(2);
    expect(takeSlice([{ size: 500 }, { size: 1 }], 20, 100)).toBe(1);
    expect(needsListing(0, false)).toBe(true);
    expect(needsListing(5, true)).toBe(false);
    expect(needsListing(20, false)).toBe(false);
  });

  it("adds outcomes (a replay counts its recorded outcome), failures and skips", () => {
    const outcome = {
      batchId: "b",
      source: "s",
      replayed: false,
      watermark: 0,
      watermarkAfter: 0,
      input: 5,
      emitted: 3,
      duplicates: 1,
      late: 0,
      rejected: [{ index: 4, error: "x" }],
    };
    let t = addOutcome(emptyTotals(), outcome);
    t = addOutcome(t, { ...outcome, replayed: true, rejected: [], rejectedCount: 7 });
    t = addSkipped(addFailed(t), 3);
    expect(t).toEqual({ files: { done: 2, skipped: 3, failed: 1, replayed: 1 }, input: 10, emitted: 6, duplicates: 2, late: 0, rejected: 8 });
  });

  it("judges results: the file's (refused as it is), the run's (the stream is gone), or passing (busy, a failed micro-batch)", () => {
    // What used to be guessed from an HttpError's status is now the typed result of submit (src/ingest/result.ts).
    const v = (r: CoordinatorAnswer) => fileVerdict(resultOf(r, "s", "b", null)).kind;
    expect(v({ kind: "too-large", detail: "too big" })).toBe("file");
    expect(v({ kind: "conflict" })).toBe("file");
    expect(v({ kind: "forbidden", detail: "disabled" })).toBe("file");
    expect(v({ kind: "unauthorized" })).toBe("file");
    expect(fileVerdict({ kind: "invalid", detail: "bad json" })).toEqual({ kind: "file", detail: "bad json" });
    expect(fileVerdict(resultOf({ kind: "missing" }, "s", "b", null))).toEqual({
      kind: "run",
      detail: 'stream "s" does not exist; create it with PUT /v1/streams/s',
    });
    expect(v({ kind: "busy", retryAfterMs: 10 })).toBe("transient");
    expect(fileVerdict(resultOf({ kind: "failed", message: "oops" }, "s", "b", null))).toEqual({ kind: "transient", detail: "oops" });
    const outcome = { batchId: "b", source: "s", replayed: true, watermark: 0, watermarkAfter: 0, input: 1, emitted: 0, duplicates: 1, late: 0, rejected: [] };
    expect(fileVerdict(resultOf({ kind: "replay", source: "s", outcome }, "s", "b", null))).toEqual({ kind: "done", outcome });
    // Thrown while reading an object: an HttpError is the refusal of its bytes (400 unparsable, 413 over the limits); anything else may pass.
    expect(judgeError(new HttpError(400, "x", "x", "bad json"))).toEqual({ kind: "file", detail: "bad json" });
    expect(judgeError(new HttpError(413, "x", "x", "too big")).kind).toBe("file");
    expect(judgeError(new TooManyRows(2, 3)).kind).toBe("file");
    expect(judgeError(new Error("network"))).toEqual({ kind: "transient", detail: "network" });
    expect(judgeError("dropped")).toEqual({ kind: "transient", detail: "dropped" });
    expect(retryDelayMs(1)).toBe(1000);
    expect(retryDelayMs(20)).toBe(60_000);
  });

  it("keeps the first few errors", () => {
    let errors: { key: string; detail: string }[] = [];
    for (let i = 0; i < MAX_ERRORS + 5; i++) errors = keepError(errors, `k${i}`, "bad");
    expect(errors).toHaveLength(MAX_ERRORS);
    expect(errors[0].key).toBe("k0");
  });
});

describe("queue messages", () => {
  const note = (action: string, key: string, bucket = "edge-dedup-input") => ({
    account: "acc",
    action,
    bucket,
    object: { key, size: 10, eTag: "abc" },
    eventTime: "2026-01-01T00:00:00Z",
  });

  it("classifies rows messages (object, string or bytes bodies)", () => {
    const m = { stream: "orders", source: "app", rows: [{ id: 1 }] };
    expect(classify(m, "edge-dedup-input")).toEqual({ kind: "rows", stream: "orders", source: "app", batchId: null, rows: [{ id: 1 }] });
    expect(classify(JSON.stringify({ ...m, batchId: "b-1" }), undefined)).toMatchObject({ kind: "rows", batchId: "b-1" });
    expect(classify(new TextEncoder().encode(JSON.stringify({ stream: "orders", rows: [{}] })), undefined)).toMatchObject({ kind: "rows", source: "default" });
  });

  it("refuses what is not a message: poison with a reason", () => {
    for (const bad of [
      "not json",
      42,
      [1],
      { stream: "orders" },
      { stream: "orders", rows: [] },
      { stream: "bad name", rows: [{}] },
      { stream: "orders", rows: [{}], batchId: "has space" },
      { stream: "orders", rows: [{}], extra: 1 },
    ]) {
      const c = classify(bad, undefined);
      expect(c.kind, JSON.stringify(bad)).toBe("poison");
      expect((c as { reason: string }).reason.length).toBeGreaterThan(5);
    }
  });

  it("classifies R2 event notifications: created under streams-in/{stream}/ ingests, deletes are ignored", () => {
    expect(classify(note("PutObject", "streams-in/orders/2026/a.json"), "edge-dedup-input")).toEqual({
      kind: "object",
      stream: "orders",
      key: "streams-in/orders/2026/a.json",
    });
    expect(classify(note("CompleteMultipartUpload", "streams-in/orders/b.ndjson"), "edge-dedup-input")).toMatchObject({ kind: "object" });
    expect(classify(note("DeleteObject", "streams-in/orders/a.json"), "edge-dedup-input").kind).toBe("ignore");
    expect(classify(note("PutObject", "streams-in/orders/a.csv"), "edge-dedup-input").kind).toBe("ignore");
    expect(classify(note("PutObject", "elsewhere/a.json"), "edge-dedup-input").kind).toBe("poison");
    expect(classify(note("PutObject", "streams-in/orders/a.json", "other"), "edge-dedup-input").kind).toBe("poison");
    expect(classify(note("Restore", "streams-in/orders/a.json"), "edge-dedup-input").kind).toBe("poison");
    expect(streamOfKey("streams-in/a/b/c.json")).toBe("a");
    expect(streamOfKey("streams-in/a.json")).toBeNull();
    expect(streamOfKey("streams-in//a.json")).toBeNull();
  });

  it("acks committed and replayed batches, retries what may pass, dead-letters refusals", () => {
    const q = (r: CoordinatorAnswer, batchId = "b") => queueVerdict(resultOf(r, "s", batchId, null), "s", batchId);
    const outcome = { batchId: "b", source: "s", replayed: false, watermark: 0, watermarkAfter: 0, input: 1, emitted: 1, duplicates: 0, late: 0, rejected: [] };
    expect(q({ kind: "done", outcome })).toEqual({ action: "ack" });
    expect(q({ kind: "replay", source: "s", outcome })).toEqual({ action: "ack" });
    expect(q({ kind: "busy", retryAfterMs: 5 })).toEqual({ action: "retry" });
    expect(q({ kind: "failed", message: "boom" })).toEqual({ action: "retry" });
    expect(q({ kind: "missing" })).toEqual({ action: "dead-letter", reason: 'stream "s" does not exist' });
    expect(q({ kind: "unauthorized" })).toEqual({ action: "dead-letter", reason: "refused: unauthorized" });
    expect(q({ kind: "too-large", detail: "big" })).toEqual({ action: "dead-letter", reason: "refused (413): big" });
    expect(q({ kind: "conflict" }, "qid:x")).toEqual({ action: "dead-letter", reason: 'refused (422): batch id "qid:x" was already used with other rows' });
    expect(q({ kind: "forbidden", detail: "disabled" })).toEqual({ action: "dead-letter", reason: "refused (403): disabled" });
    expect(queueVerdict({ kind: "invalid", detail: "rows: too deep" }, "s", "b")).toEqual({ action: "dead-letter", reason: "refused (400): rows: too deep" });
    expect(retryDelaySeconds(1)).toBe(2);
    expect(retryDelaySeconds(30)).toBe(300);
  });
});
