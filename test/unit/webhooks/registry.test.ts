import { expect, test } from "vitest";
import { isProviderType, precheck, PROVIDER_TYPES, PROVIDERS } from "../../../src/webhooks";

test("one provider per type of DESIGN §6, each registered under its own type", () => {
  expect(PROVIDER_TYPES).toEqual(["stripe", "github", "shopify", "standard-webhooks"]);
  for (const type of PROVIDER_TYPES) expect(PROVIDERS[type].type).toBe(type);
});

test("isProviderType knows the four and nothing inherited", () => {
  expect(PROVIDER_TYPES.every(isProviderType)).toBe(true);
  for (const other of ["hmac", "token", "toString", "__proto__", "", 1, null]) expect(isProviderType(other)).toBe(false);
});

test("precheck by type needs only the headers", () => {
  expect(precheck("github", new Headers(), 0)).toEqual({ ok: false, reason: "missing X-Hub-Signature-256 header" });
  expect(precheck("github", new Headers({ "X-Hub-Signature-256": `sha256=${"a".repeat(64)}` }), 0)).toEqual({ ok: true });
});
