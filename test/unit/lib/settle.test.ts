import { describe, expect, it } from "vitest";
import { settle, unsettle } from "../../../src/lib/settle";

describe("settle / unsettle", () => {
  it("keeps a value or a failure until its await: a failure left waiting rejects nothing unhandled, and is thrown where awaited", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const failing = settle(Promise.reject(new Error("late")));
      const fine = settle(Promise.resolve(7));
      await new Promise((r) => setTimeout(r, 10)); // the failure settles while nobody awaits it
      expect(await unsettle(fine)).toBe(7);
      await expect(unsettle(failing)).rejects.toThrow("late");
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
