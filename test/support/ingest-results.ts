import type { ResultKind, SubmitResult } from "../../src/ingest/result";

/** A committed batch's outcome, as the results below carry it. */
export const outcome = {
  batchId: "b",
  source: "s",
  replayed: false,
  watermark: 0,
  watermarkAfter: 0,
  input: 2,
  emitted: 1,
  duplicates: 1,
  late: 0,
  rejected: [],
};

/** One result of every kind (src/ingest/result.ts): the table each adapter's mapper is tested against. */
export const EVERY: Record<ResultKind, SubmitResult> = {
  committed: { kind: "committed", outcome },
  replayed: { kind: "replayed", outcome: { ...outcome, replayed: true } },
  missing: { kind: "missing", detail: "no stream" },
  unauthorized: { kind: "unauthorized", detail: "bad token" },
  forbidden: { kind: "forbidden", detail: "source disabled" },
  "too-large": { kind: "too-large", detail: "too many rows" },
  conflict: { kind: "conflict", detail: "reused" },
  busy: { kind: "busy", detail: "in flight", retryAfterMs: 1500 },
  invalid: { kind: "invalid", detail: "rows: too deep" },
  failed: { kind: "failed", detail: "the micro-batch failed" },
};
