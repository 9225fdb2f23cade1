import { keyOf, keyOfUri, METADATA_VERSION_PREFIX, versionOfKey } from "./layout";
import { decodeManifest, decodeManifestList, STATUS } from "./manifest";
import { loadTable } from "./commit";
import type { Snapshot } from "./metadata";
import { getText, type TableStore } from "./store";

/**
 * Snapshot expiry's second half: deleting the files only expired snapshots
 * used. A commit that drops snapshots from the metadata (replaced more than
 * `retain` ago, or past the HISTORY_MAX newest) first writes a journal
 * naming them and when their files may go: `retain` after the newest of them
 * was replaced, so a reader that loaded any of them in the last `retain`
 * finishes first. A sweep takes the journals that are due and deletes what
 * their snapshots used (manifest lists, manifests, live data files) and no
 * snapshot still in the metadata or in a journal not yet due uses. Files
 * never return to a table once they leave it (data files are named by
 * commit sequence, manifests by commit id), so a file no kept snapshot uses
 * stays unused. A crash anywhere leaves at worst a journal to sweep again
 * (deleting a missing file is no error); a journal whose commit lost its
 * race names snapshots still in the metadata, which protects them. Files an
 * unfinished commit wrote are in no snapshot and so in no journal: a sweep
 * never touches them. The sweep also deletes the metadata versions older
 * than the metadata log's oldest entry once that entry was written `retain`
 * ago (every one of them was replaced by then; Java's
 * `write.metadata.delete-after-commit`): the log's versions stay, for time
 * travel, and the table's reader finds the newest by listing when its hint
 * is gone (src/table/commit.ts).
 */
export const EXPIRED_FOLDER = "metadata/expired/";

interface Journal {
  deleteAfter: number;
  snapshots: Pick<Snapshot, "snapshot-id" | "manifest-list">[];
}

/** Journals sort by when they are due: the time is the name's zero-padded head. */
const journalPath = (deleteAfter: number, commitId: string) => `${EXPIRED_FOLDER}${String(deleteAfter).padStart(15, "0")}-${commitId}.json`;
const dueOf = (key: string) => Number(key.slice(key.lastIndexOf("/") + 1).split("-")[0]);

/** Records that `dropped` leave the metadata with the commit `commitId` is about to make; their files may go at `deleteAfter`. */
export async function writeJournal(store: TableStore, stream: string, commitId: string, deleteAfter: number, dropped: readonly Snapshot[]): Promise<void> {
  const journal: Journal = { deleteAfter, snapshots: dropped.map((s) => ({ "snapshot-id": s["snapshot-id"], "manifest-list": s["manifest-list"] })) };
  await store.put(keyOf(stream, journalPath(deleteAfter, commitId)), JSON.stringify(journal));
}

export interface SweepResult {
  /** files deleted */
  deleted: number;
  /** journals swept */
  journals: number;
  /** metadata versions deleted */
  versions: number;
  /** when the next journal is due (null: none waits) */
  nextDue: number | null;
}

/** Deletes what the journals due at `now` free, and the metadata versions past the log (see above). */
export async function sweepExpired(store: TableStore, stream: string, now: number, retainMs: number): Promise<SweepResult> {
  const keys = await store.list(keyOf(stream, EXPIRED_FOLDER));
  const due = keys.filter((k) => dueOf(k) <= now);
  const waiting = keys.filter((k) => dueOf(k) > now);
  const nextDue = waiting.length > 0 ? dueOf(waiting[0]) : null;
  const loaded = due.length > 0 ? await loadTable(store, stream) : null;
  if (!loaded) return { deleted: 0, journals: 0, versions: 0, nextDue };
  const { location } = loaded.table;
  const journals = async (ks: string[]) =>
    (await Promise.all(ks.map(async (k) => JSON.parse((await getText(store, k)) ?? '{"snapshots":[]}') as Journal))).flatMap((j) => j.snapshots);
  const manifests = new Map<string, Promise<string[]>>();
  // What a snapshot uses: its list, its manifests, their live files; a file already gone (a sweep before) uses nothing.
  const uses = async (s: Pick<Snapshot, "manifest-list">): Promise<string[]> => {
    const list = await store.get(keyOfUri(stream, location, s["manifest-list"]));
    if (list === null) return [];
    const files = await Promise.all(
      decodeManifestList(list).map((m) => {
        if (!manifests.has(m.path)) {
          manifests.set(
            m.path,
            store
              .get(keyOfUri(stream, location, m.path))
              .then((bytes) => (bytes === null ? [] : [m.path, ...decodeManifest(bytes, m).flatMap((e) => (e.status === STATUS.deleted ? [] : [e.path]))])),
          );
        }
        return manifests.get(m.path)!;
      }),
    );
    return [s["manifest-list"], ...files.flat()];
  };
  const kept = [...loaded.table.snapshots, ...(await journals(waiting))];
  const used = new Set((await Promise.all(kept.map(uses))).flat());
  const freed = new Set((await Promise.all((await journals(due)).map(uses))).flat().filter((uri) => !used.has(uri)));
  const ours = [...freed].filter((uri) => uri.startsWith(`${location}/`)).map((uri) => keyOfUri(stream, location, uri));
  await store.delete(ours);
  await store.delete(due);
  return {
    deleted: ours.length,
    journals: due.length,
    versions: await deleteOldVersions(store, stream, loaded.table["metadata-log"][0], now - retainMs),
    nextDue,
  };
}

/** The versions below the metadata log's oldest entry, once it was written before `cutoff`; how many went. */
async function deleteOldVersions(
  store: TableStore,
  stream: string,
  oldest: { "timestamp-ms": number; "metadata-file": string } | undefined,
  cutoff: number,
): Promise<number> {
  const below = oldest ? versionOfKey(oldest["metadata-file"]) : null;
  if (!oldest || below === null || oldest["timestamp-ms"] >= cutoff) return 0;
  const old = (await store.list(keyOf(stream, METADATA_VERSION_PREFIX))).filter((k) => (versionOfKey(k) ?? below) < below);
  await store.delete(old);
  return old.length;
}
