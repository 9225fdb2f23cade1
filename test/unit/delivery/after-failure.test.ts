import { describe, expect, it } from "vitest";
import { afterFailure } from "../../../src/delivery/attempt";
import { BASE_DELAY_MS } from "../../../src/delivery/schedule";

describe("afterFailure", () => {
  const policy = { retryForMs: 60_000 };
  const row = { failures: 1, firstAttemptAt: 0 };
  const never = () => {
    throw new Error("no jitter needed");
  };

  it("leaves a gone endpoint's row due at once, and sends an undeliverable one to the dead lane, without jitter", () => {
    expect(afterFailure({ kind: "gone", error: "410" }, row, policy, 5_000, never)).toEqual({ at: 5_000 });
    expect(afterFailure({ kind: "undeliverable", error: "too large" }, row, policy, 5_000, never)).toBe("dead");
  });

  it("schedules a retry by the backoff, and gives up once retryFor has run out", () => {
    expect(afterFailure({ kind: "retry", error: "HTTP 500", retryAfterMs: null }, row, policy, 0, () => 1)).toEqual({ at: BASE_DELAY_MS });
    expect(afterFailure({ kind: "retry", error: "HTTP 500", retryAfterMs: null }, { failures: 9, firstAttemptAt: 0 }, policy, 60_000, () => 1)).toBe("dead");
  });
});
