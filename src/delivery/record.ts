import { storedConfig, type DestinationConfig } from "./config";
import { cursorOf, startCursors, withCursor, type ReadCursor } from "./cursors";
import type { SealedSecret } from "./secrets";
import type { DestRow } from "./store";

/**
 * The destination itself: the one row of `dest` (./store.ts), with its
 * config, sealed secrets, read cursors (shard 0's in read_seq and
 * read_index, as a stream of one shard always had it; the other shards' in
 * shard_cursors, ./cursors.ts), the stream epoch and incarnation it reads,
 * and its counters.
 */
export class DestinationRecord {
  constructor(private readonly sql: SqlStorage) {}

  read(): DestRow | null {
    const r = this.sql.exec<Record<string, any>>("SELECT * FROM dest WHERE id = 1").toArray()[0];
    if (!r) return null;
    return {
      stream: r.stream,
      name: r.name,
      config: storedConfig(JSON.parse(r.config)),
      secrets: JSON.parse(r.secrets),
      createdAt: r.created_at,
      epoch: r.epoch,
      incarnation: r.incarnation,
      cursors: [{ seq: r.read_seq, index: r.read_index }, ...(r.shard_cursors ? (JSON.parse(r.shard_cursors) as ReadCursor[]) : [])],
      paused: r.paused,
      lastError: r.last_error,
      lastErrorAt: r.last_error_at,
      lastSuccessAt: r.last_success_at,
      delivered: r.delivered,
      failures: r.failures,
      died: r.died,
    };
  }

  /** A new destination, each shard's cursor at its last commit (it starts with the next one). */
  create(
    stream: string,
    name: string,
    config: DestinationConfig,
    secrets: SealedSecret[],
    createdAt: number,
    at: { epoch: string; incarnation: number; lastSeqs: readonly number[] },
  ): void {
    this.sql.exec(
      "INSERT INTO dest (id, stream, name, config, secrets, created_at, epoch, incarnation, read_seq, read_index, shard_cursors) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
      stream,
      name,
      JSON.stringify(config),
      JSON.stringify(secrets),
      createdAt,
      at.epoch,
      at.incarnation,
      at.lastSeqs[0],
      shardCursors(at.lastSeqs.map((seq) => ({ seq, index: 0 }))),
    );
  }

  /** A new config (and secrets), which also resumes a paused destination. */
  reconfigure(config: DestinationConfig, secrets: SealedSecret[]): void {
    this.sql.exec("UPDATE dest SET config = ?, secrets = ?, paused = NULL WHERE id = 1", JSON.stringify(config), JSON.stringify(secrets));
  }

  setSecrets(secrets: SealedSecret[]): void {
    this.sql.exec("UPDATE dest SET secrets = ? WHERE id = 1", JSON.stringify(secrets));
  }

  /** Shard k's cursor: read up to row `index` of commit `seq + 1` (0: all of commit `seq`). */
  moveCursor(k: number, seq: number, index: number): void {
    if (k === 0) this.sql.exec("UPDATE dest SET read_seq = ?, read_index = ? WHERE id = 1", seq, index);
    else this.setCursors(withCursor(this.read()!.cursors, k, { seq, index }));
  }

  /** Every cursor (shards not listed: from their start). */
  setCursors(cursors: readonly ReadCursor[]): void {
    const first = cursorOf(cursors, 0);
    this.sql.exec("UPDATE dest SET read_seq = ?, read_index = ?, shard_cursors = ? WHERE id = 1", first.seq, first.index, shardCursors(cursors));
  }

  /** The stream was created again (with `shards` shards): its commits start over, every shard's, under the new incarnation. */
  startOver(epoch: string, incarnation: number, shards: number): void {
    this.sql.exec("UPDATE dest SET epoch = ?, incarnation = ? WHERE id = 1", epoch, incarnation);
    this.setCursors(startCursors(shards));
  }

  /** A replay: the cursors back, and the destination resumed. */
  rewind(cursors: readonly ReadCursor[]): void {
    this.setCursors(cursors);
    this.resume();
  }

  resume(): void {
    this.sql.exec("UPDATE dest SET paused = NULL WHERE id = 1");
  }

  pause(error: string): void {
    this.sql.exec("UPDATE dest SET paused = ? WHERE id = 1", error);
  }

  countDied(): void {
    this.sql.exec("UPDATE dest SET died = died + 1 WHERE id = 1");
  }

  countDelivered(rows: number, at: number): void {
    this.sql.exec("UPDATE dest SET delivered = delivered + ?, last_success_at = ? WHERE id = 1", rows, at);
  }

  countFailures(rows: number, error: string, at: number): void {
    this.sql.exec("UPDATE dest SET failures = failures + ?, last_error = ?, last_error_at = ? WHERE id = 1", rows, error, at);
  }
}

/** Shards 1…'s cursors as stored (null: one shard). */
function shardCursors(cursors: readonly ReadCursor[]): string | null {
  return cursors.length > 1 ? JSON.stringify(cursors.slice(1).map((_, i) => cursorOf(cursors, i + 1))) : null;
}
