import { describe, expect, test } from "vitest";
import { foreignBatchId, INGRESS_PREFIXES, ingressOf } from "../../../src/ingest/batch-id-namespaces";
import { explicitQueueBatchId, fileBatchId, queueBatchId } from "../../../src/sources/ids";
import { batchIdFor, PROVIDER_TYPES } from "../../../src/webhooks";

/** Issue 14: each ingress names batches in a namespace the others cannot use. */
describe("batch id namespaces", () => {
  test("every provider's batch ids are in the webhook namespace", async () => {
    expect([...INGRESS_PREFIXES.webhook].sort()).toEqual(PROVIDER_TYPES.map((t) => `${t}:`).sort());
    for (const t of PROVIDER_TYPES) {
      expect(ingressOf(await batchIdFor(t, "evt_1"))).toBe("webhook");
      expect(ingressOf(await batchIdFor(t, "x".repeat(300)))).toBe("webhook");
    }
  });

  test("files, queue messages and HTTP producers each have their own", async () => {
    expect(ingressOf(await fileBatchId("in/a.json", "e1"))).toBe("files");
    expect(ingressOf(await fileBatchId(`in/${"é".repeat(300)}.json`, "e1"))).toBe("files");
    expect(ingressOf(queueBatchId("ab".repeat(32)))).toBe("queue");
    expect(ingressOf(await explicitQueueBatchId("order-7"))).toBe("queue");
    for (const id of ["order-7", "stripe-evt", "Stripe:evt_1", "q", "r2", "8d5e957f-2973-4f8e-a4a6-c0e7d5f1f2f7"]) expect(ingressOf(id)).toBe("http");
  });

  test("a queue message's own id cannot be another ingress's: qid:X, hashed when too long", async () => {
    expect(await explicitQueueBatchId("order-7")).toBe("qid:order-7");
    expect(await explicitQueueBatchId("stripe:evt_1")).toBe("qid:stripe:evt_1");
    expect(await explicitQueueBatchId("r2:in/a.json@e1")).toBe("qid:r2:in/a.json@e1");
    expect(await explicitQueueBatchId("x".repeat(255))).toMatch(/^qid:sha256:[0-9a-f]{64}$/);
  });

  test("an id in another's namespace is refused with a reason; its own namespace is fine", () => {
    expect(foreignBatchId("stripe:evt_1", "http")).toMatch(/reserved .*\(webhook\); this one is an HTTP producer's/);
    expect(foreignBatchId("r2:in/a.json@e1", "queue")).toMatch(/\(files\)/);
    expect(foreignBatchId("q:abc", "http")).toMatch(/\(queue\)/);
    expect(foreignBatchId("order-7", "webhook")).toMatch(/\(HTTP producers\)/);
    expect(foreignBatchId("stripe:evt_1", "webhook")).toBeNull();
    expect(foreignBatchId("order-7", "http")).toBeNull();
  });
});
