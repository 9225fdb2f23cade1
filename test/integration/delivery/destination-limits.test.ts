import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../src/api/app";
import { MAX_DESTINATIONS_PER_STREAM } from "../../../src/delivery/config";
import { destinationListSchema, destinationSchema } from "../../../src/delivery/schemas";
import { call, createStream, json, TOKEN } from "../helpers";

/**
 * Destinations' bounds: how many a stream may have, how many signing secrets
 * sign at once (each is a signature in every message's header), and what a Worker without
 * CREDENTIALS_KEY answers to an http destination (the 503 a source's
 * credentials get, not a 500), with nothing stored either way.
 */
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 1 };
const D = (stream: string, name: string) => `/v1/streams/${stream}/destinations/${name}`;
const http = (n: number) => ({ type: "http", url: `http://127.0.0.1:1/hook-${n}` });

/** The app with some of its env changed (as a Worker deployed without a secret would have it). */
function withEnv(method: string, path: string, body: unknown, overrides: Record<string, string | undefined>) {
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  const init = { method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) };
  return app.fetch(new Request(`http://edge-dedup.test${path}`, init), { ...env, ...overrides }, ctx);
}

describe("destinations per stream", () => {
  it(`at most ${MAX_DESTINATIONS_PER_STREAM}: one more is a 409 problem and stores nothing; updates still work; a delete makes room`, async () => {
    await createStream("dl-cap", base);
    const made = await Promise.all(Array.from({ length: MAX_DESTINATIONS_PER_STREAM }, (_, i) => call("PUT", D("dl-cap", `d${i}`), http(i))));
    expect(made.map((r) => r.status)).toEqual(Array(MAX_DESTINATIONS_PER_STREAM).fill(201));

    for (const name of ["extra", "q"]) {
      const body = name === "q" ? { type: "queue", binding: "DELIVERIES" } : http(99);
      const over = await call("PUT", D("dl-cap", name), body);
      expect(over.status).toBe(409);
      expect(over.headers.get("content-type")).toMatch(/problem\+json/);
      expect(await over.json()).toMatchObject({
        type: "https://edge-dedup.dev/problems/too-many-destinations",
        status: 409,
        detail: `stream "dl-cap" has ${MAX_DESTINATIONS_PER_STREAM} destinations, the most it may have; delete one first`,
      });
      expect((await call("GET", D("dl-cap", name))).status).toBe(404);
    }
    const list = destinationListSchema.parse(await json(call("GET", "/v1/streams/dl-cap/destinations")));
    expect(list.destinations).toHaveLength(MAX_DESTINATIONS_PER_STREAM);
    expect(list.destinations.map((d) => d.name)).not.toContain("extra");

    // An existing one is still updated at the cap.
    const updated = await call("PUT", D("dl-cap", "d3"), { type: "http", url: "http://127.0.0.1:2/moved" });
    expect(updated.status).toBe(200);
    expect((await updated.json<any>()).destination.url).toBe("http://127.0.0.1:2/moved");
    // A delete makes room for one, not two.
    expect((await call("DELETE", D("dl-cap", "d0"))).status).toBe(204);
    expect((await call("PUT", D("dl-cap", "extra"), http(99))).status).toBe(201);
    expect((await call("PUT", D("dl-cap", "another"), http(98))).status).toBe(409);
    // /metrics has one sample per destination, so it is bounded by the cap too.
    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics.split("\n").filter((l) => l.startsWith('edge_dedup_delivery_pending_rows{stream="dl-cap"'))).toHaveLength(MAX_DESTINATIONS_PER_STREAM);
  });
});

describe("without CREDENTIALS_KEY", () => {
  it("an http destination's PUT and rotate-secret are the 503 not-configured problem a source's credentials get, and nothing is stored", async () => {
    await createStream("dl-key", base);
    for (const key of [undefined, "", "too-short"]) {
      const r = await withEnv("PUT", D("dl-key", "h"), http(1), { CREDENTIALS_KEY: key });
      expect(r.status, String(key)).toBe(503);
      expect(r.headers.get("content-type")).toMatch(/problem\+json/);
      const p = await r.json<any>();
      expect(p).toMatchObject({ type: "https://edge-dedup.dev/problems/not-configured", status: 503 });
      expect(p.detail).toMatch(/CREDENTIALS_KEY/);
      // The same answer a source's credential gets.
      const source = await withEnv("POST", "/v1/streams/dl-key/sources/s/credentials", { type: "hmac" }, { CREDENTIALS_KEY: key });
      expect(source.status).toBe(503);
      expect((await source.json<any>()).type).toBe(p.type);
    }
    expect((await call("GET", D("dl-key", "h"))).status).toBe(404);
    expect((await json(call("GET", "/v1/streams/dl-key/destinations"))).destinations).toEqual([]);
    // A queue destination needs no secret.
    expect((await withEnv("PUT", D("dl-key", "q"), { type: "queue", binding: "DELIVERIES" }, { CREDENTIALS_KEY: undefined })).status).toBe(201);

    // With the key, it is created; a rotation without the key is the same 503 and changes nothing.
    expect((await call("PUT", D("dl-key", "h"), http(1))).status).toBe(201);
    const before = (await json(call("GET", D("dl-key", "h")))).secrets;
    const rotate = await withEnv("POST", `${D("dl-key", "h")}/rotate-secret`, {}, { CREDENTIALS_KEY: undefined });
    expect(rotate.status).toBe(503);
    expect((await rotate.json<any>()).type).toBe("https://edge-dedup.dev/problems/not-configured");
    expect((await json(call("GET", D("dl-key", "h")))).secrets).toEqual(before);
  });
});

describe("signing secrets per destination", () => {
  it("rotations keep the current secret and two previous: the oldest beyond them stops signing, and storage stays bounded", async () => {
    await createStream("dl-rot", base);
    const created = await json(call("PUT", D("dl-rot", "h"), http(1)));
    const ids = [created.destination.secrets[0].id as string];
    for (let i = 0; i < 6; i++) {
      const r = await call("POST", `${D("dl-rot", "h")}/rotate-secret`, { overlap: "24 hours" });
      expect(r.status).toBe(201);
      ids.unshift((await r.json<any>()).id);
      const shown = destinationSchema.parse(await json(call("GET", D("dl-rot", "h")))).secrets;
      expect(shown.map((x) => x.id)).toEqual(ids.slice(0, Math.min(3, ids.length)));
      expect(shown[0].expiresAt).toBeNull();
      for (const old of shown.slice(1)) expect(old.expiresAt).toBeGreaterThan(Date.now());
    }
    const stored = await runInDurableObject(
      env.DESTINATION.getByName("dl-rot/h"),
      (_o, state) => JSON.parse(state.storage.sql.exec<{ secrets: string }>("SELECT secrets FROM dest").one().secrets) as { id: string }[],
    );
    expect(stored.map((x) => x.id)).toEqual(ids.slice(0, 3));
  });
});
