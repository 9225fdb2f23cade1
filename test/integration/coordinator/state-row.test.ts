/**
 * The state reader asked by row (GET /v1/streams/{stream}/state?row=…): a
 * row that has no state key is a 400 problem+json in the product's words,
 * whatever is wrong with it; the key alone finds the row where the mode keys
 * by the key alone. Real Coordinator and partitions.
 */
import { describe, expect, it } from "vitest";
import { at, call, createStream, json, post } from "../helpers";

const byRow = (stream: string, text: string) => call("GET", `/v1/streams/${stream}/state?row=${encodeURIComponent(text)}`);

async function problem(r: Response, detail: string | RegExp) {
  expect(r.status).toBe(400);
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  const p = await r.json<any>();
  expect(p).toMatchObject({ status: 400, type: "https://edge-dedup.dev/problems/invalid-request", title: "Invalid request" });
  if (typeof detail === "string") expect(p.detail).toBe(detail);
  else expect(p.detail).toMatch(detail);
  return p;
}

const keysOf = async (r: Response) => {
  expect(r.status, await r.clone().text()).toBe(200);
  return (await r.json<{ keys: { key: string; kept?: { source: string } | null }[] }>()).keys;
};

describe("state?row=: every bad row is a 400, and nothing changes", () => {
  it("not JSON, too deep, not an object, a key value that is not finite, a missing key column", async () => {
    await createStream("sr-bad", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
    await post("sr-bad", [{ id: "a", ts: at(10, 0) }]);
    const before = await json(call("GET", "/v1/streams/sr-bad"));
    const notJson = await problem(await byRow("sr-bad", '{"id": "sk_live_abc"'), /^row is not valid JSON \(/);
    expect(JSON.stringify(notJson)).not.toContain("sk_live");
    await problem(
      await byRow("sr-bad", `${"[".repeat(5000)}${"]".repeat(5000)}`),
      "row nests arrays and objects more than 64 levels deep; at most 64 are accepted",
    );
    await problem(await byRow("sr-bad", `{"id": "a", "x": ${'{"y":'.repeat(5000)}1${"}".repeat(5000)}}`), /^row nests arrays and objects more than 64/);
    for (const text of ["[]", "42", '"a"', "null"]) await problem(await byRow("sr-bad", text), /^row must be a JSON object/);
    await problem(await byRow("sr-bad", '{"id": 1e999}'), "row has no state key: id: a key value must be a finite number");
    await problem(await byRow("sr-bad", '{"id": -1e999}'), "row has no state key: id: a key value must be a finite number");
    await problem(await byRow("sr-bad", `{"ts": ${at(10, 0)}}`), "row has no state key: id: missing key column");
    const after = await json(call("GET", "/v1/streams/sr-bad"));
    expect(after.state).toEqual(before.state);
    expect(after.batches).toEqual(before.batches);
    expect(await keysOf(await byRow("sr-bad", '{"id": "a"}'))).toHaveLength(1);
  });
});

describe("state?row=: the key alone where the mode keys by it alone", () => {
  it("within-watermark: no event time needed; fields outside the key (1e999, a bad time) are not judged", async () => {
    await createStream("sr-ww", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 4 });
    await post(
      "sr-ww",
      [
        { id: "a", ts: at(10, 0) },
        { id: "b", ts: at(10, 1) },
      ],
      { "x-source": "pos" },
    );
    const a = await keysOf(await byRow("sr-ww", '{"id": "a"}'));
    expect(a).toEqual([expect.objectContaining({ key: '["a"]', kept: expect.objectContaining({ source: "pos", seq: 1 }) })]);
    expect(await keysOf(await byRow("sr-ww", '{"id": "a", "amount": 1e999, "ts": "not a time"}'))).toEqual(a);
    expect((await keysOf(await byRow("sr-ww", '{"id": "b"}'))).map((k) => k.key)).toEqual(['["b"]']);
    expect(await keysOf(await byRow("sr-ww", '{"id": "never-sent"}'))).toEqual([]);
  });

  it("global: the key columns alone", async () => {
    await createStream("sr-gl", { key: ["id", "tenant"], eventTime: "ts", mode: "global", watermarkDelay: "5 minutes", partitions: 2 });
    await post("sr-gl", [{ id: 1, tenant: "acme", ts: at(10, 0) }]);
    expect((await keysOf(await byRow("sr-gl", '{"id": 1, "tenant": "acme"}'))).map((k) => k.key)).toEqual(['[1,"acme"]']);
    await problem(await byRow("sr-gl", '{"id": 1}'), "row has no state key: tenant: missing key column");
  });

  it("event-time-key: the event time is needed, and the 400 says why", async () => {
    await createStream("sr-etk", { key: ["id"], eventTime: "ts", mode: "event-time-key", watermarkDelay: "5 minutes", partitions: 2 });
    await post("sr-etk", [{ id: "a", ts: at(10, 0) }]);
    await problem(
      await byRow("sr-etk", '{"id": "a"}'),
      "row has no state key: ts: missing event time; in mode event-time-key the state key is the key columns and the event time",
    );
    expect((await keysOf(await byRow("sr-etk", JSON.stringify({ id: "a", ts: at(10, 0) })))).map((k) => k.key)).toEqual([`["a"]@${at(10, 0)}`]);
    expect(await keysOf(await byRow("sr-etk", JSON.stringify({ id: "a", ts: at(10, 1) })))).toEqual([]);
  });

  it("a content key is the whole row: a number that is not finite anywhere in it is a 400 naming no field", async () => {
    await createStream("sr-content", { key: { content: { exclude: ["received_at"] } }, eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
    await post("sr-content", [{ order: "o-1", ts: at(10, 0), received_at: 1 }]);
    expect(await keysOf(await byRow("sr-content", JSON.stringify({ order: "o-1", ts: at(10, 0), received_at: 2 })))).toHaveLength(1);
    const p = await problem(await byRow("sr-content", `{"order": "o-1", "ts": ${at(10, 0)}, "secret_field": [1e999]}`), /not finite/);
    expect(p.detail).not.toContain("secret_field");
  });
});
