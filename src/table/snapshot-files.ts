import { keyOfUri } from "./layout";
import { decodeManifest, decodeManifestList, STATUS, type DataFileEntry, type ManifestFile } from "./manifest";
import type { Snapshot } from "./metadata";
import type { TableStore } from "./store";

/** What a snapshot references: its manifests, and through them its data files. */
async function read(store: TableStore, stream: string, location: string, uri: string): Promise<Uint8Array> {
  const bytes = await store.get(keyOfUri(stream, location, uri));
  if (bytes === null) throw new Error(`${uri} is referenced by the table but missing`);
  return bytes;
}

export async function manifestsOf(store: TableStore, stream: string, location: string, snapshot: Snapshot): Promise<ManifestFile[]> {
  return decodeManifestList(await read(store, stream, location, snapshot["manifest-list"]));
}

/** A manifest with neither added nor existing entries only records deletions, which matter to its own snapshot alone. */
export const hasLiveFiles = (m: ManifestFile) => m.addedFiles + m.existingFiles > 0;

/** The snapshot's live data files (added or existing), in manifest list order. */
export async function liveDataFiles(store: TableStore, stream: string, location: string, snapshot: Snapshot): Promise<DataFileEntry[]> {
  const manifests = (await manifestsOf(store, stream, location, snapshot)).filter(hasLiveFiles);
  const entries = await Promise.all(manifests.map(async (m) => decodeManifest(await read(store, stream, location, m.path), m)));
  return entries.flat().filter((e) => e.status !== STATUS.deleted);
}

export async function readDataFileBytes(store: TableStore, stream: string, location: string, entry: DataFileEntry): Promise<Uint8Array> {
  return read(store, stream, location, entry.path);
}
