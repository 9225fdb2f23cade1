import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { backoffDelay, BASE_DELAY_MS, MAX_DELAY_MS, MAX_RETRY_AFTER_MS, nextAttempt, parseRetryAfter } from "../../../src/delivery/schedule";
import { checkDestinationUrl } from "../../../src/delivery/url";
import { messageBody, newSigningSecret, queueMessage, signedHeaders, webhookId } from "../../../src/delivery/message";
import { deliveredSeq, describeError, judge } from "../../../src/delivery/attempt";
import { destinationBodySchema, toConfig, DEFAULT_LANES, DEFAULT_RETRY_FOR_MS, DEFAULT_TIMEOUT_MS } from "../../../src/delivery/config";

describe("backoff", () => {
  it("doubles from the base, within equal jitter, capped", () => {
    expect(backoffDelay(1, 0)).toBe(BASE_DELAY_MS / 2);
    expect(backoffDelay(1, 1)).toBe(BASE_DELAY_MS);
    expect(backoffDelay(3, 1)).toBe(4 * BASE_DELAY_MS);
    expect(backoffDelay(100, 1)).toBe(MAX_DELAY_MS);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, r) => {
        const d = backoffDelay(n, r);
        const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (n - 1));
        return d >= exp / 2 - 1 && d <= exp + 1;
      }),
    );
  });

  it("never waits less after more failures (same random)", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, r) => backoffDelay(n + 1, r) >= backoffDelay(n, r)));
  });
});

describe("Retry-After", () => {
  const now = Date.UTC(2026, 0, 1);
  it("reads delta-seconds and HTTP dates, caps, ignores junk", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(new Date(now + 30_000).toUTCString(), now)).toBe(30_000);
    expect(parseRetryAfter(new Date(now - 30_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfter("999999999", now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter(null, now)).toBeNull();
    expect(parseRetryAfter("", now)).toBeNull();
    expect(parseRetryAfter("soon", now)).toBeNull();
    expect(parseRetryAfter("1.5", now)).toBeNull();
  });
});

describe("nextAttempt", () => {
  const policy = { retryForMs: 60_000 };
  it("retries with backoff, honours Retry-After, then the dead lane", () => {
    expect(nextAttempt({ failures: 1, firstAttemptAt: 0 }, null, policy, 0, 1)).toEqual({ at: BASE_DELAY_MS });
    expect(nextAttempt({ failures: 1, firstAttemptAt: 0 }, 10_000, policy, 0, 1)).toEqual({ at: 10_000 });
    expect(nextAttempt({ failures: 9, firstAttemptAt: 0 }, null, policy, 59_000, 1)).toEqual({ at: 60_000 });
    expect(nextAttempt({ failures: 9, firstAttemptAt: 0 }, null, policy, 60_000, 1)).toBe("dead");
    expect(nextAttempt({ failures: 1, firstAttemptAt: 0 }, 120_000, policy, 0, 1)).toBe("dead");
  });
  it("never schedules beyond retryFor, and goes dead only at or after it (or when Retry-After is beyond it)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 200_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, now, r) => {
        const next = nextAttempt({ failures: n, firstAttemptAt: 0 }, null, policy, now, r);
        if (next === "dead") return now >= policy.retryForMs;
        return next.at > now - 1 && next.at <= policy.retryForMs;
      }),
    );
  });
});

describe("destination URLs", () => {
  const ok = (u: string, loop = false) => checkDestinationUrl(u, loop).ok;
  it("accepts public https", () => {
    expect(ok("https://hooks.example.com/edge-dedup")).toBe(true);
    expect(ok("https://8.8.8.8/x")).toBe(true);
    expect(ok("https://api.stripe.com:8443/x?y=1")).toBe(true);
  });
  it("refuses http, credentials, private, loopback, link-local, internal and numeric hosts", () => {
    for (const u of [
      "http://hooks.example.com/",
      "https://user:pw@hooks.example.com/",
      "https://10.1.2.3/",
      "https://192.168.0.1/",
      "https://172.20.0.1/",
      "https://127.0.0.1/",
      "https://169.254.169.254/latest",
      "https://localhost/",
      "https://app.localhost/",
      "https://[::1]/",
      "https://[fd00::1]/",
      "https://[fe80::1]/",
      "https://[::ffff:10.0.0.1]/",
      "https://intranet/",
      "https://svc.internal/",
      "https://2130706433/",
      "https://0x7f000001/",
      "https://100.64.0.1/",
      "https://0.0.0.0/",
      "ftp://example.com/",
      "not a url",
      "https://example.com/#frag",
    ]) {
      expect(ok(u), u).toBe(false);
    }
  });
  it("accepts loopback only when allowed", () => {
    expect(ok("http://127.0.0.1:9999/hook")).toBe(false);
    expect(ok("http://127.0.0.1:9999/hook", true)).toBe(true);
    expect(ok("http://localhost:9999/hook", true)).toBe(true);
    expect(ok("http://10.0.0.1/hook", true)).toBe(false);
    expect(ok("http://example.com/hook", true)).toBe(false);
  });
});

describe("messages", () => {
  it("are Standard Webhooks: the reference library verifies every signature, old and new secret", async () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const id = webhookId("orders", 12, 3);
    expect(id).toBe("orders.12.3");
    const body = messageBody({ event_id: 1, amount: 2.5 }, Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(JSON.parse(body)).toEqual({ type: "row.emitted", timestamp: "2026-01-02T03:04:05.000Z", data: { event_id: 1, amount: 2.5 } });
    const headers = await signedHeaders([b, a], id, Date.now(), body);
    expect(headers["webhook-id"]).toBe(id);
    for (const secret of [a, b]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(a).verify(body.replace("2.5", "3.5"), headers)).toThrow();
  });
  it("queue messages carry the same id", () => {
    expect(queueMessage("s", 4, 0, { x: 1 }, 5)).toEqual({ id: "s.4.0", type: "row.emitted", stream: "s", seq: 4, index: 0, committedAt: 5, row: { x: 1 } });
  });
});

describe("attempt verdicts", () => {
  it("2xx delivered, 410 gone, the rest retried with Retry-After", () => {
    expect(judge({ status: 204, retryAfter: null }, 0)).toEqual({ kind: "delivered" });
    expect(judge({ status: 410, retryAfter: null }, 0).kind).toBe("gone");
    expect(judge({ status: 500, retryAfter: null }, 0)).toEqual({ kind: "retry", error: "HTTP 500", retryAfterMs: null });
    expect(judge({ status: 429, retryAfter: "7" }, 0)).toEqual({ kind: "retry", error: "HTTP 429", retryAfterMs: 7000 });
    expect(judge({ status: 302, retryAfter: null }, 0).kind).toBe("retry");
    expect(judge({ error: "timed out" }, 0)).toEqual({ kind: "retry", error: "timed out", retryAfterMs: null });
    expect(describeError(new DOMException("x", "TimeoutError"), 500)).toBe("timed out after 500 ms");
    expect(describeError(new TypeError("refused"), 500)).toBe("connection failed: refused");
  });
  it("deliveredSeq stops before the lowest pending seq", () => {
    expect(deliveredSeq(null, 9)).toBe(9);
    expect(deliveredSeq(4, 9)).toBe(3);
    expect(deliveredSeq(12, 9)).toBe(9);
  });
});

describe("destination bodies", () => {
  it("take defaults and durations, refuse unknown fields", () => {
    const http = destinationBodySchema.parse({ type: "http", url: "https://x.example.com/" });
    const sending = { lanes: DEFAULT_LANES, ordering: "none", maxPerSecond: null };
    expect(toConfig(http)).toEqual({
      type: "http",
      url: "https://x.example.com/",
      timeoutMs: DEFAULT_TIMEOUT_MS,
      retryForMs: DEFAULT_RETRY_FOR_MS,
      ...sending,
    });
    expect(toConfig(destinationBodySchema.parse({ type: "queue", binding: "DELIVERIES", retryFor: "1 hour" }))).toEqual({
      type: "queue",
      binding: "DELIVERIES",
      retryForMs: 3_600_000,
      ...sending,
    });
    expect(toConfig(destinationBodySchema.parse({ type: "http", url: "https://x.example.com/", timeout: "2 seconds" }))).toMatchObject({ timeoutMs: 2000 });
    expect(destinationBodySchema.safeParse({ type: "http", url: "https://x.example.com/", timeout: "2 minutes" }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ type: "http", url: "https://x.example.com/", extra: 1 }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ type: "smtp" }).success).toBe(false);
  });
});

describe("delivery metrics", () => {
  it("one sample per destination and figure, labels escaped", async () => {
    const { renderDeliveryMetrics } = await import("../../../src/delivery/metrics");
    const text = renderDeliveryMetrics([
      { stream: "s", name: "a", type: "http", lagMs: 1500, pending: 3, failing: true, dead: 2, deliveredSeq: 7, delivered: 40, failures: 9 },
      { stream: "s", name: 'q"x', type: "queue", lagMs: 0, pending: 0, failing: false, dead: 0, deliveredSeq: 9, delivered: 50, failures: 0 },
    ]);
    expect(text).toContain('edge_dedup_delivery_lag_ms{stream="s",destination="a",type="http"} 1500');
    expect(text).toContain('edge_dedup_delivery_failing{stream="s",destination="a",type="http"} 1');
    expect(text).toContain('edge_dedup_delivery_failing{stream="s",destination="q\\"x",type="queue"} 0');
    expect(text).toContain('edge_dedup_deliveries_total{stream="s",destination="a",type="http",outcome="failed"} 9');
    expect(text).toContain("# TYPE edge_dedup_deliveries_total counter");
    expect(text.split("\n").filter((l) => l.startsWith("edge_dedup_delivery_dead_rows"))).toHaveLength(2);
  });
});

describe("backlog rows", () => {
  it("slices cover every row that fits exactly once, in order, within the budget, skipping the too large", async () => {
    const { slices, tooLarge, MAX_ROW_BYTES } = await import("../../../src/delivery/rows");
    expect(tooLarge("x".repeat(MAX_ROW_BYTES))).toBe(false);
    expect(tooLarge("x".repeat(MAX_ROW_BYTES + 1))).toBe(true);
    expect(tooLarge("é".repeat(MAX_ROW_BYTES / 2 + 1))).toBe(true); // 2 bytes each in UTF-8
    const big = "z".repeat(MAX_ROW_BYTES + 1);
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 40 }), fc.constant(big)), { maxLength: 30 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 1, max: 100 }),
        (lines, start, budget) => {
          const out = slices(lines, start, budget);
          const covered = out.flatMap((s) => s.rows.map((row, k) => ({ at: s.first + k, row })));
          const expected = lines.flatMap((row, i) => (row === big ? [] : [{ at: start + i, row }]));
          expect(covered).toEqual(expected);
          for (const s of out) expect(s.rows.length === 1 || s.rows.reduce((n, r) => n + r.length, 0) <= budget).toBe(true);
        },
      ),
    );
  });
});
