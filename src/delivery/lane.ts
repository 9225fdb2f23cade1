import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { describeError } from "./attempt";
import { LANE_CONNECTIONS } from "./config";
import type { DeliveryLaneRpc, LaneAnswer, LaneRequest } from "./protocol";

/**
 * A lane of a destination, named `{stream}/{name}#{lane}`: it makes the
 * POSTs its Destination hands it, at most LANE_CONNECTIONS at once (an
 * object's outgoing connections on Cloudflare), and answers how each went.
 * It keeps nothing: which rows are due, their order, the cap and every
 * outcome are the Destination's (./sender.ts), so lanes can be added or
 * taken away on a live destination without moving any state.
 */
export class DeliveryLane extends DurableObject<Env> implements DeliveryLaneRpc {
  async post(requests: LaneRequest[]): Promise<LaneAnswer[]> {
    const answers: LaneAnswer[] = new Array(requests.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < requests.length; i = next++) answers[i] = await postOne(requests[i]);
    };
    await Promise.all(Array.from({ length: Math.min(LANE_CONNECTIONS, requests.length) }, worker));
    return answers;
  }
}

async function postOne(r: LaneRequest): Promise<LaneAnswer> {
  const at = Date.now();
  try {
    const res = await fetch(r.url, { method: "POST", headers: r.headers, body: r.body, redirect: "manual", signal: AbortSignal.timeout(r.timeoutMs) });
    await res.body?.cancel();
    return { at, ms: Date.now() - at, status: res.status, retryAfter: res.headers.get("retry-after"), error: null };
  } catch (e) {
    return { at, ms: Date.now() - at, status: null, retryAfter: null, error: describeError(e, r.timeoutMs) };
  }
}
