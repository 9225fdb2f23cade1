/** The Iceberg table writer: what the Coordinator (and GET …/table) use. */
export { appendToTable, type AppendInput, type CommitResult } from "./append";
export { compactTable, type CompactOptions, type CompactResult } from "./compact";
export { readTableFile, readTableSnapshot, TABLE_FILE_PATH, tableFiles, tableLayout, tableRetention, type CurrentTable, type TableFile } from "./read-snapshot";
export { DEFAULT_BASE_URI } from "./layout";
export { COMMIT_SEQ_KEY, type Snapshot } from "./metadata";
export { sweepExpired, type SweepResult } from "./expiry";
export { r2Store, type R2BucketLike } from "./r2-store";
export { memoryStore } from "./memory-store";
export type { TableStore } from "./store";
export { TableValueError } from "./values";
