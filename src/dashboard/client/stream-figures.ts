import { api } from "./api";
import { type DestinationDetail, fetchDestinationDetails } from "./delivery-figures";
import type { Advice, Destination, Health, PartitionState, Progress, StreamInfo } from "./types";

/** Everything the panels show of one stream. */
export interface StreamFigures {
  info: StreamInfo;
  health: Health;
  progress: Progress[];
  advice: Advice;
  destinations: Destination[];
  /** per destination name: its dead lane's first rows and its recent attempts */
  details: Map<string, DestinationDetail>;
  parts: PartitionState[];
}

/** With more partitions than this, their state is read at most every STATE_EVERY_MS (one call per partition). */
const FEW_PARTITIONS = 32;
const STATE_EVERY_MS = 30000;

/** Per stream, the last per-partition state read and when. */
const stateCache = new Map<string, { at: number; parts: PartitionState[] }>();

/** Reads one stream's figures from the admin API. */
export async function fetchStreamFigures(name: string): Promise<StreamFigures> {
  const base = `/v1/streams/${encodeURIComponent(name)}`;
  const [info, health, progress, advice, destinations] = await Promise.all([
    api<StreamInfo>(base),
    api<Health>(`${base}/health`),
    api<{ progress: Progress[] }>(`${base}/progress?limit=1000`),
    api<Advice>(`${base}/advice`),
    api<{ destinations: Destination[] }>(`${base}/destinations`),
  ]);
  const details = fetchDestinationDetails(name, destinations.destinations);
  const cached = stateCache.get(name);
  const partitions = info.config.partitions;
  const parts =
    cached && cached.parts.length === partitions && partitions > FEW_PARTITIONS && Date.now() - cached.at < STATE_EVERY_MS
      ? cached.parts
      : await Promise.all(Array.from({ length: partitions }, (_, p) => api<PartitionState>(`${base}/state?partition=${p}&limit=1`)));
  stateCache.set(name, { at: cached && cached.parts === parts ? cached.at : Date.now(), parts });
  return { info, health, progress: progress.progress, advice, destinations: destinations.destinations, details: await details, parts };
}
