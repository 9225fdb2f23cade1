import { app } from "./api/app";
import type { Env } from "./env";
import { withOpCount } from "./instrument/opcount";
import { consumeQueue } from "./sources/queue/consumer";

export { Coordinator } from "./coordinator/coordinator";
export { Clock } from "./clock/clock";
export { Partition } from "./partition/partition";
export { Runner } from "./sources/files/runner";
export { Registry } from "./registry/registry";
export { Destination } from "./delivery/destination";
export { DeliveryLane } from "./delivery/lane";
export { EdgeDedup } from "./rpc/entrypoint";

const http = withOpCount(app);

/** HTTP (the Hono app, counted under the bench flag) and the edge-dedup-events queue consumer (src/sources/queue). */
export default {
  fetch: (req, env, ctx) => http.fetch(req, env, ctx),
  queue: (batch, env) => consumeQueue(batch, env),
} satisfies ExportedHandler<Env>;
