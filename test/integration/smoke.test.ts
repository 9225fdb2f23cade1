import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";

it("answers", async () => {
  const r = await exports.default.fetch("http://x/v1/streams/s", { headers: { authorization: "Bearer test-admin-token" } });
  expect(r.status).toBe(404);
});
