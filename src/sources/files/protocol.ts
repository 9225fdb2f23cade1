import type { RunView } from "./plan";
import type { RunOptions } from "./run-body";

/** The default source of file runs, and of R2 event notifications: both name an object's batch alike, so they replay each other. */
export const FILES_SOURCE = "files";

/**
 * What callers may ask a stream's Runner (src/sources/files/runner.ts
 * implements it); stubs are typed by it (src/env.ts).
 */
export interface RunnerRpc extends Rpc.DurableObjectBranded {
  /** Starts a run over `prefix`; returns its id. */
  start(stream: string, epoch: string, prefix: string, source: string, options?: RunOptions): Promise<string>;
  view(id: string): Promise<RunView | null>;
  /** Object versions ingested another way (an R2 event notification): a later run skips them. */
  recordDone(stream: string, files: { key: string; etag: string }[]): Promise<void>;
}
