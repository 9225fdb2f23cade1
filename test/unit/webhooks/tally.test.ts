import { describe, expect, test } from "vitest";
import { FLUSH_MS, isWebhookCounter, REFUSAL_REASONS, refusedCounter, REPLAYED_COUNTER, WebhookTally } from "../../../src/webhooks/tally";
import { webhookFigures } from "../../../src/stream/metrics";
import { liveAdvice, emptyFigures } from "../../../src/stream/advisor/live";
import { RETRY_HORIZON_MS } from "../../../src/webhooks/retry-horizon";
import { validConfig } from "../stream-config";

describe("the webhook tally", () => {
  test("hands a source's counts over at once, then at most once per FLUSH_MS, with nothing lost or counted twice", () => {
    const t = new WebhookTally();
    expect(t.note("s", "a", "replayed", 0)).toEqual({ flush: [[REPLAYED_COUNTER, 1]] });
    expect(t.note("s", "a", "bad-signature", 10)).toEqual({ in: FLUSH_MS - 10 });
    expect(t.note("s", "a", "bad-signature", 20)).toBeNull(); // a flush is waited for already
    expect(t.note("s", "b", "stale", 20)).toEqual({ flush: [[refusedCounter("stale"), 1]] }); // another source has its own
    expect(t.take("s", "a", FLUSH_MS)).toEqual([[refusedCounter("bad-signature"), 2]]);
    expect(t.take("s", "a", FLUSH_MS)).toEqual([]);
    expect(t.note("s", "a", "malformed", FLUSH_MS + 1)).toEqual({ in: FLUSH_MS - 1 });
    expect(t.note("s", "a", "malformed", 2 * FLUSH_MS)).toEqual({ flush: [[refusedCounter("malformed"), 2]] });
  });

  test("its counter names are the only webhook counters the Coordinator takes, and read back per source with the source's rows", () => {
    for (const r of REFUSAL_REASONS) expect(isWebhookCounter(refusedCounter(r))).toBe(true);
    expect(isWebhookCounter("rows:emitted")).toBe(false);
    expect(isWebhookCounter("webhook:refused:made-up")).toBe(false);
    const counters = [
      { name: REPLAYED_COUNTER, source: "stripe", n: 3 },
      { name: refusedCounter("stale"), source: "stripe", n: 2 },
      { name: "rows:emitted", source: "stripe", n: 10 },
      { name: "rows:duplicate", source: "stripe", n: 1 },
      { name: "rows:emitted", source: "app", n: 7 },
    ];
    expect(webhookFigures(counters)).toEqual([{ source: "stripe", replayed: 3, refused: { stale: 2 }, rows: 11 }]);
  });
});

describe("the advisor's floors", () => {
  const config = validConfig({ key: ["id"], eventTime: "time", watermarkDelay: "1 hour", sources: { own: { watermarkDelay: "5 minutes" } } });
  const figures = new Map([
    ["stripe", emptyFigures()],
    ["own", emptyFigures()],
    ["app", emptyFigures()],
  ]);

  test("a source is never advised less than its floor, and the stream's advice keeps the floor of the sources that take its delay", () => {
    const floors = new Map([
      ["stripe", { ms: RETRY_HORIZON_MS.stripe, reason: "retries" }],
      ["own", { ms: RETRY_HORIZON_MS.shopify, reason: "shopify" }],
    ]);
    const a = liveAdvice(figures, config, 2, floors);
    expect(a.sources.stripe.recommendation).toMatchObject({ delayMs: 3 * 86_400_000, watermarkDelay: "3 days", floor: { reason: "retries" } });
    expect(a.sources.own.recommendation).toMatchObject({ delayMs: 4 * 3_600_000, floor: { reason: "shopify" } });
    expect(a.sources.app.recommendation.floor).toBeUndefined();
    // "own" has a delay of its own: the stream's delay serves stripe and app, so stripe's floor holds for it.
    expect(a.overall.recommendation).toMatchObject({ delayMs: 3 * 86_400_000, floor: { reason: "source stripe: retries" } });
    expect(liveAdvice(figures, config, 2).overall.recommendation.floor).toBeUndefined();
  });
});
