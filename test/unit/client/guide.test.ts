/**
 * The typed-client guide (docs/guides/typed-client.md) against the client:
 * every method createClient() answers has an example there, and every `api.x(`
 * the guide shows is a method.
 */
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { createClient } from "edge-dedup/client";

const guide = readFileSync(new URL("../../../docs/guides/typed-client.md", import.meta.url), "utf8");

test("the guide shows every method of the typed client, and no other", () => {
  const methods = Object.keys(createClient({ baseUrl: "http://svc.test" })).sort();
  const shown = [...new Set([...guide.matchAll(/\bapi\.(\w+)\(/g)].map((m) => m[1]))].sort();
  expect(shown).toEqual(methods);
});
