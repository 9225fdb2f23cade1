import { describe, expect, test } from "vitest";
import { PUBLISH_RETRY_BASE_MS, PUBLISH_RETRY_MAX_MS, PublishGuard, publishRetryDelay, type SqlLike } from "../../../src/output/publish-guard";

/** A failing publication backs off and never throws into the alarm (src/output/publisher.ts); a tiny SQL stand-in for its one table. */
function fakeSql() {
  const rows = new Map<string, Record<string, unknown>>();
  return {
    rows,
    exec(query: string, ...args: unknown[]) {
      if (query.includes("min(next_attempt_at)")) {
        const due = [...rows.values()].map((r) => r.next_attempt_at as number);
        return { toArray: () => [{ at: due.length > 0 ? Math.min(...due) : null }] };
      }
      if (query.startsWith("SELECT")) return { toArray: () => (rows.has(args[0] as string) ? [rows.get(args[0] as string)] : []) };
      if (query.startsWith("DELETE")) rows.delete(args[0] as string);
      else {
        const [what, failures, last_error, last_error_at, next_attempt_at] = args;
        rows.set(what as string, { what, failures, last_error, last_error_at, next_attempt_at });
      }
      return { toArray: () => [] };
    },
  } as unknown as SqlLike & { rows: Map<string, unknown> };
}

describe("PublishGuard", () => {
  test("backs off 2 s, doubling, at most 5 minutes", () => {
    expect([1, 2, 3, 4].map(publishRetryDelay)).toEqual([2_000, 4_000, 8_000, 16_000]);
    expect(publishRetryDelay(1)).toBe(PUBLISH_RETRY_BASE_MS);
    expect(publishRetryDelay(30)).toBe(PUBLISH_RETRY_MAX_MS);
  });

  test("a throw is recorded, not thrown; skipped until due; a success clears it", async () => {
    const sql = fakeSql();
    const guard = new PublishGuard(sql);
    let calls = 0;
    const failing = async () => {
      calls++;
      throw new Error("R2 said no");
    };
    expect(await guard.attempt("table", 1_000, failing)).toBeNull();
    expect(guard.failure("table")).toEqual({ failures: 1, lastError: "R2 said no", lastErrorAt: 1_000, nextAttemptAt: 3_000 });
    expect(await guard.attempt("table", 2_999, failing)).toBeNull();
    expect(calls).toBe(1);
    expect(await guard.attempt("table", 3_000, failing)).toBeNull();
    expect(guard.failure("table")).toMatchObject({ failures: 2, nextAttemptAt: 7_000 });
    // The other publication is not held back.
    expect(await guard.attempt("manifest", 3_000, async () => "listed")).toBe("listed");
    expect(guard.nextAttemptAt()).toBe(7_000);
    expect(await guard.attempt("table", 7_000, async () => "appended")).toBe("appended");
    expect(guard.failure("table")).toBeNull();
    expect(guard.nextAttemptAt()).toBeNull();
  });
});
