/**
 * Which files a run sends: folders are walked recursively in a fixed order
 * (names compared by code unit, not by locale), so two runs over the same tree
 * see the same files in the same order and name them the same way.
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import { basename, extname, join, relative, resolve, sep } from "node:path";

export type InputKind = "json" | "ndjson";

export interface InputFile {
  /** where it is on disk */
  abs: string;
  /**
   * Its name in batch ids and in the summary: the path below the folder that
   * was given (POSIX separators), or the file's own name when a file was given.
   */
  rel: string;
  kind: InputKind;
}

export interface SkippedFile {
  rel: string;
  reason: string;
}

export interface WalkResult {
  files: InputFile[];
  skipped: SkippedFile[];
}

export class UsageError extends Error {}

const KINDS: Record<string, InputKind> = { ".json": "json", ".ndjson": "ndjson", ".jsonl": "ndjson" };

export function kindOf(name: string): InputKind | undefined {
  return KINDS[extname(name).toLowerCase()];
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function walkInputs(paths: readonly string[]): WalkResult {
  const files: InputFile[] = [];
  const skipped: SkippedFile[] = [];
  /** rel → abs: two different files must not share a name, or they would share batch ids */
  const names = new Map<string, string>();
  const sent = new Set<string>();

  const add = (abs: string, rel: string) => {
    if (sent.has(abs)) return; // the same file reached twice (named twice, or through a symlink): once is enough
    const seen = names.get(rel);
    if (seen !== undefined) {
      throw new UsageError(`two files would be sent under the same name "${rel}": ${seen} and ${abs}; pass their common parent folder instead`);
    }
    names.set(rel, abs);
    sent.add(abs);
    const kind = kindOf(rel);
    if (kind) files.push({ abs, rel, kind });
    else skipped.push({ rel, reason: "not .json, .ndjson or .jsonl" });
  };

  for (const given of paths) {
    const root = resolve(given);
    let st;
    try {
      st = statSync(root);
    } catch {
      throw new UsageError(`no such file or folder: ${given}`);
    }
    if (st.isDirectory()) {
      walkDir(root, root, new Set([realpathSync(root)]), add);
    } else if (st.isFile()) {
      add(realpathSync(root), basename(root));
    } else {
      throw new UsageError(`not a file or folder: ${given}`);
    }
  }
  return { files, skipped };
}

function walkDir(root: string, dir: string, visiting: Set<string>, add: (abs: string, rel: string) => void): void {
  const names = readdirSync(dir).sort(byCodeUnit);
  for (const name of names) {
    const abs = join(dir, name);
    let st;
    try {
      st = statSync(abs); // follows symlinks
    } catch {
      continue; // a dangling symlink
    }
    if (st.isDirectory()) {
      const real = realpathSync(abs);
      if (visiting.has(real)) continue; // a symlink back up the tree
      visiting.add(real);
      walkDir(root, abs, visiting, add);
      visiting.delete(real);
    } else if (st.isFile()) {
      add(realpathSync(abs), relative(root, abs).split(sep).join("/"));
    }
  }
}
