/**
 * Security over real HTTP (issue 6): signed producers (v2 signatures bound to
 * stream, source, batch id and content type) across a restart, and callers
 * without a valid credential who send large bodies.
 */
import { describe, expect, test } from "vitest";
import { signRequest } from "../../src/api/signature";
import { at, useServer } from "./server";

const { server, api } = useServer();

describe("signed producers", () => {
  test("v2 signatures: accepted, replayed, refused when moved; secrets survive a restart", async () => {
    const s = "signed";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2 });
    const created = await api.request("POST", `/v1/streams/${s}/sources/hooks/credentials`, {
      body: JSON.stringify({ type: "hmac" }),
      headers: { "content-type": "application/json" },
    });
    expect(created.status).toBe(201);
    const secret: string = JSON.parse(created.text).secret;

    const send = async (rows: unknown, batchId: string, opts: { stream?: string; signedFor?: string; t?: number } = {}) => {
      const body = JSON.stringify(rows);
      const t = opts.t ?? Math.floor(Date.now() / 1000);
      const sig = await signRequest(secret, body, t, { stream: opts.signedFor ?? s, source: "hooks", batchId, contentType: "application/json" });
      return api.post(opts.stream ?? s, rows, { token: null, source: "hooks", batchId, headers: { "x-signature": sig } });
    };

    const first = await send(
      [
        { id: "a", ts: at(10) },
        { id: "a", ts: at(10) },
      ],
      "b1",
    );
    expect(first.status, first.text).toBe(200);
    expect(JSON.parse(first.text)).toMatchObject({ source: "hooks", emitted: 1, duplicates: 1, replayed: false });
    expect(
      JSON.parse(
        (
          await send(
            [
              { id: "a", ts: at(10) },
              { id: "a", ts: at(10) },
            ],
            "b1",
          )
        ).text,
      ).replayed,
    ).toBe(true);

    await server.restart();
    expect((await send([{ id: "b", ts: at(10, 1) }], "b2")).status).toBe(200);
    // A signature for another stream, or outside the window, or without credentials at all.
    expect((await send([{ id: "c", ts: at(10, 2) }], "b3", { signedFor: "elsewhere" })).status).toBe(401);
    expect((await send([{ id: "c", ts: at(10, 2) }], "b3", { t: Math.floor(Date.now() / 1000) + 400 })).status).toBe(401);
    expect((await api.post(s, [{ id: "c", ts: at(10, 2) }], { token: null, batchId: "b3" })).status).toBe(401);
    expect(await api.output(s)).toEqual([
      { id: "a", ts: at(10) },
      { id: "b", ts: at(10, 1) },
    ]);
    expect((await api.stream(s)).batches.committed).toBe(2);
  });
});

describe("callers without a valid credential", () => {
  test("a bogus token with a 31 MiB body is a 403 that changes nothing; so is a body over the limit", async () => {
    const s = "bogus";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2, limits: { maxBodyBytes: 4096 } });
    const big = "x".repeat(31 * 1024 * 1024);
    const denied = await api.request("POST", `/v1/streams/${s}/events`, { body: big, token: "bogus", headers: { "content-type": "application/json" } });
    expect(denied.status).toBe(403);
    const tooBig = await api.request("POST", `/v1/streams/${s}/events`, { body: big, headers: { "content-type": "application/json" } });
    expect(tooBig.status).toBe(413);
    expect(JSON.parse(tooBig.text).detail).toMatch(/at most 4096/);
    const missing = await api.request("POST", `/v1/streams/nowhere/events`, { body: "" });
    expect(missing.status).toBe(404);
    expect((await api.stream(s)).batches.committed).toBe(0);
  });
});
