/**
 * Where tests go (docs/design.md, "Where tests go"): test/<level>/<room>/<name>.test.ts,
 * where <level> is unit or integration and <room> is the folder of src/ whose
 * module (or promise) the file tests: src/stream/advisor → test/unit/stream/advisor/.
 * Only the rooms below have no src/ folder. No test sits at a level's root (that
 * holds the level's shared helpers only), and e2e stays flat, one file a scenario.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Rooms that are not a folder of src/, and what they test. */
const OTHER_ROOMS: Record<string, string> = {
  repo: "the repository itself: docs links, import rules, this layout",
  scripts: "scripts/ at the repository's root",
};

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** The rule's complaints about test files (paths relative to the repository, with "/"). */
export function misplaced(files: readonly string[], isSrcFolder: (room: string) => boolean): string[] {
  const wrong: string[] = [];
  for (const file of files) {
    if (!file.endsWith(".test.ts")) continue;
    const parts = file.split("/");
    const [top, level] = parts;
    if (top !== "test") continue;
    const room = parts.slice(2, -1).join("/");
    if (level === "e2e") {
      if (room !== "") wrong.push(`${file}: e2e tests stay flat in test/e2e/`);
    } else if (level === "unit" || level === "integration") {
      if (room === "") wrong.push(`${file}: no test directly in test/${level}/; put it in its room`);
      else if (!isSrcFolder(room) && !(room in OTHER_ROOMS))
        wrong.push(`${file}: test/${level}/${room}/ is no folder of src/ (src/${room}/) nor a listed room`);
    }
  }
  return wrong;
}

const isSrcFolder = (room: string) => existsSync(join(ROOT, "src", room)) && statSync(join(ROOT, "src", room)).isDirectory();

describe("where tests go", () => {
  test("every test file is in its level's room", () => {
    const files = walk(join(ROOT, "test")).map((f) => relative(ROOT, f).split(sep).join("/"));
    expect(files.filter((f) => f.endsWith(".test.ts")).length).toBeGreaterThan(100);
    expect(misplaced(files, isSrcFolder)).toEqual([]);
  });

  test("the rule refuses a test at a level's root, in a made-up room, or in an e2e subfolder", () => {
    const src = (room: string) => ["stream", "stream/advisor", "lib"].includes(room);
    expect(
      misplaced(
        [
          "test/unit/stream/dedup.test.ts",
          "test/unit/stream/advisor/sketch.test.ts",
          "test/integration/lib/x.test.ts",
          "test/unit/repo/docs-links.test.ts",
          "test/unit/model.ts",
          "test/e2e/restart.test.ts",
          "test/unit/dedup.test.ts",
          "test/integration/advisor/x.test.ts",
          "test/e2e/more/x.test.ts",
        ],
        src,
      ),
    ).toEqual([
      "test/unit/dedup.test.ts: no test directly in test/unit/; put it in its room",
      "test/integration/advisor/x.test.ts: test/integration/advisor/ is no folder of src/ (src/advisor/) nor a listed room",
      "test/e2e/more/x.test.ts: e2e tests stay flat in test/e2e/",
    ]);
  });

  test("each listed room has tests, and scripts/ mirrors the root's scripts/", () => {
    for (const room of Object.keys(OTHER_ROOMS)) expect(existsSync(join(ROOT, "test/unit", room))).toBe(true);
    expect(existsSync(join(ROOT, "scripts"))).toBe(true);
  });
});
