/**
 * The dashboard's browser script (src/dashboard/client, typed against the DOM)
 * and the Worker (typed against workers-types) are separate programs: an import
 * across would put one's files in the other's tsconfig, whatever its exclude says.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const SRC = join(ROOT, "src");
const CLIENT = join(SRC, "dashboard/client");

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** The files a module imports by relative path, resolved. */
function relativeImports(file: string): string[] {
  const specs = [...readFileSync(file, "utf8").matchAll(/\bfrom\s+"(\.{1,2}\/[^"]+)"|\bimport\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g)];
  return specs.map((m) => resolve(dirname(file), m[1] ?? m[2]));
}

const inClient = (path: string) => path === CLIENT || path.startsWith(`${CLIENT}/`);

test("no Worker module imports the browser script's sources", () => {
  const crossing = tsFiles(SRC)
    .filter((f) => !inClient(f))
    .flatMap((f) =>
      relativeImports(f)
        .filter(inClient)
        .map((to) => `${relative(ROOT, f)} -> ${relative(ROOT, to)}`),
    );
  expect(crossing).toEqual([]);
});

test("the browser script imports nothing outside src/dashboard/client", () => {
  const files = tsFiles(CLIENT);
  expect(files.length).toBeGreaterThan(10);
  const crossing = files.flatMap((f) =>
    relativeImports(f)
      .filter((to) => !inClient(to))
      .map((to) => `${relative(ROOT, f)} -> ${relative(ROOT, to)}`),
  );
  expect(crossing).toEqual([]);
  // and no package either: what it runs is what is in the bundle, from this folder
  const packages = files.flatMap((f) => [...readFileSync(f, "utf8").matchAll(/\bfrom\s+"([^."][^"]*)"/g)].map((m) => `${relative(ROOT, f)}: ${m[1]}`));
  expect(packages).toEqual([]);
});
