import { describe, expect, it } from "vitest";
import { queueMessage, webhookId } from "../../../src/delivery/message";

/** The webhook-id form (docs/guides/destinations.md, the message): plain for a stream's first incarnation, `~n` after. */
describe("webhook-ids", () => {
  it("keep {stream}.{seq}.{index} for the first incarnation and carry ~n for later ones", () => {
    expect(webhookId("orders", 12, 3)).toBe("orders.12.3");
    expect(webhookId("orders", 12, 3, 1)).toBe("orders.12.3");
    expect(webhookId("orders", 12, 3, 2)).toBe("orders~2.12.3");
    expect(webhookId("a.b", 1, 0, 10)).toBe("a.b~10.1.0");
    expect(queueMessage("s", 4, 0, { x: 1 }, 5, 3)).toEqual({
      id: "s~3.4.0",
      type: "row.emitted",
      stream: "s",
      seq: 4,
      index: 0,
      committedAt: 5,
      row: { x: 1 },
    });
  });

  it("never collide across incarnations and positions, and read back by their last two parts", () => {
    const seen = new Set<string>();
    for (const stream of ["s", "s.1"]) {
      for (let n = 1; n <= 4; n++) {
        for (let seq = 1; seq <= 12; seq++) {
          for (let index = 0; index < 12; index++) {
            const id = webhookId(stream, seq, index, n);
            expect(seen.has(id), id).toBe(false);
            seen.add(id);
            const parts = id.split(".");
            expect([Number(parts.at(-2)), Number(parts.at(-1))]).toEqual([seq, index]);
          }
        }
      }
    }
  });
});
