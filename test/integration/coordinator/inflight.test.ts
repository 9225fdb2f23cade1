/**
 * A request for a batch id that is already running in the Coordinator waits
 * for that run there (one call, not the producer polling with the whole body),
 * then is answered as a retry would be: the recorded outcome, or, if the run
 * failed, a run of its own.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { armFault, batchFaultKey } from "../../../src/instrument/faults";
import { at, createStream, output } from "../helpers";

const request = (batchId: string): IngestRequest => ({
  sourceHeader: null,
  batchId,
  auth: { kind: "admin" },
  rows: [
    { id: "A", ts: at(10, 0) },
    { id: "B", ts: at(10, 0) },
  ],
  identity: `identity-of-${batchId}`,
  bytes: 60,
});

it("a second request for a running batch id gets its recorded outcome without polling", async () => {
  await createStream("inflight", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
  await runInDurableObject(env.COORDINATOR.getByName("inflight"), async (c) => {
    const [[first], [second]] = await Promise.all([c.ingestMany([request("x")]), c.ingestMany([request("x")])]);
    expect(first).toMatchObject({ kind: "done", outcome: { replayed: false, emitted: 2 } });
    expect(second).toMatchObject({ kind: "replay", outcome: { replayed: true, emitted: 2 } });
  });
  expect(await output("inflight")).toHaveLength(2);
});

it("when the running attempt fails, the waiting request runs the batch itself", async () => {
  await createStream("inflight-fail", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
  await runInDurableObject(env.COORDINATOR.getByName("inflight-fail"), async (c) => {
    // The first call takes the armed crash point (src/instrument/faults.ts's plan), as a request with X-Test-Fault would.
    armFault(batchFaultKey("inflight-fail", "y"), "after-decide");
    const [[first], [second]] = await Promise.all([c.ingestMany([request("y")]), c.ingestMany([request("y")])]);
    expect(first).toMatchObject({ kind: "failed" });
    expect(second).toMatchObject({ kind: "done", outcome: { replayed: false, emitted: 2 } });
  });
  expect(await output("inflight-fail")).toHaveLength(2);
});
