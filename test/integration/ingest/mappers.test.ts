/**
 * The Worker-side adapters of the ingest result union (issue 17): HTTP
 * (problem+json), webhooks (the single 401) and Workers RPC (IngestRefused),
 * each over one result of every kind. They run here because their modules
 * import the Worker's; the pure mappers (files, queues) are in
 * test/unit/ingest/result.test.ts.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { httpOutcome } from "../../../src/api/ingest";
import { webhookOutcome } from "../../../src/api/webhook";
import { HttpError } from "../../../src/http/problem";
import { rpcOutcome } from "../../../src/rpc/entrypoint";
import type { ResultKind, SubmitResult } from "../../../src/ingest/result";
import { EVERY, outcome } from "../../support/ingest-results";

/** What a mapper answers: the outcome it returns, or what it throws (an HttpError as status/slug/detail/headers). */
function answer(map: () => unknown): unknown {
  try {
    return { returned: map() };
  } catch (e) {
    if (e instanceof HttpError) return { status: e.status, slug: e.slug, detail: e.detail, headers: e.headers };
    return { error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

const each = (map: (r: SubmitResult) => unknown) => Object.fromEntries(Object.entries(EVERY).map(([k, r]) => [k, answer(() => map(r))]));

describe("the ingest result's Worker-side mappers", () => {
  it("take the whole union", () => {
    expectTypeOf(httpOutcome).parameter(0).toEqualTypeOf<SubmitResult>();
    expectTypeOf(webhookOutcome).parameter(0).toEqualTypeOf<SubmitResult>();
    expectTypeOf(rpcOutcome).parameter(0).toEqualTypeOf<SubmitResult>();
  });

  it("HTTP: the outcome, or its problem (a token or admin caller)", () => {
    expect(each((r) => httpOutcome(r, { auth: { kind: "token", hash: "h" }, sourceHeader: null }))).toEqual({
      committed: { returned: outcome },
      replayed: { returned: { ...outcome, replayed: true } },
      missing: { status: 404, slug: "not-found", detail: "no stream", headers: {} },
      unauthorized: { status: 403, slug: "forbidden", detail: "bad token", headers: {} },
      forbidden: { status: 403, slug: "forbidden", detail: "source disabled", headers: {} },
      "too-large": { status: 413, slug: "batch-too-large", detail: "too many rows", headers: {} },
      conflict: { status: 422, slug: "idempotency-key-reused", detail: "reused", headers: {} },
      busy: { status: 409, slug: "batch-in-flight", detail: "in flight", headers: { "retry-after": "2" } },
      invalid: { status: 400, slug: "invalid-request", detail: "rows: too deep", headers: {} },
      failed: { error: "Error: the micro-batch failed" },
    });
    // Retry-After is whole seconds, at least one.
    expect(answer(() => httpOutcome({ ...EVERY.busy, retryAfterMs: 10 } as SubmitResult, { auth: { kind: "admin" }, sourceHeader: null }))).toMatchObject({
      headers: { "retry-after": "1" },
    });
  });

  it("HTTP: a signed caller refused by the Coordinator's admission gets the 401 of a bad signature, naming its source", () => {
    const signed = { auth: { kind: "hmac", credentialId: "c" } as const, sourceHeader: "orders" };
    for (const r of [EVERY.unauthorized, EVERY.forbidden]) {
      expect(answer(() => httpOutcome(r, signed))).toMatchObject({
        status: 401,
        slug: "unauthorized",
        detail: expect.stringContaining('signing secret of source "orders"'),
      });
    }
    expect(answer(() => httpOutcome(EVERY.forbidden, { ...signed, sourceHeader: null }))).toMatchObject({
      detail: expect.stringContaining('source "default"'),
    });
    expect(answer(() => httpOutcome(EVERY.conflict, signed))).toMatchObject({ status: 422 });
  });

  it("webhooks: one 401 for every unproven signature; the rest as POST …/events answers", () => {
    const http = each((r) => httpOutcome(r, { auth: { kind: "admin" }, sourceHeader: "gh" }));
    const hook = each((r) => webhookOutcome(r, "gh"));
    for (const k of ["unauthorized", "forbidden"] as const) {
      expect(hook[k]).toEqual({
        status: 401,
        slug: "invalid-webhook-signature",
        detail: expect.stringContaining('webhook signing secret of source "gh"'),
        headers: {},
      });
    }
    expect(hook.unauthorized).toEqual(hook.forbidden);
    const rest = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== "unauthorized" && k !== "forbidden"));
    expect(rest(hook)).toEqual(rest(http));
  });

  it("RPC: the outcome, or an IngestRefused whose message starts with the HTTP status and the kind", () => {
    expect(each(rpcOutcome)).toEqual({
      committed: { returned: outcome },
      replayed: { returned: { ...outcome, replayed: true } },
      missing: { error: "IngestRefused: 404 missing: no stream" },
      unauthorized: { error: "IngestRefused: 403 unauthorized: bad token" },
      forbidden: { error: "IngestRefused: 403 forbidden: source disabled" },
      "too-large": { error: "IngestRefused: 413 too-large: too many rows" },
      conflict: { error: "IngestRefused: 422 conflict: reused" },
      busy: { error: "IngestRefused: 409 busy: in flight" },
      invalid: { error: "IngestRefused: 400 invalid: rows: too deep" },
      failed: { error: "Error: the micro-batch failed" },
    });
  });
});
