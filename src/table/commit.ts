import { keyOf, metadataPath, uriOf, VERSION_HINT_PATH } from "./layout";
import type { TableMetadata } from "./metadata";
import { getText, type TableStore } from "./store";

/**
 * The table's catalog is its metadata folder (Iceberg's file-system tables):
 * version N is `vN.metadata.json`, created only if absent, so of two writers
 * committing on version N exactly one creates N+1. `version-hint.text` is
 * written after and may lag (a crash in between, or a slower writer's older
 * hint landing last), so the current version is the hint's, then probed
 * forward until a version is missing.
 */
/** How many times a writer re-reads and tries again after losing a commit race before it gives up. */
export const MAX_COMMIT_ATTEMPTS = 8;

export interface LoadedTable {
  version: number;
  table: TableMetadata;
}

export async function loadTable(store: TableStore, stream: string): Promise<LoadedTable | null> {
  const hint = Number.parseInt((await getText(store, keyOf(stream, VERSION_HINT_PATH))) ?? "0", 10);
  let version = Number.isSafeInteger(hint) && hint > 0 ? hint : 0;
  let text = version > 0 ? await getText(store, keyOf(stream, metadataPath(version))) : null;
  if (version > 0 && text === null) version = 0; // a hint without its version: trust only what exists
  for (;;) {
    const next = await getText(store, keyOf(stream, metadataPath(version + 1)));
    if (next === null) break;
    version += 1;
    text = next;
  }
  return text === null ? null : { version, table: JSON.parse(text) as TableMetadata };
}

export function metadataLocation(table: TableMetadata, version: number): string {
  return uriOf(table.location, metadataPath(version));
}

/**
 * Commits `table` as version `version`: false when another writer got there
 * first (nothing written; the caller re-reads and retries or skips).
 */
export async function commitVersion(store: TableStore, stream: string, version: number, table: TableMetadata): Promise<boolean> {
  const won = await store.put(keyOf(stream, metadataPath(version)), JSON.stringify(table, null, 2), { createOnly: true });
  if (won) await store.put(keyOf(stream, VERSION_HINT_PATH), String(version));
  return won;
}
