/**
 * The docs can't drift: every relative link in README.md and docs/**\/*.md
 * points at a file that exists (and, with a `#fragment`, at a heading of it,
 * GitHub-style slugs); every problem `type` slug the code emits has its own
 * section in docs/reference/errors.md; and every shell block of the
 * walk-through is run, verbatim, by scripts/walkthrough.sh.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : name.endsWith(".md") ? [path] : [];
  });
}

const files = [join(ROOT, "README.md"), ...walk(join(ROOT, "docs"))];

/** Lines outside fenced code blocks. */
function prose(text: string): string[] {
  let fence = false;
  return text.split("\n").filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      return false;
    }
    return !fence;
  });
}

/** GitHub's heading anchor: lowercase, punctuation dropped, spaces to hyphens; repeats get -1, -2… */
export function slug(heading: string): string {
  return heading
    .replace(/`/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

const anchorCache = new Map<string, Set<string>>();
function anchors(file: string): Set<string> {
  let set = anchorCache.get(file);
  if (set) return set;
  set = new Set();
  const seen = new Map<string, number>();
  for (const line of prose(readFileSync(file, "utf8"))) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    set.add(n === 0 ? base : `${base}-${n}`);
  }
  anchorCache.set(file, set);
  return set;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

function links(file: string): Link[] {
  const out: Link[] = [];
  const text = readFileSync(file, "utf8");
  let fence = false;
  text.split("\n").forEach((raw, i) => {
    if (/^\s*(```|~~~)/.test(raw)) {
      fence = !fence;
      return;
    }
    if (fence) return;
    const line = raw.replace(/`[^`]*`/g, "``"); // links inside inline code are not links
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      out.push({ file, line: i + 1, target: m[1]! });
    }
  });
  return out;
}

describe("docs links", () => {
  test("there are docs to check", () => {
    expect(files.length).toBeGreaterThan(15);
  });

  for (const file of files) {
    const name = relative(ROOT, file);
    test(`${name}: relative links resolve`, () => {
      const broken: string[] = [];
      for (const link of links(file)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) continue; // http:, https:, mailto:
        const [path, fragment] = link.target.split("#", 2) as [string, string | undefined];
        const target = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
        const rel = relative(ROOT, target);
        if (!existsSync(target)) {
          broken.push(`${name}:${link.line}: ${link.target} (no file ${rel})`);
          continue;
        }
        if (fragment !== undefined && target.endsWith(".md") && !anchors(target).has(fragment)) {
          broken.push(`${name}:${link.line}: ${link.target} (no heading #${fragment} in ${rel})`);
        }
      }
      expect(broken).toEqual([]);
    });
  }

  test("slugs follow GitHub's rules", () => {
    expect(slug("Sources: files in R2 and queues")).toBe("sources-files-in-r2-and-queues");
    expect(slug("Table output (Apache Iceberg)")).toBe("table-output-apache-iceberg");
    expect(slug("Watching it: `wrangler tail`")).toBe("watching-it-wrangler-tail");
    expect(slug("batch-in-flight")).toBe("batch-in-flight");
  });
});

describe("errors reference", () => {
  /** Every problem type slug in src: HttpError constructions, conflict(slug, …), and the helpers of problem.ts. */
  function slugsInSource(): Set<string> {
    const found = new Set<string>();
    const walkTs = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) => {
        const p = join(dir, n);
        return statSync(p).isDirectory() ? walkTs(p) : p.endsWith(".ts") ? [p] : [];
      });
    for (const file of walkTs(join(ROOT, "src"))) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/new HttpError\(\s*\d+\s*,\s*"([a-z0-9-]+)"/g)) found.add(m[1]!);
      for (const m of text.matchAll(/\bconflict\(\s*"([a-z0-9-]+)"/g)) found.add(m[1]!);
    }
    return found;
  }

  test("every problem type the code emits has a section in docs/reference/errors.md", () => {
    const slugs = slugsInSource();
    expect(slugs.size).toBeGreaterThan(10);
    const sections = anchors(join(ROOT, "docs/reference/errors.md"));
    expect([...slugs].filter((s) => !sections.has(s)).sort()).toEqual([]);
  });
});

describe("walk-through", () => {
  test("scripts/walkthrough.sh runs every shell block of docs/walkthrough.md verbatim, in order", () => {
    const md = readFileSync(join(ROOT, "docs/walkthrough.md"), "utf8");
    const script = readFileSync(join(ROOT, "scripts/walkthrough.sh"), "utf8");
    const blocks = [...md.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.trimEnd());
    expect(blocks.length).toBeGreaterThan(10);
    let from = 0;
    for (const block of blocks) {
      const at = script.indexOf(block, from);
      expect(at, `not in scripts/walkthrough.sh (after offset ${from}):\n${block}`).toBeGreaterThanOrEqual(0);
      from = at + block.length;
    }
  });

  test("the README's first request is in scripts/walkthrough.sh too", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const script = readFileSync(join(ROOT, "scripts/walkthrough.sh"), "utf8");
    const first = /### A first request[\s\S]*?```sh\n([\s\S]*?)^```$/m.exec(readme);
    expect(first).not.toBeNull();
    const commands = first![1]!
      .split("\n")
      .filter((l) => l.trim() !== "" && !l.startsWith("#"))
      .join("\n");
    expect(script).toContain(commands);
  });
});
