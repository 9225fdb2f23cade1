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
    const root = tree("t1", ["b.json", "a/z.ndjson", "a/B.jsonl", "A.JSON", "notes.txt", "a/deep/x.json", "a-b.json", "-first.json"]);
    const { files, skipped } = walkInputs([root]);
    expect(files.map((f) => f.rel)).toEqual(["-first.json", "A.JSON", "a/B.jsonl", "a/deep/x.json", "a/z.ndjson", "a-b.json", "b.json"]);
    expect(files.map((f) => f.kind)).toEqual(["json", "json", "ndjson", "json", "ndjson", "json", "json"]);
    expect(skipped).toEqual([{ rel: "notes.txt", reason: "not .json, .ndjson or .jsonl" }]);
    expect(files[0].abs).toBe(join(root, "-first.json"));
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

describe("walkInputs over what Spark writes", () => {
  test("reads part files gzipped or not; skips and lists Spark's bookkeeping (a folder once, with its count); data it cannot read is flagged", () => {
    const root = tree("spark", [
      "part-00000-a-c000.json.gz",
      "part-00001-a-c000.json",
      ".part-00000-a-c000.json.gz.crc",
      "_SUCCESS",
      "_spark_metadata/0",
      "_spark_metadata/1",
      "_spark_metadata/deep/2.compact",
      "day=1/part-00002-a-c000.jsonl.gz",
      "_col=x/part-00003-a-c000.ndjson",
      "part-00004-a-c000.json.bz2",
      "README.md",
    ]);
    const { files, skipped } = walkInputs([root]);
    expect(files.map((f) => [f.rel, f.kind, f.gzip])).toEqual([
      ["_col=x/part-00003-a-c000.ndjson", "ndjson", false],
      ["day=1/part-00002-a-c000.jsonl.gz", "ndjson", true],
      ["part-00000-a-c000.json.gz", "json", true],
      ["part-00001-a-c000.json", "json", false],
    ]);
    expect(skipped).toEqual([
      { rel: ".part-00000-a-c000.json.gz.crc", reason: 'Spark bookkeeping: the name starts with "."' },
      { rel: "README.md", reason: "not .json, .ndjson or .jsonl" },
      { rel: "_SUCCESS", reason: 'Spark bookkeeping: the name starts with "_"' },
      { rel: "_spark_metadata/", reason: 'Spark bookkeeping: the name starts with "_"', files: 3 },
      { rel: "part-00004-a-c000.json.bz2", reason: ".json compressed as .bz2: only gzip (.gz) is read", data: true },
    ]);
  });

  test("a file or folder named on the command line is walked whatever its name; a broken link is listed, as data when named so", () => {
    const root = tree("named", [".staging/a.json", "_b.json"]);
    expect(walkInputs([join(root, ".staging"), join(root, "_b.json")]).files.map((f) => f.rel)).toEqual(["a.json", "_b.json"]);
    symlinkSync(join(root, "gone.json"), join(root, "link.json"));
    symlinkSync(join(root, "gone.txt"), join(root, "link.txt"));
    expect(walkInputs([root]).skipped).toEqual([
      { rel: ".staging/", reason: 'Spark bookkeeping: the name starts with "."', files: 1 },
      { rel: "_b.json", reason: 'Spark bookkeeping: the name starts with "_"' },
      { rel: "link.json", reason: "a broken symbolic link", data: true },
      { rel: "link.txt", reason: "a broken symbolic link" },
    ]);
  });
});
