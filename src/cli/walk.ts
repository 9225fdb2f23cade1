/**
 * Which files a run sends: folders are walked recursively in a fixed order
 * (names compared by code unit, not by locale), so two runs over the same tree
 * see the same files in the same order and name them the same way. What it
 * does with each name is ./names.ts's; every file it does not send is in
 * `skipped`, with why (nothing is left out silently).
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import { basename, join, relative, resolve, sep } from "node:path";
import { classifyName, sparkBookkeeping } from "./names.ts";
import type { FileMode } from "../sources/file-kind.ts";

export type InputKind = FileMode;

export interface InputFile {
  /** where it is on disk */
  abs: string;
  /**
   * Its name in batch ids and in the summary: the path below the folder that
   * was given (POSIX separators), or the file's own name when a file was given.
   */
  rel: string;
  kind: InputKind;
  /** gzipped (`.gz`): decompressed before it is read */
  gzip: boolean;
}

export interface SkippedFile {
  /** as InputFile.rel; a folder's ends in "/" */
  rel: string;
  reason: string;
  /** present (true) when it looks like data this command cannot read: the run fails */
  data?: true;
  /** a folder skipped whole: how many files it holds */
  files?: number;
}

export interface WalkResult {
  files: InputFile[];
  skipped: SkippedFile[];
}

export class UsageError extends Error {}

export function kindOf(name: string): InputKind | undefined {
  const v = classifyName(name);
  return v.kind === "read" ? v.mode : undefined;
}

const skip = (rel: string, reason: string, data: boolean, files?: number): SkippedFile => ({
  rel,
  reason,
  ...(data ? { data: true as const } : {}),
  ...(files === undefined ? {} : { files }),
});

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
    const v = classifyName(basename(rel));
    if (v.kind === "read") files.push({ abs, rel, kind: v.mode, gzip: v.gzip });
    else skipped.push(skip(rel, v.reason, v.data));
  };
  const walk: Walker = { add, skip: (k) => skipped.push(k) };

  for (const given of paths) {
    const root = resolve(given);
    let st;
    try {
      st = statSync(root);
    } catch {
      throw new UsageError(`no such file or folder: ${given}`);
    }
    if (st.isDirectory()) {
      walkDir(root, root, new Set([realpathSync(root)]), walk);
    } else if (st.isFile()) {
      add(realpathSync(root), basename(root));
    } else {
      throw new UsageError(`not a file or folder: ${given}`);
    }
  }
  return { files, skipped };
}

interface Walker {
  add(abs: string, rel: string): void;
  skip(k: SkippedFile): void;
}

/**
 * The names Spark leaves out of a listing (./names.ts) are skipped below a
 * folder given, not when named: a file or folder you name is yours to send.
 */
function walkDir(root: string, dir: string, visiting: Set<string>, walk: Walker): void {
  const names = readdirSync(dir).sort(byCodeUnit);
  for (const name of names) {
    const abs = join(dir, name);
    const rel = relative(root, abs).split(sep).join("/");
    const bookkeeping = sparkBookkeeping(name);
    let st;
    try {
      st = statSync(abs); // follows symlinks
    } catch {
      const v = classifyName(name);
      walk.skip(skip(rel, bookkeeping ?? "a broken symbolic link", bookkeeping === null && (v.kind === "read" || v.data)));
      continue;
    }
    if (st.isDirectory()) {
      const real = realpathSync(abs);
      if (visiting.has(real)) continue; // a symlink back up the tree: its files are walked already
      if (bookkeeping !== null) {
        walk.skip(skip(`${rel}/`, bookkeeping, false, countFiles(abs, new Set([...visiting, real]))));
        continue;
      }
      visiting.add(real);
      walkDir(root, abs, visiting, walk);
      visiting.delete(real);
    } else if (bookkeeping !== null) {
      walk.skip(skip(rel, bookkeeping, false));
    } else if (st.isFile()) {
      walk.add(realpathSync(abs), rel);
    } else {
      const v = classifyName(name);
      walk.skip(skip(rel, "not a regular file", v.kind === "read" || v.data));
    }
  }
}

/** The files below a folder skipped whole (counted, not read). */
function countFiles(dir: string, visiting: Set<string>): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const abs = join(dir, name);
    let st;
    try {
      st = statSync(abs);
    } catch {
      n++; // a broken link is still an entry skipped
      continue;
    }
    if (st.isDirectory()) {
      const real = realpathSync(abs);
      if (visiting.has(real)) continue;
      visiting.add(real);
      n += countFiles(abs, visiting);
    } else n++;
  }
  return n;
}
