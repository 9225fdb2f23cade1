import { describe, expect, test } from "vitest";
import { classifyName, sparkBookkeeping } from "../../../src/cli/names.ts";
import { fileMode, isGzip } from "../../../src/sources/file-kind";

const verdicts = (names: string[]) => Object.fromEntries(names.map((n) => [n, classifyName(n)]));

describe("classifyName: what `send` does with a file it finds", () => {
  test("reads what the service's file runs read, gzipped or not, any case", () => {
    expect(verdicts(["a.json", "a.JSON.GZ", "part-00000-x-c000.json.gz", "a.ndjson.gz", "a.jsonl", "a.JSONL.gz"])).toEqual({
      "a.json": { kind: "read", mode: "json", gzip: false },
      "a.JSON.GZ": { kind: "read", mode: "json", gzip: true },
      "part-00000-x-c000.json.gz": { kind: "read", mode: "json", gzip: true },
      "a.ndjson.gz": { kind: "read", mode: "ndjson", gzip: true },
      "a.jsonl": { kind: "read", mode: "ndjson", gzip: false },
      "a.JSONL.gz": { kind: "read", mode: "ndjson", gzip: true },
    });
  });

  test("the same rule as the server's, not a copy of it: every name read by one is read by the other, the same way", () => {
    const names = ["a.json", "a.json.gz", "a.gz", "a.json.bz2", "a.ndjson", "x.jsonl.GZ", "json", ".json", "a.json.gz.crc", "a.txt", "a.JSON", "a.jsonl.zst"];
    for (const n of names) {
      const v = classifyName(n);
      const server = fileMode(n);
      expect(v.kind === "read" ? { mode: v.mode, gzip: v.gzip } : null, n).toEqual(server === null ? null : { mode: server, gzip: isGzip(n) });
    }
  });

  test("data it cannot read (another compression, a part file of another format) fails the run; other files do not", () => {
    expect(verdicts(["part-00000.json.bz2", "a.jsonl.zst", "a.ndjson.Snappy", "part-00000-x-c000.csv", "part-r-00001", "part-00000-x.snappy.parquet"])).toEqual(
      {
        "part-00000.json.bz2": { kind: "skip", reason: ".json compressed as .bz2: only gzip (.gz) is read", data: true },
        "a.jsonl.zst": { kind: "skip", reason: ".jsonl compressed as .zst: only gzip (.gz) is read", data: true },
        "a.ndjson.Snappy": { kind: "skip", reason: ".ndjson compressed as .Snappy: only gzip (.gz) is read", data: true },
        "part-00000-x-c000.csv": { kind: "skip", reason: "a part file that is not .json, .ndjson or .jsonl (optionally .gz)", data: true },
        "part-r-00001": { kind: "skip", reason: "a part file that is not .json, .ndjson or .jsonl (optionally .gz)", data: true },
        "part-00000-x.snappy.parquet": { kind: "skip", reason: "a part file that is not .json, .ndjson or .jsonl (optionally .gz)", data: true },
      },
    );
    for (const n of ["README.md", "manifest.csv", "a.json.bak", "partition.txt", "notes"]) {
      expect(classifyName(n), n).toEqual({ kind: "skip", reason: "not .json, .ndjson or .jsonl", data: false });
    }
  });

  test("Spark's bookkeeping names: a leading _ or . (not a partition folder's _col=v), a copy under way", () => {
    expect(["_SUCCESS", "_spark_metadata", ".part-00000.json.crc", ".DS_Store", "x.json._COPYING_"].map((n) => sparkBookkeeping(n) !== null)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(["_col=1", "part-00000.json", "a_b.json", "a.json"].map(sparkBookkeeping)).toEqual([null, null, null, null]);
    expect(sparkBookkeeping("_SUCCESS")).toBe('Spark bookkeeping: the name starts with "_"');
    expect(sparkBookkeeping(".part-0.crc")).toBe('Spark bookkeeping: the name starts with "."');
  });
});
