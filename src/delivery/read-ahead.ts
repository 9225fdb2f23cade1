import { coordinatorStub, type Env } from "../env";
import { shardsOf } from "../stream/shards";
import { cursorOf } from "./cursors";
import { committedPages, readParts } from "../output/reader";
import { INSERT_CHARS, slices, tooLarge } from "./rows";
import { MAX_PENDING, type DestRow } from "./store";
import type { DestinationTables } from "./tables";

/** Commits asked of the Coordinator per read. */
const COMMITS_PER_READ = 20;

/**
 * Reads committed rows after the destination's cursors into `pending`, up to
 * MAX_PENDING, through each shard's Coordinator's commit index (or the
 * committed manifest, for commits the index has forgotten): the shards in
 * `which` ("all", or those with commits reported unread), starting at shard
 * `turn` (the sender turns it, so that no shard's backlog always comes first).
 * Each slice read is recorded, with its shard's cursor, before the next
 * await, and a read that finds the cursor moved meanwhile (a replay, a
 * delete) stops.
 */
export async function readAhead(
  env: Env,
  storage: DurableObjectStorage,
  t: DestinationTables,
  d: DestRow,
  which: "all" | readonly number[] = "all",
  turn = 0,
): Promise<void> {
  const at = await coordinatorStub(env, d.stream).locate();
  if (!at) {
    // The stream is gone (or not there yet): nothing to read, and no reported commit to wait for.
    t.marks.clear();
    return;
  }
  if (at.epoch !== d.epoch) {
    // The stream was deleted and created again (and this destination outlived it: the delete came before destinations went
    // with their stream, or raced a PUT): its commits start over, under ids this destination never sent.
    t.forgetEpoch();
    const incarnation = Math.max(at.incarnation, d.incarnation + 1);
    t.record.startOver(at.epoch, incarnation, shardsOf(at.config));
    d = t.record.read()!;
    which = "all";
  }
  const shards = shardsOf(at.config);
  let room = MAX_PENDING - t.pending.count();
  for (let i = 0; i < shards && room > 0; i++) {
    const k = (turn + i) % shards;
    if (which !== "all" && !which.includes(k)) continue;
    const here = k === 0 ? at : await coordinatorStub(env, d.stream, k).locate();
    // A shard not (yet, or no longer) of this epoch has nothing of it to read.
    if (!here || here.epoch !== at.epoch) continue;
    const left = await readShard(env, storage, t, d, here, room);
    if (left === null) return;
    room = left;
  }
}

/** Where one shard's commits are (its Coordinator's locate(), as much of it as a read needs). */
interface ShardAt {
  name: string;
  epoch: string;
  shard: number;
  lastSeq: number;
  indexedFrom: number;
}

/** Reads shard `at.shard`'s commits after its cursor, into at most `room` rows; what room is left, or null when the read went stale. */
async function readShard(env: Env, storage: DurableObjectStorage, t: DestinationTables, d: DestRow, at: ShardAt, room: number): Promise<number | null> {
  const k = at.shard;
  const coordinator = coordinatorStub(env, d.stream, k);
  let { seq: readSeq, index: readIndex } = cursorOf(d.cursors, k);
  // A shard's rows are ordered by commit time across shards (./pending.ts): never earlier than its rows read before
  // (a commit read before its poke's mark came is given the time it was read).
  let floor = d.cursors.length > 1 ? (t.pending.newestIn(k) ?? 0) : 0;
  const stale = () => {
    const again = t.record.read();
    const c = again && cursorOf(again.cursors, k);
    return !c || c.seq !== readSeq || c.index !== readIndex || again.epoch !== at.epoch;
  };
  while (room > 0 && readSeq < at.lastSeq) {
    // Commits the ledger has forgotten (past the idempotency window: a replay, or a destination far behind) are
    // read from the committed manifest, as /output reads them; the rest from the Coordinator's commit index.
    const forgotten = readSeq < at.indexedFrom - 1;
    const parts = forgotten
      ? ((await committedPages(env.SINK, at, "data", readSeq, at.indexedFrom - 1, async () => []).next()).value ?? [])
      : await coordinator.commits("data", readSeq, at.lastSeq, COMMITS_PER_READ);
    if (forgotten && parts.length === 0) {
      // No output rows in the forgotten commits after the cursor: on to the ones the index holds.
      if (stale()) return null;
      t.record.moveCursor(k, at.indexedFrom - 1, 0);
      readSeq = at.indexedFrom - 1;
      readIndex = 0;
      continue;
    }
    let full = true;
    for (const part of parts) {
      const lines = await linesOf(env.SINK, part);
      const start = part.seq === readSeq + 1 ? readIndex : 0;
      const take = lines.slice(start, start + room);
      const committedAt = Math.max(floor, t.marks.timeOf(part.seq) ?? Date.now());
      if (d.cursors.length > 1) floor = committedAt;
      const complete = start + take.length >= lines.length;
      // A replay or a delete while this read awaited moved the cursor: this read is stale.
      if (stale()) return null;
      storage.transactionSync(() => {
        const now = Date.now();
        // In slices of at most ~1 MB of text: a bound value, like a stored row, is limited to 2 MB.
        for (const slice of slices(take, start, INSERT_CHARS)) t.pending.insert(part.seq, slice.first, slice.rows, d.config.ordering, committedAt, now);
        // A row too large to keep (or to POST sensibly) goes to the dead lane at once, as a stand-in that says so.
        take.forEach((line, i) => {
          if (!tooLarge(line)) return;
          t.dead.addTooLarge(part.seq, start + i, line.length, committedAt, now);
          t.record.countDied();
        });
        readSeq = complete ? part.seq : part.seq - 1;
        readIndex = complete ? 0 : start + take.length;
        t.record.moveCursor(k, readSeq, readIndex);
      });
      room -= take.length;
      if (!complete) {
        full = false;
        break;
      }
    }
    // Fewer parts than asked: every commit up to lastSeq has been seen (commits without output rows have none).
    if (full && !forgotten && parts.length < COMMITS_PER_READ) {
      if (stale()) return null;
      t.record.moveCursor(k, at.lastSeq, 0);
      readSeq = at.lastSeq;
      readIndex = 0;
    }
    if (!full) break;
  }
  t.marks.dropUpTo(k, readSeq);
  return room;
}

async function linesOf(bucket: R2Bucket, part: Parameters<typeof readParts>[1][number]): Promise<string[]> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const bytes of readParts(bucket, [part])) text += decoder.decode(bytes, { stream: true });
  text += decoder.decode();
  return text.split("\n").filter((l) => l !== "");
}
