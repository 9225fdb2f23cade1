import type { Env } from "../env";
import { destinationIndex, destinationStub } from "../env";
import type { DestinationStatus } from "./status";
import { renderDeliveryMetrics } from "./metrics";

/** Every destination of these streams, for /metrics (two calls per stream with destinations: the index, then each status in parallel). */
export async function deliveryMetrics(env: Env, streams: readonly string[]): Promise<string> {
  const all = await Promise.all(
    streams.map(async (stream) => {
      const names = await destinationIndex(env, stream).members();
      return Promise.all(names.map((n) => destinationStub(env, stream, n).status()));
    }),
  );
  return renderDeliveryMetrics(all.flat().flatMap((d) => (d ? [d as DestinationStatus] : [])));
}
