import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { call, createStream, json, post, D, until } from "../helpers";
import { deadLaneSchema, destinationSchema } from "../../../src/delivery/schemas";

/**
 * Destination URLs (src/delivery/url.ts) at the route and at send time: the
 * forms an attacker review found accepted are refused by PUT, and a stored
 * URL the current rules refuse is never fetched: its rows fail with a clear
 * lastError and follow retryFor to the dead lane.
 */
const T = Date.UTC(2026, 0, 1);
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 1 };

it("PUT refuses trailing-dot, internal and IPv4-embedding IPv6 hosts with a 400 that says why, and stores the normal form", async () => {
  await createStream("du-put", base);
  for (const [url, why] of [
    // (localhost itself is the loopback exception, which these tests turn on.)
    ["https://app.localhost./hook", /localhost/],
    ["https://metadata.google.internal./computeMetadata/v1/", /\.internal/],
    ["https://[64:ff9b::169.254.169.254]/", /NAT64 address of a link-local address/],
    ["https://[2002:a9fe:a9fe::]/", /6to4/],
    ["https://[::ffff:127.0.0.1]/", /IPv4-mapped/],
    ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", /Teredo/],
    ["https://printer.local/", /\.local/],
  ] as const) {
    const r = await call("PUT", D("du-put", "a"), { type: "http", url });
    expect(r.status, url).toBe(400);
    expect(r.headers.get("content-type")).toMatch(/problem\+json/);
    const p = await r.json<any>();
    expect(p.detail, url).toMatch(why);
    expect(p.detail).toMatch(/the host must be public/);
    expect(p.errors).toEqual([{ path: "url", message: expect.stringMatching(why) }]);
  }
  expect((await json(call("GET", "/v1/streams/du-put/destinations"))).destinations).toEqual([]);
  const ok = await call("PUT", D("du-put", "a"), { type: "http", url: "https://Hooks.Example.COM./in" });
  expect(ok.status).toBe(201);
  expect((await ok.json<any>()).destination.url).toBe("https://hooks.example.com/in");
});

it("a stored URL the current rules refuse is not fetched: its rows fail with a clear lastError, then go to the dead lane", async () => {
  await createStream("du-send", base);
  // Port 1 refuses connections, so a fetch would say "connection failed"; the check comes first and says why instead.
  expect((await call("PUT", D("du-send", "h"), { type: "http", url: "http://127.0.0.1:1/hook", retryFor: "2 seconds", timeout: "1 second" })).status).toBe(201);
  // As a destination stored before the rules closed this gap would hold it.
  await runInDurableObject(env.DESTINATION.getByName("du-send/h"), (_o, state) => {
    state.storage.sql.exec("UPDATE dest SET config = json_set(config, '$.url', ?) WHERE id = 1", "https://[64:ff9b::a9fe:a9fe]/latest/meta-data/");
  });
  await post(
    "du-send",
    [
      { id: 1, ts: T },
      { id: 2, ts: T },
    ],
    { "idempotency-key": "s1" },
  );
  const failing = await until("a failure", async () => {
    const s = destinationSchema.parse(await json(call("GET", D("du-send", "h"))));
    return s.failing && s.lastError ? s : null;
  });
  expect(failing.lastError).toMatch(/^not sent: the destination's url is refused \(a NAT64 address of a link-local address: the host must be public\)/);
  expect(failing.lastError).not.toMatch(/connection/);
  const dead = await until("the dead lane", async () => {
    const page = deadLaneSchema.parse(await json(call("GET", `${D("du-send", "h")}/dead`)));
    return page.rows.length === 2 ? page : null;
  });
  expect(dead.rows.map((r) => r.id)).toEqual(["du-send.1.0", "du-send.1.1"]);
  for (const r of dead.rows) expect(r.lastError).toMatch(/url is refused/);
  expect(destinationSchema.parse(await json(call("GET", D("du-send", "h"))))).toMatchObject({ deliveredSeq: 1, pending: 0, dead: 2, delivered: 0 });
});
