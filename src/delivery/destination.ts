import { destinationStub, type Env } from "../env";
import type { Migration } from "../storage/migrations";
import { SqliteObject } from "../storage/sqlite-object";

import { shardOfSeq } from "../stream/shards";
import { rowAttempts, recentAttempts } from "./attempts";
import { DEFAULT_ROTATION_OVERLAP_MS, type DestinationConfig } from "./config";
import { cursorOf, withCursor } from "./cursors";
import { newSigningSecret } from "./message";
import { placementOf, sameOrdering } from "./ordering";
import { afterRotation } from "./secrets";
import { Sender } from "./sender";
import { SigningKeys } from "./signing";
import { destinationStatus, type DestinationStatus } from "./status";
import { DEST_INCARNATION, DEST_LANES, DEST_SHARD_CURSORS, DESTINATION_TABLES, MAX_PENDING } from "./store";
import { destinationTables } from "./tables";
import type { AttemptsQuery, ConfigureResult, DeadRow, DestinationRpc, RowAttempts } from "./protocol";

/** The Destination's storage layouts, oldest first (src/storage/migrations.ts). */
export const DESTINATION_MIGRATIONS: readonly Migration[] = [
  { version: 1, does: "the destination, its pending and dead rows, commit-time marks, the index's members", up: (sql) => sql.exec(DESTINATION_TABLES) },
  { version: 2, does: "dest.incarnation: the stream's incarnation, which its webhook-ids carry", up: (sql) => sql.exec(DEST_INCARNATION) },
  { version: 3, does: "lanes, ordering and attempts: pending rows' entity and lane hash, rows' last attempts, recent deliveries", up: placeByLane },
  { version: 4, does: "dest.shard_cursors: the read cursors of a stream's shards after the first", up: (sql) => sql.exec(DEST_SHARD_CURSORS) },
];

/** Migration 3: the tables, and the rows pending under a version-2 layout placed as an unordered destination places them. */
function placeByLane(sql: SqlStorage): void {
  sql.exec(DEST_LANES);
  for (const r of sql.exec<{ seq: number; idx: number }>("SELECT seq, idx FROM pending").toArray()) {
    sql.exec("UPDATE pending SET h = ? WHERE seq = ? AND idx = ?", placementOf(null, r.seq, r.idx, "none").h, r.seq, r.idx);
  }
}

/**
 * One object per destination, named `{stream}/{name}`, driven by its alarm:
 * it reads committed output through the Coordinators' commit indexes (rows
 * still in the outbox or in R2; a cursor per ingest shard, ./cursors.ts),
 * keeps at most MAX_PENDING of them, and sends each
 * over its lanes (./lane.ts) until it is delivered or its retryFor runs out
 * (then the dead lane). Every step is recorded before the next, so a crash or
 * restart resends at most the rows in flight, under the same id. The object named `{stream}` is the
 * stream's index: the names of its destinations, which the Coordinator's
 * poke fans out to. A slow receiver delays only its own object.
 *
 * A thin shell: its tables are the modules of ./tables.ts, sending is
 * ./sender.ts (reading ahead ./read-ahead.ts, choosing rows ./dispatch.ts,
 * outcomes ./outcomes.ts), attempts as GET shows them ./attempts.ts.
 */
export class Destination extends SqliteObject<Env> implements DestinationRpc {
  private readonly tables = destinationTables(this.sql);
  private readonly keys = new SigningKeys(this.env);
  private readonly sender = new Sender(this.env, this.ctx.storage, this.tables, this.keys);

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: DESTINATION_MIGRATIONS, countAs: null });
  }

  // ---- the stream's index (the object named `{stream}`) ----

  /** Lists `name`, unless the stream already has `max` others. */
  addMember(name: string, max = Infinity): "added" | "present" | "full" {
    return this.tables.members.add(name, max);
  }

  removeMember(name: string): void {
    this.tables.members.remove(name);
  }

  members(): string[] {
    return this.tables.members.list();
  }

  /** The stream is being deleted: every destination goes with it (its pending rows, dead lane, attempts and secrets). */
  async removeMembers(stream: string): Promise<number> {
    const names = this.members();
    await Promise.all(names.map((n) => destinationStub(this.env, stream, n).remove()));
    // Only the names removed: one added meanwhile (a PUT racing the DELETE) stays listed, so a later DELETE finds it.
    for (const n of names) this.removeMember(n);
    return names.length;
  }

  /** Tells each destination of the stream that commits up to `lastSeq` exist (in the shard it names, committed at `at`). */
  async pokeMembers(stream: string, lastSeq: number, at: number): Promise<number> {
    const names = this.members();
    await Promise.all(
      names.map((n) =>
        destinationStub(this.env, stream, n)
          .poke(lastSeq, at)
          .catch(() => undefined),
      ),
    );
    return names.length;
  }

  // ---- one destination (the object named `{stream}/{name}`) ----

  /** Creates or updates the destination; a new http destination gets its signing secret, answered once. */
  async configure(
    stream: string,
    name: string,
    config: DestinationConfig,
    at: { epoch: string; incarnation: number; lastSeqs: readonly number[] },
  ): Promise<ConfigureResult> {
    const now = Date.now();
    const current = this.tables.record.read();
    let secret: string | null = null;
    let secrets = current?.secrets ?? [];
    if (config.type === "http" && secrets.length === 0) {
      secret = newSigningSecret();
      secrets = [await this.keys.seal(stream, name, secret, now)];
    }
    // A new destination starts with the next commit (replay reaches back); PUT again also resumes a paused one.
    if (!current) this.tables.record.create(stream, name, config, secrets, now, at);
    else
      this.ctx.storage.transactionSync(() => {
        this.tables.record.reconfigure(config, secrets);
        // Rows read under another ordering are placed again: their entities (and lanes) are the new ordering's.
        if (!sameOrdering(current.config.ordering, config.ordering)) this.tables.pending.replace(config.ordering);
      });
    await this.ctx.storage.setAlarm(now);
    return { status: current ? "updated" : "created", secret };
  }

  status(): DestinationStatus | null {
    const d = this.tables.record.read();
    if (!d) return null;
    const now = Date.now();
    const { pending, marks, dead } = this.tables;
    // The oldest commit reported and not read yet, of any shard.
    const unread = d.cursors.map((c) => marks.timeOf(c.seq + 1)).filter((at) => at !== null);
    const unreadAt = unread.length > 0 ? Math.min(...unread) : null;
    return destinationStatus(d, pending.summary(), pending.byLane(d.config.lanes), pending.lows(d.config.lanes), unreadAt, dead.count(), now);
  }

  /** One row's attempts by its place ([] when it keeps none), or the rows worth a look; null: no such destination. */
  attempts(q: AttemptsQuery): RowAttempts[] | null {
    const d = this.tables.record.read();
    if (!d) return null;
    if ("limit" in q) return recentAttempts(this.tables, d, q.limit);
    const row = rowAttempts(this.tables, d, q.seq, q.index);
    return row ? [row] : [];
  }

  /** A new signing secret; the old ones keep signing for `overlapMs` (then stop), at most two of them (./secrets.ts). Null: not an http destination. */
  async rotateSecret(overlapMs = DEFAULT_ROTATION_OVERLAP_MS): Promise<{ secret: string; id: string } | null> {
    const d = this.tables.record.read();
    if (!d || d.config.type !== "http") return null;
    const now = Date.now();
    const secret = newSigningSecret();
    const fresh = await this.keys.seal(d.stream, d.name, secret, now);
    const again = this.tables.record.read();
    if (!again) return null;
    this.tables.record.setSecrets(afterRotation(again.secrets, fresh, now, overlapMs));
    return { secret, id: fresh.id };
  }

  /** Recorded when a Coordinator (a shard) commits: its commits up to `lastSeq` exist. Starts a round soon. */
  async poke(lastSeq: number, at: number): Promise<void> {
    const d = this.tables.record.read();
    if (!d) return;
    if (lastSeq > cursorOf(d.cursors, shardOfSeq(lastSeq)).seq) this.tables.marks.add(lastSeq, at);
    if (d.paused) return;
    this.sender.poke();
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > Date.now()) await this.ctx.storage.setAlarm(Date.now());
  }

  /** The dead lane, oldest seq first, after (seq, index). */
  dead(after: { seq: number; index: number }, limit: number): DeadRow[] {
    const d = this.tables.record.read();
    return d ? this.tables.dead.page(d, after, limit) : [];
  }

  /**
   * Sends every row from each commit of `from` on again (dead ones
   * included), with the ids they had: one commit per shard named, each
   * shard's later commits with it; shards not named are left as they are.
   * "dead": from each shard's oldest dead row. Returns the commits it
   * starts from and how many dead rows it takes back, or null when the
   * destination does not exist.
   */
  async replay(from: readonly number[] | "dead"): Promise<{ fromSeqs: number[]; fromDead: number } | null> {
    const d = this.tables.record.read();
    if (!d) return null;
    const { record, pending, dead } = this.tables;
    const fromSeqs = from === "dead" ? dead.oldestByShard() : [...from];
    const fromDead = this.ctx.storage.transactionSync(() => {
      let n = 0;
      let cursors = d.cursors;
      for (const fromSeq of fromSeqs) {
        const k = shardOfSeq(fromSeq);
        n += dead.countFrom(fromSeq);
        dead.dropFrom(fromSeq);
        pending.dropFrom(fromSeq);
        if (cursorOf(cursors, k).seq >= fromSeq - 1) cursors = withCursor(cursors, k, { seq: fromSeq - 1, index: 0 });
      }
      record.rewind(cursors);
      return n;
    });
    this.sender.reread();
    await this.ctx.storage.setAlarm(Date.now());
    return { fromSeqs, fromDead };
  }

  /** Stops and forgets the destination (DELETE). */
  async remove(): Promise<boolean> {
    if (!this.tables.record.read()) return false;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.keys.forget();
    this.migrate(); // the instance may serve again (the destination created anew)
    return true;
  }

  /** One invocation of sending (./sender.ts), then the alarm for what is left. */
  async alarm(): Promise<void> {
    const d = this.tables.record.read();
    if (!d || d.paused) return;
    // A failed read throws before re-arming: the runtime retries the alarm, with its backoff.
    await this.sender.run();
    await this.rearm();
  }

  private async rearm(): Promise<void> {
    const d = this.tables.record.read();
    if (!d || d.paused) return;
    const next = this.tables.pending.nextDueAt();
    // Commits the Coordinator reported that are not read yet: read on at once.
    const unread = this.tables.marks.anyAfter(d.cursors);
    const count = this.tables.pending.count();
    const at = unread && count < MAX_PENDING ? Date.now() : next;
    if (at !== null) await this.ctx.storage.setAlarm(Math.max(at, Date.now()));
  }
}
