import { columnMetrics } from "./column-metrics";
import { dataPath, digestOf, keyOf, uriOf } from "./layout";
import { STATUS, type DataFileEntry } from "./manifest";
import { dataFileFieldIds, encodeDataFile } from "./parquet";
import type { PartitionValues } from "./partitioning";
import type { TableStore } from "./store";
import type { IcebergField, IcebergSchema } from "./table-schema";
import type { TableValue } from "./values";

export interface NewDataFile {
  kind: "append" | "compact";
  /** the commit sequence (append) or the snapshot's sequence number (compact) the file is named by */
  seq: number;
  schema: IcebergSchema;
  rows: readonly (readonly TableValue[])[];
  /** the columns the file carries whether or not a row has a value in them */
  always: (f: IcebergField) => boolean;
  snapshotId: number;
  sequenceNumber: number;
  specId: number;
  partition: PartitionValues;
}

/**
 * One data file written and described as the snapshot that adds it lists it:
 * its Parquet bytes under a name made of its sequence and digest (already
 * there means a retry wrote these very bytes), its metrics, its partition.
 */
export async function writeDataFile(store: TableStore, stream: string, location: string, f: NewDataFile): Promise<DataFileEntry> {
  const data = encodeDataFile(f.schema, f.rows, f.always);
  const path = dataPath(f.kind, f.seq, await digestOf(data));
  await store.put(keyOf(stream, path), data, { createOnly: true });
  return {
    status: STATUS.added,
    snapshotId: f.snapshotId,
    sequenceNumber: f.sequenceNumber,
    fileSequenceNumber: f.sequenceNumber,
    path: uriOf(location, path),
    recordCount: f.rows.length,
    sizeInBytes: data.length,
    metrics: columnMetrics(f.schema, f.rows, dataFileFieldIds(data)),
    specId: f.specId,
    partition: f.partition,
  };
}
