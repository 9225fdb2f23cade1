/**
 * A small per-isolate cache with a size bound and an age bound. Requests can
 * name any stream, source or token, so every cache keyed by what a caller
 * sends must be bounded: the least recently used entry goes first.
 */
export class TtlCache<V> {
  private entries = new Map<string, { at: number; value: V }>();

  constructor(
    readonly maxEntries: number,
    readonly maxAgeMs: number,
  ) {}

  /** The value if it is younger than `maxAgeMs` (or the given age), else undefined. */
  get(key: string, now: number, maxAgeMs = this.maxAgeMs): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (now - e.at > maxAgeMs) {
      if (now - e.at > this.maxAgeMs) this.entries.delete(key);
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks it most recently used.
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  set(key: string, value: V, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { at: now, value });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
