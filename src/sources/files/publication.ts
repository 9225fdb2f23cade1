import { coordinatorStub, type Env } from "../../env";
import { COMMIT_SEQ_KEY, r2Store, readTableSnapshot } from "../../table";
import type { RunPublication } from "./plan";

/**
 * How far a stream's committed output is readable outside (DESIGN §7): what
 * a file run's done and `edge-dedup send` wait for. /output holds every commit
 * at once; the manifest and the table follow a few seconds after.
 */
export interface PublicationView {
  stream: string;
  committed: number;
  output: number;
  manifest: number;
  table: number | null;
  snapshot: RunPublication["snapshot"];
  /** several shards: each one's own (src/coordinator/protocol.ts StreamPublication) */
  shards?: { committed: number; manifest: number; table: number | null }[];
}

/** The table's current snapshot, as much of it as a run records. */
export async function snapshotOf(env: Env, stream: string): Promise<RunPublication["snapshot"]> {
  const s = (await readTableSnapshot(r2Store(env.SINK), stream))?.snapshot;
  if (!s) return null;
  return {
    "snapshot-id": s["snapshot-id"],
    "sequence-number": s["sequence-number"],
    "total-records": Number(s.summary["total-records"] ?? 0),
    "commit-seq": Number(s.summary[COMMIT_SEQ_KEY] ?? 0),
  };
}

export async function publicationOf(env: Env, stream: string): Promise<PublicationView | null> {
  const p = await coordinatorStub(env, stream).publication();
  if (!p) return null;
  return {
    stream,
    committed: p.committed,
    output: p.committed,
    manifest: p.manifest,
    table: p.table,
    snapshot: p.table === null ? null : await snapshotOf(env, stream),
    ...(p.shards ? { shards: p.shards } : {}),
  };
}
