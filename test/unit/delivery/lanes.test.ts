import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { destinationBodySchema, MAX_LANES, storedConfig, toConfig } from "../../../src/delivery/config";
import { planDispatch, rowKey, type Candidate } from "../../../src/delivery/dispatch";
import { parseWebhookId, webhookId } from "../../../src/delivery/message";
import { entityOf, laneHash, placementOf } from "../../../src/delivery/ordering";
import { RateCap, WINDOW_MS } from "../../../src/delivery/rate-cap";

describe("ordering", () => {
  it("names an entity by the values at its paths, dotted into nested fields; a missing step is null", () => {
    const stripe = { payload: { data: { object: { customer: "cus_1" } } }, account: "a" };
    expect(entityOf(stripe, { by: ["payload.data.object.customer"] })).toBe('["cus_1"]');
    expect(entityOf(stripe, { by: ["account", "payload.data.object.customer"] })).toBe('["a","cus_1"]');
    expect(entityOf({ account: "a" }, { by: ["payload.data.object.customer"] })).toBe("[null]");
    expect(entityOf({ n: 1 }, { by: ["n"] })).not.toBe(entityOf({ n: "1" }, { by: ["n"] }));
    expect(entityOf(stripe, "none")).toBeNull();
  });

  it("keeps an entity to one lane and spreads unordered rows by their place", () => {
    const by = { by: ["account"] };
    const a = placementOf({ account: "a", x: 1 }, 1, 0, by);
    const b = placementOf({ account: "a", x: 2 }, 9, 4, by);
    expect(a).toEqual(b);
    expect(placementOf({ account: "a" }, 1, 0, "none")).toEqual({ entity: null, h: laneHash("1.0") });
    // 16 lanes, 1,600 unordered rows: every lane gets a share near a sixteenth.
    const counts = new Array(16).fill(0);
    for (let seq = 1; seq <= 400; seq++) for (let idx = 0; idx < 4; idx++) counts[placementOf({}, seq, idx, "none").h % 16]++;
    expect(Math.min(...counts)).toBeGreaterThan(60);
    expect(Math.max(...counts)).toBeLessThan(140);
  });

  it("is refused where it cannot hold: paths empty or too many, a queue destination's order", () => {
    const http = { type: "http", url: "https://x.example.com/" };
    expect(destinationBodySchema.safeParse({ ...http, ordering: { by: [] } }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ ...http, ordering: { by: ["a..b"] } }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ ...http, ordering: { by: Array.from({ length: 9 }, (_, i) => `c${i}`) } }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ ...http, ordering: "sorted" }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ type: "queue", binding: "Q", ordering: { by: ["a"] } }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ type: "queue", binding: "Q", ordering: "none" }).success).toBe(true);
    expect(destinationBodySchema.safeParse({ ...http, lanes: 0 }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ ...http, lanes: MAX_LANES + 1 }).success).toBe(false);
    expect(destinationBodySchema.safeParse({ ...http, maxPerSecond: 0 }).success).toBe(false);
    const full = toConfig(destinationBodySchema.parse({ ...http, lanes: 4, ordering: { by: ["account"] }, maxPerSecond: 50 }));
    expect(full).toMatchObject({ lanes: 4, ordering: { by: ["account"] }, maxPerSecond: 50 });
  });

  it("a config stored before lanes existed reads with the defaults", () => {
    const old = storedConfig({ type: "http", url: "https://x.example.com/", timeoutMs: 5000, retryForMs: 60_000 } as never);
    expect(old).toMatchObject({ lanes: 16, ordering: "none", maxPerSecond: null, timeoutMs: 5000 });
  });
});

describe("the rate cap", () => {
  it("never lets more than perSecond attempts start in any window of a second, from its first moment (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 1, max: 50 })), { maxLength: 80 }),
        (perSecond, steps) => {
          let now = 1_000_000;
          const cap = new RateCap(perSecond, now);
          const starts: number[] = [];
          for (const [dt, want] of steps) {
            now += dt;
            const n = Math.min(want, cap.room(now));
            expect(n).toBeGreaterThanOrEqual(0);
            cap.take(n, now);
            for (let i = 0; i < n; i++) starts.push(now);
            // It says to wait only when there is no room, and never longer than a window.
            const at = cap.nextAt(now);
            expect(at > now).toBe(cap.room(now) === 0);
            expect(at).toBeLessThanOrEqual(now + WINDOW_MS);
          }
          // Any window [t, t + 1000 ms] of the starts, and a restart's first window, holds at most perSecond.
          for (const t of starts) expect(starts.filter((s) => s >= t && s < t + 1_000).length).toBeLessThanOrEqual(perSecond);
          expect(starts.filter((s) => s < 1_000_000 + WINDOW_MS).length).toBe(0);
        },
      ),
    );
  });
});

describe("dispatch", () => {
  const candidate = fc.record({
    seq: fc.integer({ min: 1, max: 30 }),
    idx: fc.integer({ min: 0, max: 3 }),
    entity: fc.option(fc.constantFrom("a", "b", "c", "d", "e"), { nil: null }),
  });

  it("starts only idle lanes, at most perLane each and room in all, never a row or an entity in flight, due order kept (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(candidate, { selector: rowKey, maxLength: 60 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 40 }),
        fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 4 }),
        fc.array(fc.constantFrom("a", "b", "c"), { maxLength: 2 }),
        (raw, lanes, perLane, room, busy, flyingEntities) => {
          // due() answers an entity's oldest row only: one per entity, in commit order.
          const seen = new Set<string>();
          const due: Candidate[] = raw
            .sort((x, y) => x.seq - y.seq || x.idx - y.idx)
            .filter((r) => r.entity === null || (!seen.has(r.entity) && seen.add(r.entity)))
            .map((r) => ({ ...r, h: laneHash(r.entity ?? rowKey(r)) }));
          const inFlight = { rows: new Set(due.slice(0, 2).map(rowKey)), entities: new Set<string>(flyingEntities), lanes: new Set(busy) };
          const plan = planDispatch(due, inFlight, lanes, perLane, room);
          const sent = [...plan.values()].flat();
          expect(sent.length).toBeLessThanOrEqual(room);
          for (const [lane, chunk] of plan) {
            expect(inFlight.lanes.has(lane)).toBe(false);
            expect(chunk.length).toBeGreaterThan(0);
            expect(chunk.length).toBeLessThanOrEqual(perLane);
            for (const r of chunk) expect(r.h % lanes).toBe(lane);
            // In a chunk, rows keep the order they were due in.
            expect(chunk.map((r) => due.indexOf(r))).toEqual(chunk.map((r) => due.indexOf(r)).sort((x, y) => x - y));
          }
          for (const r of sent) {
            expect(inFlight.rows.has(rowKey(r))).toBe(false);
            if (r.entity !== null) expect(inFlight.entities.has(r.entity)).toBe(false);
          }
          // Nothing sendable is left behind while its lane had room and the cap had room.
          if (sent.length < room)
            for (const r of due) {
              const lane = r.h % lanes;
              const blocked = inFlight.rows.has(rowKey(r)) || (r.entity !== null && inFlight.entities.has(r.entity)) || inFlight.lanes.has(lane);
              if (!blocked) expect(sent.includes(r) || (plan.get(lane)?.length ?? 0) >= perLane).toBe(true);
            }
        },
      ),
    );
  });
});

describe("webhook-ids", () => {
  it("name their row's place and the stream's creation, and only this stream's (property)", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/),
        fc.integer({ min: 1, max: 1e9 }),
        fc.integer({ min: 0, max: 1e5 }),
        fc.integer({ min: 1, max: 50 }),
        (stream, seq, index, incarnation) => {
          const id = webhookId(stream, seq, index, incarnation);
          expect(parseWebhookId(stream, id)).toEqual({ incarnation, seq, index });
          expect(parseWebhookId(`${stream}x`, id)).toBeNull();
        },
      ),
    );
    expect(parseWebhookId("s", "s.3")).toBeNull();
    expect(parseWebhookId("s", "s~1.3.0")).toBeNull(); // the first creation has no ~
    expect(parseWebhookId("s", "s.3.-1")).toBeNull();
    expect(parseWebhookId("s.1", "s.1.3.0")).toEqual({ incarnation: 1, seq: 3, index: 0 });
  });
});
