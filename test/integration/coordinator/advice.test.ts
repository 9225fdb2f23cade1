import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { adviceSchema } from "../../../src/api/openapi";
import type { AdviceFigures } from "../../../src/coordinator/advice";
import { advise } from "../../../src/stream/advisor/index";
import { at, call, client, createStream, json, post } from "../helpers";

type Row = { id: string; ts: number };
const getAdvice = async (stream: string) => adviceSchema.parse(await client.advice(stream));
/** The CLI's figures over rows as they were accepted, in order, each tagged with its source. */
const cliAdvice = (rows: (Row & { src: string })[]) => advise(() => rows, { key: ["id"], time: "ts", source: "src" }).advice;

describe("GET /v1/streams/{stream}/advice", () => {
  it("the Coordinator's live figures are the CLI's over the same rows: duplicates, gaps, disorder, the delay", async () => {
    await createStream("adv", {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "1 hour",
      partitions: 4,
      sources: { app: { watermarkDelay: "2 hours" }, web: {} },
    });
    const sent: (Row & { src: string })[] = [];
    const send = async (src: string, rows: Row[], expected: Record<string, unknown>, headers: Record<string, string> = {}) => {
      expect(await post("adv", rows, { "x-source": src, ...headers })).toMatchObject(expected);
      for (const r of rows) if (r.id !== undefined && r.ts !== undefined) sent.push({ ...r, src });
    };
    // web: in order but for A's copy 5 minutes later (a stored key) and a copy in the same batch 30 s later
    await send(
      "web",
      [
        { id: "A", ts: at(10, 0) },
        { id: "B", ts: at(10, 1) },
        { id: "C", ts: at(10, 2) },
      ],
      { emitted: 3 },
      { "idempotency-key": "w1" },
    );
    await send(
      "web",
      [
        { id: "D", ts: at(10, 3) },
        { id: "A", ts: at(10, 5) },
        { id: "E", ts: at(10, 4) },
        { id: "E", ts: at(10, 4) + 30_000 },
      ],
      { emitted: 2, duplicates: 2 },
    );
    // app: 12 minutes out of order within the batch, 8 minutes against its earlier batch; B copied 20 minutes later
    await send(
      "app",
      [
        { id: "F", ts: at(10, 20) },
        { id: "G", ts: at(10, 8) },
      ],
      { emitted: 2 },
    );
    await send(
      "app",
      [
        { id: "H", ts: at(10, 12) },
        { id: "B", ts: at(10, 21) },
        { id: "I", ts: at(10, 22) },
      ],
      { emitted: 2, duplicates: 1 },
    );
    // A replay adds nothing; a rejected row is no row.
    expect(
      await post(
        "adv",
        [
          { id: "A", ts: at(10, 0) },
          { id: "B", ts: at(10, 1) },
          { id: "C", ts: at(10, 2) },
        ],
        { "x-source": "web", "idempotency-key": "w1" },
      ),
    ).toMatchObject({ replayed: true });
    await send("web", [{ id: "J" } as Row, { id: "K", ts: at(10, 6) }], { emitted: 1, rejected: [{ index: 0 }] });

    const live = await getAdvice("adv");
    const cli = cliAdvice(sent);
    expect(live.stream).toBe("adv");
    expect(live.overall).toMatchObject({ rows: cli.events, duplicates: cli.duplicates, duplicateRate: cli.duplicateRate });
    expect(live.overall.gaps).toEqual(cli.gaps);
    expect(live.overall.disorder).toEqual(cli.disorder.overall);
    expect(live.overall.recommendation).toEqual(cli.recommendation);
    for (const [src, d] of Object.entries(cli.disorder.sources)) expect(live.sources[src].disorder).toEqual(d);

    // The figures themselves, so the comparison above is not of two empty things.
    expect(live.sources.web).toMatchObject({
      rows: 8,
      duplicates: 2,
      gaps: { count: 2, max: 5 * 60_000 },
      currentDelay: { ms: 3_600_000, interval: "1 hour" },
    });
    expect(live.sources.app).toMatchObject({
      rows: 5,
      duplicates: 1,
      gaps: { count: 1, max: 20 * 60_000 },
      disorder: { outOfOrder: 2, max: 12 * 60_000 },
      currentDelay: { interval: "2 hours" },
    });
    // 20 min × 1.2 = 24 min → "30 minutes"
    expect(live.overall.recommendation).toMatchObject({ watermarkDelay: "30 minutes", delayMs: 30 * 60_000, basis: "duplicate gaps" });
    expect(live.overall.currentDelay).toEqual({ ms: 3_600_000, interval: "1 hour" });
  });

  it("a batch that crashed after its partitions decided counts once, with its gaps, when its retry commits", async () => {
    await createStream("adv-crash", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 });
    await post("adv-crash", [{ id: "A", ts: at(10, 0) }]);
    const batch = [
      { id: "A", ts: at(10, 7) },
      { id: "B", ts: at(10, 1) },
      { id: "B", ts: at(10, 3) },
    ];
    const crashed = await call("POST", "/v1/streams/adv-crash/events", batch, { "idempotency-key": "c1", "x-test-fault": "after-decide" });
    expect(crashed.status).toBe(500);
    expect((await getAdvice("adv-crash")).overall).toMatchObject({ rows: 1, duplicates: 0 });
    expect(await post("adv-crash", batch, { "idempotency-key": "c1" })).toMatchObject({ replayed: false, duplicates: 2 });
    const live = await getAdvice("adv-crash");
    expect(live.overall).toMatchObject({ rows: 4, duplicates: 2, gaps: { count: 2, max: 7 * 60_000 } });
    expect(live.overall.recommendation).toEqual(
      cliAdvice([{ id: "A", ts: at(10, 0), src: "default" }, ...batch.map((r) => ({ ...r, src: "default" }))]).recommendation,
    );
  });

  it("a commit that rolls back leaves the figures as storage has them (they are added to in place)", async () => {
    await createStream("adv-rollback", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour" });
    await post("adv-rollback", [
      { id: "A", ts: at(10, 0) },
      { id: "A", ts: at(10, 2) },
    ]);
    const before = await getAdvice("adv-rollback");
    await runInDurableObject(env.COORDINATOR.getByName("adv-rollback"), (instance) => {
      const c = (instance as unknown as { stores: { figures: AdviceFigures; transaction<T>(fn: () => T): T; book: { write(): unknown } } }).stores;
      expect(() =>
        c.transaction(() => {
          const changed = new Map();
          c.figures.observe(
            changed,
            {
              source: "default",
              counts: { input: 2, emitted: 1, duplicates: 1, late: 0, rejected: [] },
              seen: { times: [at(9, 0), at(8, 0)], gaps: [600_000] },
            },
            at(10, 2),
          );
          c.book.write(); // the state record carries the figures (src/coordinator/state.ts)
          throw new Error("the commit failed");
        }),
      ).toThrow("the commit failed");
    });
    expect(await getAdvice("adv-rollback")).toEqual(before);
  });

  it("figures survive a fresh read from storage, and go with the stream when it is deleted", async () => {
    await createStream("adv-del", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour" });
    await post("adv-del", [
      { id: "A", ts: at(10, 0) },
      { id: "A", ts: at(10, 2) },
    ]);
    expect((await getAdvice("adv-del")).overall).toMatchObject({ rows: 2, duplicates: 1, gaps: { max: 120_000 } });
    // As a restarted Coordinator reads them: from its newest state record, not the cache.
    await runInDurableObject(env.COORDINATOR.getByName("adv-del"), (instance) =>
      (instance as unknown as { stores: { figures: AdviceFigures } }).stores.figures.forget(),
    );
    expect((await getAdvice("adv-del")).overall).toMatchObject({ rows: 2, duplicates: 1, gaps: { max: 120_000 } });
    expect((await call("DELETE", "/v1/streams/adv-del")).status).toBe(204);
    const gone = await call("GET", "/v1/streams/adv-del/advice");
    expect(gone.status).toBe(404);
    expect(gone.headers.get("content-type")).toBe("application/problem+json");
    await createStream("adv-del", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour" });
    expect((await getAdvice("adv-del")).overall).toMatchObject({ rows: 0, duplicates: 0, gaps: { count: 0, max: null } });
  });

  it("admin only", async () => {
    await createStream("adv-auth", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour" });
    expect((await call("GET", "/v1/streams/adv-auth/advice", undefined, { authorization: "Bearer nope" })).status).toBe(403);
    expect((await call("POST", "/v1/streams/adv-auth/advice")).status).toBe(405);
  });
});
