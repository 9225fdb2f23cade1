import { describe, expect, it } from "vitest";
import { HttpError } from "../../src/api/problem";
import { addFailed, addOutcome, addSkipped, emptyTotals, judgeError, keepError, MAX_ERRORS, needsListing, planPage, retryDelayMs, takeSlice } from "../../src/sources/files/plan";
import { bareEtag, canonicalJson, fileBatchId, fileMode, messageHash, queueBatchId, BATCH_ID_PATTERN } from "../../src/sources/ids";
import { classify, retryDelaySeconds, streamOfKey, verdictOf } from "../../src/sources/queue/messages";

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
    expect(takeSlice(Array.from({ length: 50 }, () => ({ size: 1 })), 20, 100)).toBe(20);
    expect(takeSlice([{ size: 60 }, { size: 30 }, { size: 20 }], 20, 100)).toBe(2);
    expect(takeSlice([{ size: 500 }, { size: 1 }], 20, 100)).toBe(1);
    expect(needsListing(0, false)).toBe(true);
    expect(needsListing(5, true)).toBe(false);
    expect(needsListing(20, false)).toBe(false);
  });

  it("adds outcomes (a replay counts its recorded outcome), failures and skips", () => {
    const outcome = { batchId: "b", source: "s", replayed: false, watermark: 0, watermarkAfter: 0, input: 5, emitted: 3, duplicates: 1, late: 0, rejected: [{ index: 4, error: "x" }] };
    let t = addOutcome(emptyTotals(), outcome);
    t = addOutcome(t, { ...outcome, replayed: true, rejected: [], rejectedCount: 7 });
    t = addSkipped(addFailed(t), 3);
    expect(t).toEqual({ files: { done: 2, skipped: 3, failed: 1, replayed: 1 }, input: 10, emitted: 6, duplicates: 2, late: 0, rejected: 8 });
  });

  it("judges errors: the file's (4xx), the run's (404), or passing (5xx, 409, anything else)", () => {
    expect(judgeError(new HttpError(400, "x", "x", "bad json")).kind).toBe("file");
    expect(judgeError(new HttpError(413, "x", "x", "too big")).kind).toBe("file");
    expect(judgeError(new HttpError(422, "x", "x", "reused")).kind).toBe("file");
    expect(judgeError(new HttpError(403, "x", "x", "disabled")).kind).toBe("file");
    expect(judgeError(new HttpError(404, "x", "x", "gone")).kind).toBe("run");
    expect(judgeError(new HttpError(409, "x", "x", "busy")).kind).toBe("transient");
    expect(judgeError(new HttpError(500, "x", "x", "oops")).kind).toBe("transient");
    expect(judgeError(new Error("network")).kind).toBe("transient");
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
    account: "acc", action, bucket, object: { key, size: 10, eTag: "abc" }, eventTime: "2026-01-01T00:00:00Z",
  });

  it("classifies rows messages (object, string or bytes bodies)", () => {
    const m = { stream: "orders", source: "app", rows: [{ id: 1 }] };
    expect(classify(m, "edge-dedup-input")).toEqual({ kind: "rows", stream: "orders", source: "app", batchId: null, rows: [{ id: 1 }] });
    expect(classify(JSON.stringify({ ...m, batchId: "b-1" }), undefined)).toMatchObject({ kind: "rows", batchId: "b-1" });
    expect(classify(new TextEncoder().encode(JSON.stringify({ stream: "orders", rows: [{}] })), undefined)).toMatchObject({ kind: "rows", source: "default" });
  });

  it("refuses what is not a message: poison with a reason", () => {
    for (const bad of ["not json", 42, [1], { stream: "orders" }, { stream: "orders", rows: [] }, { stream: "bad name", rows: [{}] },
      { stream: "orders", rows: [{}], batchId: "has space" }, { stream: "orders", rows: [{}], extra: 1 }]) {
      const c = classify(bad, undefined);
      expect(c.kind, JSON.stringify(bad)).toBe("poison");
      expect((c as { reason: string }).reason.length).toBeGreaterThan(5);
    }
  });

  it("classifies R2 event notifications: created under streams-in/{stream}/ ingests, deletes are ignored", () => {
    expect(classify(note("PutObject", "streams-in/orders/2026/a.json"), "edge-dedup-input")).toEqual({ kind: "object", stream: "orders", key: "streams-in/orders/2026/a.json" });
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
    expect(verdictOf({ kind: "done" }, "s", "b")).toEqual({ action: "ack" });
    expect(verdictOf({ kind: "replay" }, "s", "b")).toEqual({ action: "ack" });
    expect(verdictOf({ kind: "busy" }, "s", "b")).toEqual({ action: "retry" });
    expect(verdictOf({ kind: "failed" }, "s", "b")).toEqual({ action: "retry" });
    expect(verdictOf({ kind: "missing" }, "s", "b")).toMatchObject({ action: "dead-letter", reason: 'stream "s" does not exist' });
    expect(verdictOf({ kind: "too-large", detail: "big" }, "s", "b")).toMatchObject({ action: "dead-letter", reason: "refused (413): big" });
    expect(verdictOf({ kind: "conflict" }, "s", "b")).toMatchObject({ action: "dead-letter" });
    expect(verdictOf({ kind: "forbidden", detail: "disabled" }, "s", "b")).toMatchObject({ action: "dead-letter" });
    expect(retryDelaySeconds(1)).toBe(2);
    expect(retryDelaySeconds(30)).toBe(300);
  });
});
