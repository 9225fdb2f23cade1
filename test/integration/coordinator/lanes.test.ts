import { expect, it } from "vitest";
import { at, call, createStream, post } from "../helpers";

async function lane(stream: string, name: "late" | "rejected" | "output"): Promise<any[]> {
  const r = await call("GET", `/v1/streams/${stream}/${name}`);
  expect(r.status).toBe(200);
  const text = new TextDecoder().decode(await r.arrayBuffer());
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

it("late and rejected rows are written with reason, source and batch id, in commit order", async () => {
  await createStream("lanes", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 3, schema: { n: "int" } });
  await post(
    "lanes",
    [
      { id: "A", ts: at(10, 0) },
      { id: "B", ts: at(10, 30) },
    ],
    { "idempotency-key": "b1", "x-source": "shop" },
  );
  // The watermark is now 10:25: A@10:01 and C@10:20 are late; two rows are rejected.
  const r = await post(
    "lanes",
    [{ id: "A", ts: at(10, 1) }, { id: "C", ts: at(10, 20), n: "7" }, { id: "D", ts: at(10, 40), n: "seven" }, { id: "E", ts: at(10, 41) }, { ts: at(10, 42) }],
    { "idempotency-key": "b2", "x-source": "shop" },
  );
  expect(r).toMatchObject({ emitted: 1, late: 2, duplicates: 0, watermark: at(10, 25) });

  expect(await lane("lanes", "late")).toEqual([
    { source: "shop", batchId: "b2", index: 0, reason: "late", eventTime: at(10, 1), watermark: at(10, 25), row: { id: "A", ts: at(10, 1) } },
    { source: "shop", batchId: "b2", index: 1, reason: "late", eventTime: at(10, 20), watermark: at(10, 25), row: { id: "C", ts: at(10, 20), n: 7 } },
  ]);
  expect(await lane("lanes", "rejected")).toEqual([
    { source: "shop", batchId: "b2", index: 2, reason: "n: not an int", row: { id: "D", ts: at(10, 40), n: "seven" } },
    { source: "shop", batchId: "b2", index: 4, reason: "id: missing key column", row: { ts: at(10, 42) } },
  ]);
  // A replay writes nothing again.
  await post(
    "lanes",
    [{ id: "A", ts: at(10, 1) }, { id: "C", ts: at(10, 20), n: "7" }, { id: "D", ts: at(10, 40), n: "seven" }, { id: "E", ts: at(10, 41) }, { ts: at(10, 42) }],
    { "idempotency-key": "b2", "x-source": "shop" },
  );
  expect(await lane("lanes", "late")).toHaveLength(2);
  expect(await lane("lanes", "rejected")).toHaveLength(2);
  expect((await lane("lanes", "output")).map((x) => x.id)).toEqual(["A", "B", "E"]);
});
