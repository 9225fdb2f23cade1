import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallGathering } from "../../../src/partition/call-gathering";

/** A turn the test ends by hand: calls submitted before release() gather. */
function manualTurns() {
  const waiting: (() => void)[] = [];
  return {
    turn: () => new Promise<void>((resolve) => waiting.push(resolve)),
    release: async () => {
      for (const r of waiting.splice(0)) r();
      await new Promise((r) => setTimeout(r, 0));
    },
  };
}

describe("CallGathering", () => {
  it("judges the calls of one turn together, in order, each answered with its own result", async () => {
    const turns = manualTurns();
    const together: number[][] = [];
    const g = new CallGathering<number, string>(
      {
        together: (reqs) => (together.push(reqs), reqs.map((r) => `t${r}`)),
        alone: (r) => `a${r}`,
      },
      turns.turn,
    );
    const answers = [g.submit(1), g.submit(2), g.submit(3)];
    await turns.release();
    expect(await Promise.all(answers)).toEqual(["t1", "t2", "t3"]);
    expect(together).toEqual([[1, 2, 3]]);
    // A call alone in its turn is judged alone; the next turn gathers afresh.
    const single = g.submit(4);
    await turns.release();
    expect(await single).toBe("a4");
    const next = [g.submit(5), g.submit(6)];
    await turns.release();
    expect(await Promise.all(next)).toEqual(["t5", "t6"]);
  });

  it("when the calls together fail, judges each alone: the one at fault fails, the others get their answers", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), async (faulty) => {
        const turns = manualTurns();
        const g = new CallGathering<number, number>(
          {
            together: (reqs) => {
              if (reqs.some((r) => faulty[r])) throw new Error("one failed");
              return reqs.map((r) => r * 10);
            },
            alone: (r) => {
              if (faulty[r]) throw new Error(`call ${r} failed`);
              return r * 10;
            },
          },
          turns.turn,
        );
        const answers = faulty.map((_, i) =>
          g.submit(i).then(
            (v) => ({ v }),
            (e: Error) => ({ e: e.message }),
          ),
        );
        await turns.release();
        expect(await Promise.all(answers)).toEqual(faulty.map((bad, i) => (bad ? { e: `call ${i} failed` } : { v: i * 10 })));
      }),
    );
  });

  it("waits a real turn by default: calls made in the same task gather", async () => {
    const seen: number[][] = [];
    const g = new CallGathering<number, number>({ together: (reqs) => (seen.push(reqs), reqs), alone: (r) => (seen.push([r]), r) });
    expect(await Promise.all([g.submit(1), g.submit(2)])).toEqual([1, 2]);
    expect(seen).toEqual([[1, 2]]);
  });
});
