import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { kindOf, UsageError, walkInputs } from "../../../src/cli/walk.ts";

const base = mkdtempSync(join(tmpdir(), "edge-dedup-walk-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function tree(name: string, files: string[]): string {
  const root = join(base, name);
  for (const f of files) {
    mkdirSync(join(root, f, ".."), { recursive: true });
    writeFileSync(join(root, f), "[]");
  }
  return root;
}

describe("walkInputs", () => {
  test("recursive, each folder's names in code-unit order, paths relative to the folder given; other files skipped", () => {
    const root = tree("t1", ["b.json", "a/z.ndjson", "a/B.jsonl", "A.JSON", "notes.txt", "a/deep/x.json", "a-b.json", ".hidden.json"]);
    const { files, skipped } = walkInputs([root]);
    expect(files.map((f) => f.rel)).toEqual([".hidden.json", "A.JSON", "a/B.jsonl", "a/deep/x.json", "a/z.ndjson", "a-b.json", "b.json"]);
    expect(files.map((f) => f.kind)).toEqual(["json", "json", "ndjson", "json", "ndjson", "json", "json"]);
    expect(skipped).toEqual([{ rel: "notes.txt", reason: "not .json, .ndjson or .jsonl" }]);
    expect(files[0].abs).toBe(join(root, ".hidden.json"));
  });

  test("stable: the same tree walks the same way from anywhere", () => {
    const root = tree("t2", ["c.json", "a/b.json", "a/a.ndjson"]);
    const cwd = process.cwd();
    try {
      process.chdir(root);
      expect(walkInputs(["."]).files).toEqual(walkInputs([root]).files);
    } finally {
      process.chdir(cwd);
    }
  });

  test("a file given is named by its own name; arguments keep their order; a file reached twice is sent once", () => {
    const root = tree("t3", ["x/one.json", "two.ndjson"]);
    const { files } = walkInputs([join(root, "two.ndjson"), join(root, "x"), join(root, "x", "one.json")]);
    expect(files.map((f) => f.rel)).toEqual(["two.ndjson", "one.json"]);
  });

  test("two different files under one name are refused (they would share batch ids)", () => {
    const root = tree("t4", ["p/a.json", "q/a.json"]);
    expect(() => walkInputs([join(root, "p"), join(root, "q")])).toThrow(UsageError);
  });

  test("a missing path is a usage error; a symlink loop is walked once", () => {
    expect(() => walkInputs([join(base, "nope")])).toThrow(/no such file or folder/);
    const root = tree("t5", ["d/a.json"]);
    symlinkSync(root, join(root, "d", "loop"));
    expect(walkInputs([root]).files.map((f) => f.rel)).toEqual(["d/a.json"]);
  });

  test("kinds by extension, any case", () => {
    expect(["a.json", "a.JSONL", "a.ndjson", "a.txt", "json"].map(kindOf)).toEqual(["json", "ndjson", "ndjson", undefined, undefined]);
  });
});
