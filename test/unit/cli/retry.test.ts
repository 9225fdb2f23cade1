import { describe, expect, test } from "vitest";
import { backoffDelay, isFatalStatus, isRetryableStatus, MAX_RETRY_AFTER_MS, parseRetryAfter, retryDelay } from "../../../src/cli/retry.ts";

const NOW = Date.UTC(2026, 10, 29, 10, 0, 0);

describe("parseRetryAfter", () => {
  test("delay-seconds", () => {
    expect(parseRetryAfter("1", NOW)).toBe(1000);
    expect(parseRetryAfter(" 30 ", NOW)).toBe(30_000);
    expect(parseRetryAfter("0", NOW)).toBe(0);
  });

  test("an HTTP-date, relative to now; a past date is 0", () => {
    expect(parseRetryAfter("Sun, 29 Nov 2026 10:00:05 GMT", NOW)).toBe(5000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter("Sunday, 29-Nov-26 10:00:02 GMT", NOW)).toBe(2000); // RFC 850, obsolete but allowed
    expect(parseRetryAfter("Sun, 29 Nov 2026 09:00:00 GMT", NOW)).toBe(0);
  });

  test("absent or unreadable is null", () => {
    for (const v of [null, undefined, "", "soon", "-1", "1.5", "1e3", "2026-11-29"]) expect(parseRetryAfter(v, NOW)).toBeNull();
  });

  test("capped, so a broken server cannot park the run for days", () => {
    expect(parseRetryAfter("999999", NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter("Fri, 01 Jan 2100 00:00:00 GMT", NOW)).toBe(MAX_RETRY_AFTER_MS);
  });
});

describe("backoff", () => {
  const b = { baseMs: 100, capMs: 5_000 };

  test("retry n waits between e/2 and e, e = min(cap, base·2^(n−1))", () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const e = Math.min(b.capMs, b.baseMs * 2 ** (attempt - 1));
      for (const r of [0, 0.25, 0.5, 0.999999]) {
        const d = backoffDelay(attempt, r, b);
        expect(d).toBeGreaterThanOrEqual(e / 2);
        expect(d).toBeLessThanOrEqual(e);
      }
      expect(backoffDelay(attempt, 0, b)).toBe(e / 2);
    }
  });

  test("grows, then stays at the cap", () => {
    const ds = Array.from({ length: 10 }, (_, i) => backoffDelay(i + 1, 0.5, b));
    for (let i = 1; i < ds.length; i++) expect(ds[i]).toBeGreaterThanOrEqual(ds[i - 1]);
    expect(ds.at(-1)).toBe(3750);
  });

  test("a Retry-After is a floor, never shortened", () => {
    expect(retryDelay(1, 1000, 0.5, b)).toBe(1000);
    expect(retryDelay(1, null, 0.5, b)).toBe(75);
    expect(retryDelay(8, 10, 0, b)).toBe(2500); // a smaller Retry-After does not cut the backoff
  });
});

describe("what is retried", () => {
  const P = "https://edge-dedup.dev/problems/";
  test("5xx, 408, 429 and 409 batch-in-flight; other 4xx are final", () => {
    for (const s of [500, 502, 503, 504, 408, 429]) expect(isRetryableStatus(s, undefined)).toBe(true);
    expect(isRetryableStatus(409, P + "batch-in-flight")).toBe(true);
    expect(isRetryableStatus(409, P + "bound-field-changed")).toBe(false);
    expect(isRetryableStatus(409, undefined)).toBe(false);
    for (const s of [400, 401, 403, 404, 413, 422]) expect(isRetryableStatus(s, P + "x")).toBe(false);
  });

  test("401, 403 and 404 stop the run", () => {
    expect([401, 403, 404, 400, 413, 422].map(isFatalStatus)).toEqual([true, true, true, false, false, false]);
  });
});
