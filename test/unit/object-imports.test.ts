/**
 * The Durable Object classes' modules are imported by src/index.ts (which
 * exports the classes) and src/env.ts (the typed stubs) only: callers take the
 * RPC types from src/coordinator/protocol.ts and src/partition/protocol.ts and
 * the stubs from src/env.ts, so a change inside a Durable Object never reaches
 * them through an import (issue 16).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OBJECTS = ["src/coordinator/coordinator.ts", "src/partition/partition.ts", "src/sources/files/runner.ts", "src/registry/registry.ts", "src/delivery/destination.ts"];
const ALLOWED = new Set(["src/index.ts", "src/env.ts"]);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : name.endsWith(".ts") ? [path] : [];
  });
}

/** Every `from "./…"` of a file, resolved to a path from the root. */
export function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(/\bfrom\s+["'](\.[^"']+)["']/g)].map((m) => {
    const target = normalize(join(dirname(file), m[1])).replace(/\.js$/, "");
    return target.endsWith(".ts") ? target : `${target}.ts`;
  });
}

test("only src/index.ts and src/env.ts import the Durable Object modules", () => {
  const importers: Record<string, string[]> = {};
  for (const path of walk(join(ROOT, "src"))) {
    const file = relative(ROOT, path);
    for (const target of importsOf(file, readFileSync(path, "utf8"))) {
      if (OBJECTS.includes(target) && !ALLOWED.has(file)) (importers[target] ??= []).push(file);
    }
  }
  expect(importers).toEqual({});
});

test("the check sees an import of a Durable Object module", () => {
  expect(importsOf("src/api/x.ts", 'import type { Coordinator } from "../coordinator/coordinator";\nimport { a } from "./b.js";')).toEqual(["src/coordinator/coordinator.ts", "src/api/b.ts"]);
});
