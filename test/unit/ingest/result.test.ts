import { readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, it } from "vitest";
import { exhaustive, resultOf, type ResultKind, type SubmitResult } from "../../../src/ingest/result";
import { EVERY, outcome } from "../../support/ingest-results";
import { fileVerdict } from "../../../src/sources/files/plan";
import { queueVerdict } from "../../../src/sources/queue/messages";

describe("the ingest result union (issue 17)", () => {
  it("names exactly these kinds", () => {
    expectTypeOf<ResultKind>().toEqualTypeOf<
      "committed" | "replayed" | "missing" | "unauthorized" | "forbidden" | "too-large" | "conflict" | "busy" | "invalid" | "failed"
    >();
  });

  it("a kind no adapter handles fails to compile (checked by npm run typecheck)", () => {
    type Grown = SubmitResult | { kind: "quarantined"; detail: string };
    // Today's mapper, over a union that grew one kind: its default is no longer `never`.
    function mapperOfToday(r: Grown): string {
      switch (r.kind) {
        case "committed":
        case "replayed":
        case "missing":
        case "unauthorized":
        case "forbidden":
        case "too-large":
        case "conflict":
        case "busy":
        case "invalid":
        case "failed":
          return r.kind;
        default:
          // @ts-expect-error "quarantined" reaches exhaustive(): the adapter does not compile until it has a case
          return exhaustive(r);
      }
    }
    expect(mapperOfToday(EVERY.busy)).toBe("busy");
    // Reached at run time only through a cast: it throws rather than pick an answer.
    expect(() => mapperOfToday({ kind: "quarantined", detail: "x" })).toThrow(/unhandled ingest result/);
  });

  it("every adapter's mapper takes the whole union and ends in exhaustive(r)", () => {
    expectTypeOf(fileVerdict).parameter(0).toEqualTypeOf<SubmitResult>();
    expectTypeOf(queueVerdict).parameter(0).toEqualTypeOf<SubmitResult>();
    // The Worker-side mappers (workerd imports): their types are checked in test/integration/ingest/mappers.test.ts; here, that each is a guarded switch.
    const mappers: [string, string][] = [
      ["src/api/ingest.ts", "httpOutcome"],
      ["src/api/webhook.ts", "webhookOutcome"],
      ["src/sources/files/plan.ts", "fileVerdict"],
      ["src/sources/queue/messages.ts", "queueVerdict"],
      ["src/rpc/entrypoint.ts", "rpcOutcome"],
    ];
    for (const [file, name] of mappers) {
      const text = readFileSync(new URL(`../../../${file}`, import.meta.url), "utf8");
      const at =
        text.indexOf(`export function ${name}(\n  r: SubmitResult`) >= 0
          ? text.indexOf(`export function ${name}(\n  r: SubmitResult`)
          : text.indexOf(`export function ${name}(r: SubmitResult`);
      expect(at, `${file} exports ${name}(r: SubmitResult, …)`).toBeGreaterThanOrEqual(0);
      const body = text.slice(at, text.indexOf("\n}\n", at));
      expect(body, `${name} switches on r.kind`).toContain("switch (r.kind)");
      expect(body, `${name} ends in exhaustive(r)`).toMatch(/default:\s+return exhaustive\(r\);\s+\}$/);
    }
  });
});

describe("resultOf: a Coordinator answer as a result", () => {
  it("keeps the texts every transport shows", () => {
    expect(resultOf({ kind: "done", outcome }, "s", "b", null)).toEqual({ kind: "committed", outcome });
    expect(resultOf({ kind: "replay", source: "x", outcome }, "s", "b", null)).toEqual({ kind: "replayed", outcome });
    expect(resultOf({ kind: "missing" }, "s", "b", null)).toEqual({ kind: "missing", detail: 'stream "s" does not exist; create it with PUT /v1/streams/s' });
    expect(resultOf({ kind: "unauthorized" }, "s", "b", null)).toEqual({ kind: "unauthorized", detail: "the token is not valid for this stream" });
    expect(resultOf({ kind: "forbidden", detail: 'source "x" is disabled' }, "s", "b", "x")).toEqual({ kind: "forbidden", detail: 'source "x" is disabled' });
    expect(resultOf({ kind: "too-large", detail: "big" }, "s", "b", null)).toEqual({ kind: "too-large", detail: "big" });
    expect(resultOf({ kind: "conflict" }, "s", "b", null)).toEqual({
      kind: "conflict",
      detail: 'batch id "b" from source "default" was already used with a different body',
    });
    expect(resultOf({ kind: "conflict" }, "s", "b", "x")).toMatchObject({ detail: 'batch id "b" from source "x" was already used with a different body' });
    expect(resultOf({ kind: "busy", retryAfterMs: 700, source: "x" }, "s", "b", null)).toEqual({
      kind: "busy",
      detail: 'batch id "b" is being processed by another request; retry later',
      retryAfterMs: 700,
    });
    expect(resultOf({ kind: "failed", message: "R2 put failed" }, "s", "b", null)).toEqual({ kind: "failed", detail: "R2 put failed" });
  });
});

describe("the files mapper (fileVerdict)", () => {
  it("settles each kind: done, the file's, the run's, or again later", () => {
    const kinds = Object.fromEntries(Object.entries(EVERY).map(([k, r]) => [k, fileVerdict(r).kind]));
    expect(kinds).toEqual({
      committed: "done",
      replayed: "done",
      missing: "run",
      unauthorized: "file",
      forbidden: "file",
      "too-large": "file",
      conflict: "file",
      invalid: "file",
      busy: "transient",
      failed: "transient",
    });
    expect(fileVerdict(EVERY.replayed)).toEqual({ kind: "done", outcome: { ...outcome, replayed: true } });
    for (const r of Object.values(EVERY)) if ("detail" in r) expect(fileVerdict(r)).toMatchObject({ detail: r.detail });
  });
});

describe("the queue mapper (queueVerdict)", () => {
  it("acks, retries or dead-letters each kind with its reason", () => {
    const verdicts = Object.fromEntries(Object.entries(EVERY).map(([k, r]) => [k, queueVerdict(r, "s", "qid:1")]));
    expect(verdicts).toEqual({
      committed: { action: "ack" },
      replayed: { action: "ack" },
      missing: { action: "dead-letter", reason: 'stream "s" does not exist' },
      unauthorized: { action: "dead-letter", reason: "refused: unauthorized" },
      forbidden: { action: "dead-letter", reason: "refused (403): source disabled" },
      "too-large": { action: "dead-letter", reason: "refused (413): too many rows" },
      conflict: { action: "dead-letter", reason: 'refused (422): batch id "qid:1" was already used with other rows' },
      busy: { action: "retry" },
      invalid: { action: "dead-letter", reason: "refused (400): rows: too deep" },
      failed: { action: "retry" },
    });
  });
});
