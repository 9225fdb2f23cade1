import { api, failure } from "./api";
import type { DeadRow, Destination, Replayed, RowAttempts } from "./types";

/** How many dead rows, and recent attempts, the page reads per destination. */
const DEAD_SHOWN = 20;
const ATTEMPTS_SHOWN = 20;

/** What the delivery panel shows of one destination beyond its status: its dead lane's first rows, its rows worth a look (or why they could not be read). */
export interface DestinationDetail {
  dead: DeadRow[] | string;
  attempts: RowAttempts[] | string;
}

export const destinationPath = (stream: string, name: string) => `/v1/streams/${encodeURIComponent(stream)}/destinations/${encodeURIComponent(name)}`;

/** Reads each destination's dead lane (when it has dead rows) and recent attempts; a destination gone meanwhile says so in its own place. */
export async function fetchDestinationDetails(stream: string, list: Destination[]): Promise<Map<string, DestinationDetail>> {
  const read = <T>(p: Promise<T>) => p.catch((e: unknown) => failure(e));
  const details = await Promise.all(
    list.map(async (d): Promise<[string, DestinationDetail]> => {
      const base = destinationPath(stream, d.name);
      const [dead, attempts] = await Promise.all([
        d.dead > 0 ? read(api<{ rows: DeadRow[] }>(`${base}/dead?limit=${DEAD_SHOWN}`).then((r) => r.rows)) : Promise.resolve([]),
        read(api<{ rows: RowAttempts[] }>(`${base}/attempts?limit=${ATTEMPTS_SHOWN}`).then((r) => r.rows)),
      ]);
      return [d.name, { dead, attempts }];
    }),
  );
  return new Map(details);
}

/** One row's attempts by its webhook-id (GET …/attempts?id=). */
export async function findAttempts(stream: string, name: string, id: string): Promise<RowAttempts | null> {
  const r = await api<{ rows: RowAttempts[] }>(`${destinationPath(stream, name)}/attempts?id=${encodeURIComponent(id)}`);
  return r.rows[0] ?? null;
}

/** Sends every row from the oldest dead row's commit on again, in each shard with dead rows (POST …/replay {"from": "dead"}). */
export function replayDead(stream: string, name: string): Promise<Replayed> {
  return api<Replayed>(`${destinationPath(stream, name)}/replay`, { from: "dead" });
}
