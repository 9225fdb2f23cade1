import type { StreamConfig } from "../stream/config";
import type { RescaleState } from "../rescale/state";
import type { ShardChange } from "../stream/shard-change";
import { seqBase } from "../stream/shards";

/** The stream's meta row as the Coordinator uses it. */
export interface Meta {
  name: string;
  config: StreamConfig;
  configVersion: number;
  epoch: string;
  /** which creation of the stream's name this is (1: the first); webhook-ids of later ones carry it (src/delivery/message.ts) */
  incarnation: number;
  createdAt: number;
  /** the global watermark: the larger of meta's (configure, idle sources) and the newest state record's (commits) */
  watermark: number;
  /** outbox entry ids start above this (Coordinator migration 9; src/output/outbox.ts) */
  outboxFloor: number;
  /** which ingest shard this Coordinator is (src/stream/shards.ts): 0 for the stream's own */
  shard: number;
  /** the partition map's version (src/stream/partition-map.ts): 1 until a rescale; its partitions are config.partitions */
  mapVersion: number;
  /** the rescale under way (null: none) */
  rescale: RescaleState | null;
  /** the last change of the shard count (null: none): which shard judges a moved batch id (src/stream/shard-change.ts) */
  shardChange: ShardChange | null;
}

type MetaRow = {
  name: string;
  config: string;
  config_version: number;
  epoch: string;
  incarnation: number;
  created_at: number;
  watermark: number;
  outbox_floor: number;
  shard: number;
  map_version: number;
  rescale: string | null;
  shard_change: string | null;
};

/**
 * The stream's meta row and its config versions (the `meta` and `configs`
 * tables of Coordinator migration 1), and how far publication has got (the
 * `published` table). Only this object writes them, so the row is read once
 * and kept; every write calls forget() after its transaction, and a
 * transaction that rolls back leaves the cache as storage is. The caller
 * checks that the tables exist.
 */
export class MetaStore {
  private cached: (Omit<Meta, "watermark"> & { metaWatermark: number }) | null | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The meta row (null: the stream is not created); `watermark` is meta's own, without the commits'. */
  read(): (Omit<Meta, "watermark"> & { metaWatermark: number }) | null {
    if (this.cached !== undefined) return this.cached;
    const row = this.sql
      .exec<MetaRow>(
        "SELECT name, config, config_version, epoch, incarnation, created_at, watermark, outbox_floor, shard, map_version, rescale, shard_change FROM meta",
      )
      .toArray()[0];
    this.cached = row
      ? {
          name: row.name,
          config: JSON.parse(row.config),
          configVersion: row.config_version,
          epoch: row.epoch,
          incarnation: row.incarnation,
          createdAt: row.created_at,
          metaWatermark: row.watermark,
          outboxFloor: row.outbox_floor,
          shard: row.shard,
          mapVersion: row.map_version,
          rescale: row.rescale ? (JSON.parse(row.rescale) as RescaleState) : null,
          shardChange: row.shard_change ? (JSON.parse(row.shard_change) as ShardChange) : null,
        }
      : null;
    return this.cached;
  }

  forget(): void {
    this.cached = undefined;
  }

  /** A new stream's row and its first config version; a shard k > 0 takes its stream's epoch (the partitions' state is the stream's). */
  create(
    name: string,
    config: StreamConfig,
    now: number,
    incarnation: number,
    shard: { index: number; epoch: string } = { index: 0, epoch: crypto.randomUUID() },
  ): void {
    this.sql.exec(
      "INSERT INTO meta (id, name, config, config_version, epoch, incarnation, created_at, watermark, shard) VALUES (1, ?, ?, 1, ?, ?, ?, 0, ?)",
      name,
      JSON.stringify(config),
      shard.epoch,
      incarnation,
      now,
      shard.index,
    );
    this.sql.exec("INSERT INTO configs (version, config) VALUES (1, ?)", JSON.stringify(config));
    this.forget();
  }

  /** A new config version, and the watermark it moves to. */
  update(config: StreamConfig, version: number, watermark: number): void {
    this.sql.exec("UPDATE meta SET config = ?, config_version = ?, watermark = ?", JSON.stringify(config), version, watermark);
    this.sql.exec("INSERT INTO configs (version, config) VALUES (?, ?)", version, JSON.stringify(config));
    this.forget();
  }

  /** A shard-count change's phase here, and (done) the config with the new count. */
  setShardChange(change: ShardChange, config?: { config: StreamConfig; version: number }): void {
    if (config) {
      this.sql.exec("UPDATE meta SET config = ?, config_version = ?", JSON.stringify(config.config), config.version);
      this.sql.exec("INSERT INTO configs (version, config) VALUES (?, ?)", config.version, JSON.stringify(config.config));
    }
    this.sql.exec("UPDATE meta SET shard_change = ?", JSON.stringify(change));
    this.forget();
  }

  /** A rescale's switch: the new config (its partitions the new count) and map version, and the move's state; or the move's progress (config null). */
  setRescale(rescale: RescaleState | null, change?: { config: StreamConfig; version: number; mapVersion: number }): void {
    if (change) {
      this.sql.exec("UPDATE meta SET config = ?, config_version = ?, map_version = ?", JSON.stringify(change.config), change.version, change.mapVersion);
      this.sql.exec("INSERT INTO configs (version, config) VALUES (?, ?)", change.version, JSON.stringify(change.config));
    }
    this.sql.exec("UPDATE meta SET rescale = ?", rescale ? JSON.stringify(rescale) : null);
    this.forget();
  }

  /** The watermark moved without a commit (sources turned idle). */
  setWatermark(watermark: number): void {
    this.sql.exec("UPDATE meta SET watermark = ?", watermark);
    this.forget();
  }

  /** The config a batch begun under version `version` is judged by. */
  configAt(version: number): StreamConfig {
    return JSON.parse(this.sql.exec<{ config: string }>("SELECT config FROM configs WHERE version = ?", version).one().config);
  }

  /** The last commit the manifest or the table holds (the shard's base, 0 for shard 0, before any). */
  published(what: "table" | "manifest"): number {
    return this.sql.exec<{ seq: number }>("SELECT seq FROM published WHERE what = ?", what).toArray()[0]?.seq ?? seqBase(this.read()?.shard ?? 0);
  }

  setPublished(what: "table" | "manifest", seq: number): void {
    this.sql.exec("INSERT OR REPLACE INTO published (what, seq) VALUES (?, ?)", what, seq);
  }

  /** When the table's next expiry journal of this shard is due for a sweep (ms; 0: none known), kept beside the publications (src/table/expiry.ts). */
  tableSweepAt(): number {
    return this.sql.exec<{ seq: number }>("SELECT seq FROM published WHERE what = 'table-sweep'").toArray()[0]?.seq ?? 0;
  }

  setTableSweepAt(at: number): void {
    this.sql.exec("INSERT OR REPLACE INTO published (what, seq) VALUES ('table-sweep', ?)", at);
  }
}
