/**
 * The code layout's rules (docs/design.md, "Code layout"), read from the
 * source: no file in src/ over 400 lines, every Durable Object class a thin
 * shell (no SQL in it; the Coordinator at most 200 lines, the others 250),
 * and no two folders of src/ that import each other.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(__dirname, "../../../src");

function sources(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.ts$/.test(name) && !name.endsWith(".generated.ts") ? [path] : [];
  });
}

const lines = (text: string) => text.split("\n").length - (text.endsWith("\n") ? 1 : 0);

/** The Durable Object classes: each `class X extends SqliteObject` with its body's text and line count. */
export function objectClasses(file: string, text: string): { name: string; file: string; lines: number; body: string }[] {
  const out: { name: string; file: string; lines: number; body: string }[] = [];
  for (const m of text.matchAll(/^export class (\w+) extends SqliteObject<[^>]*>[^{]*\{$/gm)) {
    const start = m.index!;
    const end = text.indexOf("\n}\n", start);
    const body = text.slice(start, end === -1 ? text.length : end + 2);
    out.push({ name: m[1], file: relative(SRC, file), lines: lines(body), body });
  }
  return out;
}

/** SQL statements written in the text (a statement's keywords at the start of a string). */
export const hasSql = (text: string) => /\.exec\s*[<(]|["'`]\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH)\s/i.test(text);

/** The folder of src/ a module is in (null: src/ itself). */
const folderOf = (file: string) => {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : null;
};

/** Pairs of folders of src/ whose modules import each other's, with one import each way. */
export function mutualFolders(files: readonly { file: string; text: string }[]): string[] {
  const edges = new Map<string, string>();
  for (const { file, text } of files) {
    for (const m of text.matchAll(/\bfrom\s+"(\.{1,2}\/[^"]+)"/g)) {
      let target = resolve(dirname(file), m[1]);
      try {
        if (statSync(target).isDirectory()) target = join(target, "index.ts");
      } catch {
        // a module path without its extension
      }
      const a = folderOf(file);
      const b = folderOf(target);
      if (a !== null && b !== null && a !== b && !edges.has(`${a}>${b}`)) edges.set(`${a}>${b}`, `${relative(SRC, file)} imports ${m[1]}`);
    }
  }
  const pairs: string[] = [];
  for (const [edge, why] of edges) {
    const [a, b] = edge.split(">");
    if (a < b && edges.has(`${b}>${a}`)) pairs.push(`${a} <-> ${b}: ${why}; ${edges.get(`${b}>${a}`)}`);
  }
  return pairs;
}

const files = sources().map((file) => ({ file, text: readFileSync(file, "utf8") }));

describe("the code layout", () => {
  it("no file in src/ is over 400 lines", () => {
    const long = files.filter((f) => lines(f.text) > 400).map((f) => `${relative(SRC, f.file)}: ${lines(f.text)}`);
    expect(long).toEqual([]);
  });

  it("each Durable Object class is a thin shell: no SQL, the Coordinator at most 200 lines, the others 250", () => {
    const classes = files.flatMap((f) => objectClasses(f.file, f.text));
    expect(classes.map((c) => c.name).sort()).toEqual(["Clock", "Coordinator", "Destination", "Partition", "Registry", "Runner"]);
    for (const c of classes) {
      expect(hasSql(c.body), `${c.name} (${c.file}) has SQL`).toBe(false);
      expect(c.lines, `${c.name} (${c.file})`).toBeLessThanOrEqual(c.name === "Coordinator" ? 200 : 250);
    }
  });

  it("no two folders of src/ import each other", () => {
    expect(mutualFolders(files)).toEqual([]);
  });

  it("the checks see what they look for", () => {
    const shell = 'export class Big extends SqliteObject<Env> implements X {\n  a(): void {\n    this.sql.exec("SELECT 1");\n  }\n}\n';
    const [big] = objectClasses("src/x/big.ts", shell);
    expect(big).toMatchObject({ name: "Big", lines: 5 });
    expect(hasSql(big.body)).toBe(true);
    expect(hasSql("  read(): number {\n    return this.store.count();\n  }")).toBe(false);
    const a = join(SRC, "api", "x.ts");
    const b = join(SRC, "coordinator", "y.ts");
    expect(
      mutualFolders([
        { file: a, text: 'import { y } from "../coordinator/y";' },
        { file: b, text: 'import { x } from "../api/x";' },
      ]),
    ).toHaveLength(1);
    expect(mutualFolders([{ file: a, text: 'import { y } from "../coordinator/y";' }])).toEqual([]);
  });
});
