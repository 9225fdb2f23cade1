import { storedConfig, type DestinationConfig } from "./config";
import type { SealedSecret } from "./secrets";
import type { DestRow } from "./store";

/**
 * The destination itself: the one row of `dest` (./store.ts), with its
 * config, sealed secrets, read cursor, the stream epoch and incarnation it
 * reads, and its counters.
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
      readSeq: r.read_seq,
      readIndex: r.read_index,
      paused: r.paused,
      lastError: r.last_error,
      lastErrorAt: r.last_error_at,
      lastSuccessAt: r.last_success_at,
      delivered: r.delivered,
      failures: r.failures,
      died: r.died,
    };
  }

  /** A new destination, its cursor at the stream's last commit (it starts with the next one). */
  create(
    stream: string,
    name: string,
    config: DestinationConfig,
    secrets: SealedSecret[],
    createdAt: number,
    at: { epoch: string; incarnation: number; lastSeq: number },
  ): void {
    this.sql.exec(
      "INSERT INTO dest (id, stream, name, config, secrets, created_at, epoch, incarnation, read_seq, read_index) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
      stream,
      name,
      JSON.stringify(config),
      JSON.stringify(secrets),
      createdAt,
      at.epoch,
      at.incarnation,
      at.lastSeq,
    );
  }

  /** A new config (and secrets), which also resumes a paused destination. */
  reconfigure(config: DestinationConfig, secrets: SealedSecret[]): void {
    this.sql.exec("UPDATE dest SET config = ?, secrets = ?, paused = NULL WHERE id = 1", JSON.stringify(config), JSON.stringify(secrets));
  }

  setSecrets(secrets: SealedSecret[]): void {
    this.sql.exec("UPDATE dest SET secrets = ? WHERE id = 1", JSON.stringify(secrets));
  }

  /** The cursor: read up to row `readIndex` of commit `readSeq + 1` (0: all of commit `readSeq`). */
  moveCursor(readSeq: number, readIndex: number): void {
    this.sql.exec("UPDATE dest SET read_seq = ?, read_index = ? WHERE id = 1", readSeq, readIndex);
  }

  /** Every commit up to `readSeq` read. */
  readUpTo(readSeq: number): void {
    this.sql.exec("UPDATE dest SET read_seq = ?, read_index = 0 WHERE id = 1", readSeq);
  }

  /** The stream was created again: its commits start over, under the new incarnation. */
  startOver(epoch: string, incarnation: number): void {
    this.sql.exec("UPDATE dest SET epoch = ?, incarnation = ?, read_seq = 0, read_index = 0 WHERE id = 1", epoch, incarnation);
  }

  /** A replay: the cursor back to `readSeq`, and the destination resumed. */
  rewind(readSeq: number): void {
    this.sql.exec("UPDATE dest SET read_seq = ?, read_index = 0, paused = NULL WHERE id = 1", readSeq);
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
