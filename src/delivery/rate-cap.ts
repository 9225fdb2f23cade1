/**
 * maxPerSecond: at most `perSecond` attempts start in any window of
 * WINDOW_MS (a second and a margin, so that the jitter between the sender's
 * start and the handler's arrival cannot put more than `perSecond` into one of
 * the handler's seconds). A sliding log of start times; pure (the caller
 * passes the clock). A fresh cap (a restarted sender) starts full, as if
 * `perSecond` attempts had just started: a restart can never burst past it.
 */
export const WINDOW_MS = 1_100;

export class RateCap {
  private readonly starts: number[];

  constructor(
    readonly perSecond: number,
    now: number,
  ) {
    this.starts = Array.from({ length: perSecond }, () => now);
  }

  /** How many attempts may start at `now`. */
  room(now: number): number {
    this.expire(now);
    return this.perSecond - this.starts.length;
  }

  /** `n` attempts start at `now` (at most room(now)). */
  take(n: number, now: number): void {
    for (let i = 0; i < n; i++) this.starts.push(now);
  }

  /** When the next attempt may start (now, if there is room). */
  nextAt(now: number): number {
    this.expire(now);
    return this.starts.length < this.perSecond ? now : this.starts[0] + WINDOW_MS;
  }

  private expire(now: number): void {
    while (this.starts.length > 0 && this.starts[0] + WINDOW_MS <= now) this.starts.shift();
  }
}
