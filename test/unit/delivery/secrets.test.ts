import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { afterRotation, MAX_SIGNING_SECRETS, signingSecrets } from "../../../src/delivery/secrets";
import { newSigningSecret, signedHeaders } from "../../../src/delivery/message";
import type { SealedSecret } from "../../../src/delivery/secrets";

/** How many signing secrets a destination keeps live (src/delivery/secrets.ts): the current one and two previous. */
const secret = (n: number, expiresAt: number | null = null): SealedSecret => ({ id: `sec_${n}`, sealed: `sealed-${n}`, createdAt: n, expiresAt });
const HOUR = 3_600_000;

describe("signing secrets", () => {
  it("a rotation keeps the current one and at most two previous; past the cap the oldest stops signing at once", () => {
    expect(MAX_SIGNING_SECRETS).toBe(3);
    let list = [secret(1)];
    for (let n = 2; n <= 400; n++) {
      list = afterRotation(list, secret(n), n, 24 * HOUR);
      expect(list.length).toBeLessThanOrEqual(MAX_SIGNING_SECRETS);
    }
    expect(list.map((s) => s.id)).toEqual(["sec_400", "sec_399", "sec_398"]);
    expect(list[0].expiresAt).toBeNull();
    expect(list[1].expiresAt).toBe(400 + 24 * HOUR);
    expect(list[2].expiresAt).toBe(399 + 24 * HOUR); // its own overlap, never lengthened
    expect(signingSecrets(list, 500).map((s) => s.id)).toEqual(["sec_400", "sec_399", "sec_398"]);
  });

  it("overlaps still end: an expired secret neither signs nor counts against the cap", () => {
    const list = afterRotation(afterRotation([secret(1)], secret(2), 10, 5), secret(3), 100, 1000);
    expect(list.map((s) => s.id)).toEqual(["sec_3", "sec_2"]); // sec_1's overlap ended at 15
    expect(signingSecrets(list, 100 + 1000).map((s) => s.id)).toEqual(["sec_3"]);
    expect(afterRotation([secret(1)], secret(2), 10, 0).map((s) => s.id)).toEqual(["sec_2"]); // overlap 0: the old one stops now
  });

  it("a destination stored before the cap, with hundreds of live secrets, signs with the newest three only", async () => {
    const stored = Array.from({ length: 361 }, (_, i) => secret(361 - i, i === 0 ? null : 10_000 + i));
    expect(signingSecrets(stored, 5_000).map((s) => s.id)).toEqual(["sec_361", "sec_360", "sec_359"]);
    // The header of three signatures stays small (a receiver's limit is usually 8-16 KB), and each of the three verifies.
    const keys = [newSigningSecret(), newSigningSecret(), newSigningSecret()];
    const body = JSON.stringify({ type: "row.emitted", timestamp: "2026-01-01T00:00:00.000Z", data: { id: 1 } });
    const headers = await signedHeaders(keys, "s~2.1.0", Date.now(), body);
    expect(headers["webhook-signature"].split(" ")).toHaveLength(3);
    expect(headers["webhook-signature"].length).toBeLessThan(200);
    for (const k of keys) expect(new Webhook(k).verify(body, headers)).toEqual(JSON.parse(body));
  });
});
