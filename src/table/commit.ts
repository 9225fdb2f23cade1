import { keyOf, METADATA_VERSION_PREFIX, metadataPath, uriOf, VERSION_HINT_PATH, versionOfKey } from "./layout";
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
  if (text === null) {
    // No hint, or a hint without its version: the newest version listed (expiry deletes the oldest, so v1 may be gone).
    version = await newestListedVersion(store, stream);
    text = version > 0 ? await getText(store, keyOf(stream, metadataPath(version))) : null;
    if (text === null) version = 0;
  }
  for (;;) {
    const next = await getText(store, keyOf(stream, metadataPath(version + 1)));
    if (next === null) break;
    version += 1;
    text = next;
  }
  return text === null ? null : { version, table: JSON.parse(text) as TableMetadata };
}

/** The highest N of the `metadata/vN.metadata.json` objects there are (0: none). */
export async function newestListedVersion(store: TableStore, stream: string): Promise<number> {
  let newest = 0;
  for (const key of await store.list(keyOf(stream, METADATA_VERSION_PREFIX))) {
    const n = versionOfKey(key);
    if (n !== null && n > newest) newest = n;
  }
  return newest;
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
