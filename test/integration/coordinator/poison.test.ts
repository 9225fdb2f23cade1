/**
 * One producer's bad row never fails another's batch (issue 27): a value with
 * no JSON form anywhere in a row (NaN, ±Infinity — what 1e999 parses to —, a
 * BigInt, a cycle, nesting past the limit) is that row's error, and a member
 * whose planning throws for any reason (a throwing getter, which only a caller
 * inside the isolate can hand over) fails alone: its micro-batch commits
 * without it. Driven against the real Coordinator with micro-batches of
 * healthy and poisoned members, checked against what each member should come to.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { at, call, createStream, deliverToQueue, output, post, queueMessage } from "../helpers";

type Poison = "nan" | "inf" | "-inf" | "bigint" | "cycle" | "deep" | "getter";
/** Row-level poison: the row is rejected by index. "getter" throws while the row is read: its member fails alone. */
const ROW_POISONS: Poison[] = ["nan", "inf", "-inf", "bigint", "cycle", "deep"];

function poisoned(kind: Poison, id: string): Record<string, unknown> {
  const row: Record<string, unknown> = { id, ts: at(10, 0) };
  switch (kind) {
    case "nan":
      return { ...row, payload: { amount: NaN } };
    case "inf":
      return { ...row, amount: Infinity };
    case "-inf":
      return { ...row, items: [1, { price: -Infinity }] };
    case "bigint":
      return { ...row, big: 10n ** 30n };
    case "cycle":
      row.self = row;
      return row;
    case "deep": {
      let v: unknown = 1;
      for (let i = 0; i < 100; i++) v = { v };
      return { ...row, v };
    }
    case "getter":
      return Object.defineProperty(row, "boom", {
        enumerable: true,
        get: () => {
          throw new Error("a getter that throws");
        },
      });
  }
}

interface MemberPlan {
  healthy: number;
  poison: Poison[];
}

const memberArb: fc.Arbitrary<MemberPlan> = fc.record({
  healthy: fc.integer({ min: 0, max: 3 }),
  poison: fc.array(fc.constantFrom<Poison>(...ROW_POISONS, "getter"), { maxLength: 2 }),
});

let run = 0;

describe("poisoned rows and members", () => {
  it("every healthy member of a micro-batch commits, whatever poison its batch-mates carry (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(memberArb, { minLength: 2, maxLength: 5 }), fc.context(), async (plans, log) => {
        const name = `poison-${run++}`;
        await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2 });
        const members = plans.map((plan, m) => {
          // Poison rows stand among the healthy ones, at positions the plan's order gives.
          const rows: Record<string, unknown>[] = [];
          const kinds: (Poison | null)[] = [];
          for (let i = 0; i < plan.healthy; i++) rows.push({ id: `m${m}-h${i}`, ts: at(10, 0), v: i }), kinds.push(null);
          plan.poison.forEach((kind, j) => (rows.splice(j * 2, 0, poisoned(kind, `m${m}-p${j}`)), kinds.splice(j * 2, 0, kind)));
          const request: IngestRequest = {
            sourceHeader: null,
            batchId: `b${m}`,
            auth: { kind: "admin" },
            rows,
            identity: `identity-of-${name}-${m}`,
            bytes: 100,
          };
          return { request, kinds, fails: kinds.includes("getter") };
        });
        const answers = await runInDurableObject(env.COORDINATOR.getByName(name), (c) => c.ingestMany(members.map((x) => x.request)));
        log.log(JSON.stringify(answers.map((a) => a.kind)));
        const expectedOutput: string[] = [];
        members.forEach((m, i) => {
          const a = answers[i];
          if (m.fails) {
            expect(a.kind).toBe("failed");
            return;
          }
          expect(a.kind).toBe("done");
          if (a.kind !== "done") return;
          const rejectedAt = m.kinds.flatMap((k, index) => (k === null ? [] : [index]));
          expect(a.outcome.rejected.map((r) => r.index)).toEqual(rejectedAt);
          for (const r of a.outcome.rejected) expect(r.error).not.toMatch(/^\s*$/);
          expect(a.outcome).toMatchObject({ input: m.kinds.length, emitted: m.kinds.length - rejectedAt.length, duplicates: 0, late: 0 });
          m.request.rows.forEach((row, index) => m.kinds[index] === null && expectedOutput.push((row as { id: string }).id));
        });
        expect((await output(name)).map((r) => r.id).sort()).toEqual(expectedOutput.sort());
      }),
      { numRuns: 12 },
    );
  });

  it("1e999 in a row over HTTP is that row's rejection with a reason, its batch-mates emitted", async () => {
    await createStream("poison-http", { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes" });
    const ts = at(10, 0);
    const r = await call(
      "POST",
      "/v1/streams/poison-http/events",
      `[{"id":"a","ts":${ts},"amount":1e999},{"id":"b","ts":${ts},"p":{"x":[1,-1e999]}},{"id":"c","ts":${ts}}]`,
    );
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({
      emitted: 1,
      rejected: [
        { index: 0, error: "amount: not a finite number (NaN and ±Infinity, which 1e999 reads as, have no JSON form)" },
        { index: 1, error: expect.stringMatching(/^p\.x\[1\]: not a finite number/) },
      ],
    });
    expect((await output("poison-http")).map((x) => x.id)).toEqual(["c"]);
  });

  it("a key integer past ±(2^53 − 1) is rejected, not merged with its neighbour", async () => {
    await createStream("poison-bigkey", { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes" });
    const ts = at(10, 0);
    const r = await post("poison-bigkey", `[{"id":12345678901234567890,"ts":${ts}},{"id":12345678901234567891,"ts":${ts}},{"id":9007199254740991,"ts":${ts}}]`);
    expect(r).toMatchObject({
      emitted: 1,
      duplicates: 0,
      rejected: [{ index: 0, error: expect.stringMatching(/^id: a key integer must be within/) }, { index: 1 }],
    });
  });

  it("a queue message with 1e999 in a row commits with that row rejected, and its batch-mates commit too (none retried or dead-lettered)", async () => {
    await createStream("poison-queue", { key: ["id"], mode: "global", partitions: 2 });
    const r = await deliverToQueue([
      queueMessage("inf", '{"stream":"poison-queue","rows":[{"id":1,"x":1e999},{"id":2}]}'),
      queueMessage("ok", { stream: "poison-queue", rows: [{ id: 3 }] }),
    ]);
    expect(r.result.retryMessages).toEqual([]);
    expect(r.sent).toEqual([]);
    expect(r.result.explicitAcks.sort()).toEqual(["inf", "ok"]);
    expect((await output("poison-queue")).map((x) => x.id).sort()).toEqual([2, 3]);
  });

  it("a queue message whose rows share one object from 2^30 places is poison on its own, refused before anything writes it out", async () => {
    await createStream("poison-shared", { key: ["id"], mode: "global", partitions: 2 });
    let shared: unknown = 1;
    for (let i = 0; i < 30; i++) shared = [shared, shared];
    const r = await deliverToQueue([
      queueMessage("shared", { stream: "poison-shared", rows: [{ id: 1, x: shared }] }),
      queueMessage("ok", { stream: "poison-shared", rows: [{ id: 2 }] }),
    ]);
    expect(r.result.retryMessages).toEqual([]);
    expect(r.sent.map((s) => s.reason)).toEqual([expect.stringMatching(/^the body holds more than \d+ values/)]);
    expect((await output("poison-shared")).map((x) => x.id)).toEqual([2]);
  });
});
