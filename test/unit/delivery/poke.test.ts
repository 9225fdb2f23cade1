import { afterEach, describe, expect, it, vi } from "vitest";
import { MIN_POKE_INTERVAL_MS, NO_DESTINATIONS_TTL_MS, forgetNoDestinations, pokeDestinations, type PokeEnv } from "../../../src/delivery/poke";

/** The Coordinator's poke with a stand-in index object: what reaches it, and what the commit path pays. */
function harness(members: () => number, fail = false) {
  const calls: { stream: string; seq: number }[] = [];
  const pending: Promise<unknown>[] = [];
  const env = {
    DESTINATION: {
      getByName: (name: string) => ({
        pokeMembers: async (stream: string, seq: number) => {
          expect(name).toBe(stream);
          calls.push({ stream, seq });
          if (fail) throw new Error("index unavailable");
          return members();
        },
      }),
    },
  } satisfies PokeEnv;
  const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p) };
  let asked = 0;
  const poke = (stream: string, seq: number) => pokeDestinations(ctx, env, stream, () => (asked++, seq));
  const settle = async () => {
    await vi.runAllTimersAsync();
    await Promise.all(pending);
  };
  return { calls, poke, settle, asked: () => asked };
}

describe("pokeDestinations", () => {
  afterEach(() => vi.useRealTimers());

  it("sends at once, then at most one trailing poke per interval, with the highest seq", async () => {
    vi.useFakeTimers();
    const h = harness(() => 1);
    h.poke("s1", 1);
    await h.settle();
    expect(h.calls).toEqual([{ stream: "s1", seq: 1 }]);
    h.poke("s1", 2);
    h.poke("s1", 3);
    h.poke("s1", 4);
    await h.settle();
    expect(h.calls).toEqual([
      { stream: "s1", seq: 1 },
      { stream: "s1", seq: 4 },
    ]);
    vi.advanceTimersByTime(MIN_POKE_INTERVAL_MS);
    h.poke("s1", 5);
    await h.settle();
    expect(h.calls.at(-1)).toEqual({ stream: "s1", seq: 5 });
  });

  it("leaves a stream without destinations alone for a while, without even asking its seq", async () => {
    vi.useFakeTimers();
    let members = 0;
    const h = harness(() => members);
    h.poke("s2", 1);
    await h.settle();
    expect(h.calls).toHaveLength(1);
    const asked = h.asked();
    vi.advanceTimersByTime(MIN_POKE_INTERVAL_MS);
    h.poke("s2", 2);
    await h.settle();
    expect(h.calls).toHaveLength(1);
    expect(h.asked()).toBe(asked);
    // A destination added in this isolate: pokes go out again at once.
    members = 1;
    forgetNoDestinations("s2");
    h.poke("s2", 3);
    await h.settle();
    expect(h.calls.at(-1)).toEqual({ stream: "s2", seq: 3 });
    // Elsewhere: after the TTL.
    members = 0;
    vi.advanceTimersByTime(MIN_POKE_INTERVAL_MS);
    h.poke("s2", 4);
    await h.settle();
    vi.advanceTimersByTime(NO_DESTINATIONS_TTL_MS + 1);
    h.poke("s2", 5);
    await h.settle();
    expect(h.calls.map((c) => c.seq)).toEqual([1, 3, 4, 5]);
  });

  it("never throws into the commit path, and skips a stream with no commits", async () => {
    vi.useFakeTimers();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const h = harness(() => 1, true);
    expect(() => h.poke("s3", 1)).not.toThrow();
    await h.settle();
    expect(warn).toHaveBeenCalledOnce();
    h.poke("s4", 0);
    await h.settle();
    expect(h.calls.map((c) => c.stream)).toEqual(["s3"]);
    warn.mockRestore();
  });
});
