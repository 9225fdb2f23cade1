/**
 * The Durable Object classes' modules are imported by src/index.ts (which
 * exports the classes) only: callers take the RPC types, and the stubs' types,
 * from each object's protocol module (src/coordinator/protocol.ts,
 * src/partition/protocol.ts, …) and the stubs from src/env.ts, so a change
 * inside a Durable Object never reaches them through an import, and no import
 * cycle runs through the bindings (issue 16).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const OBJECTS = [
  "src/coordinator/coordinator.ts",
  "src/partition/partition.ts",
  "src/sources/files/runner.ts",
  "src/registry/registry.ts",
  "src/delivery/destination.ts",
];
const ALLOWED = new Set(["src/index.ts"]);

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
    if (target.endsWith(".ts")) return target;
    // A folder's import ("./routes") is its index.ts.
    return !existsSync(join(ROOT, `${target}.ts`)) && existsSync(join(ROOT, target, "index.ts")) ? join(target, "index.ts") : `${target}.ts`;
  });
}

test("only src/index.ts imports the Durable Object modules", () => {
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
  expect(importsOf("src/api/x.ts", 'import type { Coordinator } from "../coordinator/coordinator";\nimport { a } from "./b.js";')).toEqual([
    "src/coordinator/coordinator.ts",
    "src/api/b.ts",
  ]);
});

/** The import graph's cycles (strongly connected components of more than one file), each as its files. */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) out.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

test("src/ has no import cycle (type imports count: the layers read one way)", () => {
  const graph = new Map<string, string[]>();
  for (const path of walk(join(ROOT, "src"))) {
    const file = relative(ROOT, path);
    graph.set(file, importsOf(file, readFileSync(path, "utf8")));
  }
  expect(cyclesOf(graph)).toEqual([]);
});

test("the cycle check sees a cycle", () => {
  const g = new Map([
    ["a", ["b"]],
    ["b", ["c"]],
    ["c", ["a"]],
    ["d", ["a"]],
  ]);
  expect(cyclesOf(g)).toEqual([["a", "b", "c"]]);
});
