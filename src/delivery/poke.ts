import { seqBase } from "../stream/shards";

/**
 * The Coordinator's one hook into delivery: after a commit (and in its alarm,
 * which survives a crash between the commit and the poke) it tells the
 * stream's destinations how far the commits go. Never awaited on the ingest
 * path and never throws. Per isolate, a stream found to have no destinations
 * is not asked again for NO_DESTINATIONS_TTL_MS, and pokes for one shard of a
 * stream are sent at most every MIN_POKE_INTERVAL_MS (the last one trailing), so
 * delivery adds no Durable Object call per commit to a busy stream.
 */
export const NO_DESTINATIONS_TTL_MS = 2_000;
export const MIN_POKE_INTERVAL_MS = 100;

interface StreamPokes {
  noneUntil: number;
  lastSentAt: number;
  /** the highest seq waiting for the trailing poke */
  waiting: number | null;
}
/** stream → shard → its pokes (each shard's Coordinator pokes for its own commits, src/stream/shards.ts) */
const pokes = new Map<string, Map<number, StreamPokes>>();

/** What the poke needs of the Worker's env (the DESTINATION namespace; structural, so the pure tests need no workerd types). */
export interface PokeEnv {
  DESTINATION?: { getByName(name: string): { pokeMembers(stream: string, lastSeq: number, at: number): Promise<number> } };
}

/** `seq` (shard `shard`'s last commit) is asked only when a poke goes out: a stream without destinations pays no statement per commit. */
export function pokeDestinations(ctx: { waitUntil(p: Promise<unknown>): void }, env: PokeEnv, stream: string, seq: () => number, shard = 0): void {
  if (!env.DESTINATION) return;
  const now = Date.now();
  const shards = pokes.get(stream) ?? new Map<number, StreamPokes>();
  pokes.set(stream, shards);
  const s = shards.get(shard) ?? { noneUntil: 0, lastSentAt: 0, waiting: null };
  shards.set(shard, s);
  if (s.noneUntil > now) return;
  const lastSeq = seq();
  if (lastSeq <= seqBase(shard)) return; // nothing committed in this shard yet
  if (s.waiting !== null) {
    s.waiting = Math.max(s.waiting, lastSeq);
    return;
  }
  const wait = s.lastSentAt + MIN_POKE_INTERVAL_MS - now;
  s.waiting = lastSeq;
  const send = async () => {
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const upTo = s.waiting!;
    s.waiting = null;
    s.lastSentAt = Date.now();
    try {
      // The stream's index object (see ./destination.ts), named by the stream alone.
      const n = await env.DESTINATION!.getByName(stream).pokeMembers(stream, upTo, Date.now());
      if (n === 0) s.noneUntil = Date.now() + NO_DESTINATIONS_TTL_MS;
    } catch (e) {
      console.warn(`delivery: poke of ${stream}'s destinations failed (the Coordinator's next alarm pokes again): ${(e as Error).message}`);
    }
  };
  ctx.waitUntil(send());
}

/** A destination was added: pokes reach the stream at once again (this isolate). */
export function forgetNoDestinations(stream: string): void {
  for (const s of pokes.get(stream)?.values() ?? []) s.noneUntil = 0;
}
