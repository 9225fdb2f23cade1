/**
 * What one source learns of another's (issue 27): a rejected conflict against
 * a copy another source kept names neither that source, nor its batch id, nor
 * its commit; the admin finds them in the conflicts lane.
 */
import { describe, expect, it } from "vitest";
import { at, call, createStream, post } from "../helpers";

const lane = async (stream: string, name: string) =>
  (await (await call("GET", `/v1/streams/${stream}/${name}`)).text())
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe("a conflict against another source's kept copy", () => {
  it("is refused without naming that source, its batch or its commit; the lane names them for the admin", async () => {
    await createStream("xsrc", { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", onConflict: "reject" });
    await post("xsrc", [{ id: "A", ts: at(10, 0), amount: 10 }], { "idempotency-key": "secret-batch-of-shop", "x-source": "shop" });
    const r = await post(
      "xsrc",
      [
        { id: "A", ts: at(10, 0), amount: 99 },
        { id: "A", ts: at(10, 0), amount: 98 },
      ],
      { "idempotency-key": "o1", "x-source": "other" },
    );
    expect(r.rejected).toEqual([
      { index: 0, error: "conflict: its content differs from the kept copy of its key (kept from another source)" },
      { index: 1, error: "conflict: its content differs from the kept copy of its key (kept from another source)" },
    ]);
    expect(JSON.stringify(r)).not.toMatch(/shop|secret-batch/);
    expect((await lane("xsrc", "conflicts")).map((x) => x.kept)).toEqual([
      { batchId: "secret-batch-of-shop", source: "shop", seq: 1 },
      { batchId: "secret-batch-of-shop", source: "shop", seq: 1 },
    ]);
    // Its own source's kept copy is still named, with its commit.
    const own = await post("xsrc", [{ id: "A", ts: at(10, 0), amount: 11 }], { "idempotency-key": "s2", "x-source": "shop" });
    expect(own.rejected).toEqual([
      { index: 0, error: 'conflict: its content differs from the kept copy of its key (batch "secret-batch-of-shop" from source "shop", commit 1)' },
    ]);
  });
});
