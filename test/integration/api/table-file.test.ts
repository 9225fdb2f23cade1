/**
 * The table read without a catalog (issue #33): GET …/table lists the
 * current snapshot's data files, and GET …/table/file?path= gives each one's
 * bytes as stored; a path outside the table is a 400, a file that is not
 * there a 404, and a stream without a table says so.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { at, call, createStream, json, post } from "../helpers";

describe("GET …/table/file", () => {
  it("gives each listed data file's bytes, and nothing outside the table", async () => {
    await createStream("tf", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", table: { format: "iceberg" } });
    await post("tf", [
      { id: "A", ts: at(10, 0) },
      { id: "B", ts: at(10, 1) },
    ]);
    await post("tf", [{ id: "C", ts: at(10, 2) }]);
    await runDurableObjectAlarm(env.COORDINATOR.getByName("tf"));
    const table = await json(call("GET", "/v1/streams/tf/table"));
    expect(table.files.reduce((n: number, f: { records: number }) => n + f.records, 0)).toBe(3);
    for (const f of table.files as { path: string; bytes: number }[]) {
      const r = await call("GET", `/v1/streams/tf/table/file?path=${encodeURIComponent(f.path)}`);
      expect(r.status).toBe(200);
      const bytes = new Uint8Array(await r.arrayBuffer());
      expect(bytes.length).toBe(f.bytes);
      expect(new TextDecoder().decode(bytes.slice(0, 4))).toBe("PAR1");
      const stored = await env.SINK.get(`tables/tf/${f.path}`);
      expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(bytes);
    }
    const meta = await call("GET", `/v1/streams/tf/table/file?path=${encodeURIComponent(table.metadataLocation.split("/tables/tf/")[1])}`);
    expect(meta.status).toBe(200);
    expect(JSON.parse(await meta.text())["format-version"]).toBe(2);
    for (const bad of ["../other/x", "data/../../x", "/data/x", "data/a/b", "", "manifests/x"]) {
      const r = await call("GET", `/v1/streams/tf/table/file?path=${encodeURIComponent(bad)}`);
      expect(r.status, bad).toBe(400);
      expect(r.headers.get("content-type")).toContain("application/problem+json");
    }
    expect((await call("GET", "/v1/streams/tf/table/file?path=data/none.parquet")).status).toBe(404);
    await createStream("tf-none", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes" });
    const none = await call("GET", "/v1/streams/tf-none/table/file?path=data/x.parquet");
    expect(none.status).toBe(404);
    expect((await none.json<{ detail: string }>()).detail).toContain("has no table");
  });
});
