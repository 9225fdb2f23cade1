/**
 * A small quantile sketch for non-negative values (durations in ms): a
 * log-bucketed histogram in the manner of DDSketch. A positive value v goes to
 * bucket i = ceil(log_γ v) with γ = (1 + α) / (1 − α), which holds (γ^(i−1), γ^i];
 * the bucket answers 2γ^i / (γ + 1), within α of every value in it. So every
 * quantile is within relative error α (1% by default) of the exact one, and the
 * size is the number of occupied buckets: about 115 per factor of 10 at 1%, so
 * at most ~1,200 for durations from 1 ms to 100 days, however many values.
 *
 * Zero (an event in order, a copy at the same time) is counted apart, exactly.
 * Sketches with the same α merge by adding buckets, and serialize to JSON, so a
 * Durable Object can keep one per source.
 */

export const DEFAULT_RELATIVE_ACCURACY = 0.01;

/**
 * The 0-based rank of quantile `q` among `n` values by the nearest-rank method,
 * ⌈q·n⌉ (1-based): at least a share q of the values are ≤ it, so a small
 * history's p99.9 is its maximum, never a value below a larger one.
 */
export function quantileRank(n: number, q: number): number {
  return Math.min(n - 1, Math.max(0, Math.ceil(q * n - 1e-9) - 1));
}

/** The exact quantile `q` of `sorted` (ascending) that the sketch approximates. */
export function exactQuantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[quantileRank(sorted.length, q)];
}

export interface SketchBucket {
  /** exclusive, except for the zero bucket (0, 0) */
  lower: number;
  upper: number;
  count: number;
}

export interface SketchJson {
  alpha: number;
  zero: number;
  min: number | null;
  max: number | null;
  /** [bucket index, count], ascending by index */
  buckets: [number, number][];
}

export class QuantileSketch {
  readonly alpha: number;
  private readonly gamma: number;
  private readonly logGamma: number;
  private readonly counts = new Map<number, number>();
  private zeros = 0;
  private total = 0;
  private lo = Infinity;
  private hi = -Infinity;

  constructor(alpha: number = DEFAULT_RELATIVE_ACCURACY) {
    if (!(alpha > 0 && alpha < 1)) throw new RangeError("the relative accuracy must be between 0 and 1");
    this.alpha = alpha;
    this.gamma = (1 + alpha) / (1 - alpha);
    this.logGamma = Math.log(this.gamma);
  }

  /** values added */
  get count(): number {
    return this.total;
  }
  /** exact */
  get min(): number | null {
    return this.total === 0 ? null : this.lo;
  }
  /** exact */
  get max(): number | null {
    return this.total === 0 ? null : this.hi;
  }
  /** values equal to 0, exactly */
  get zeroCount(): number {
    return this.zeros;
  }
  /** occupied buckets (the memory it holds) */
  get size(): number {
    return this.counts.size + (this.zeros > 0 ? 1 : 0);
  }

  add(value: number, count = 1): void {
    if (!(value >= 0) || !Number.isFinite(value)) throw new RangeError(`a sketch takes finite values ≥ 0, not ${value}`);
    if (!(count > 0) || !Number.isInteger(count)) throw new RangeError("count must be a positive whole number");
    if (value === 0) this.zeros += count;
    else {
      const i = this.indexOf(value);
      this.counts.set(i, (this.counts.get(i) ?? 0) + count);
    }
    this.total += count;
    if (value < this.lo) this.lo = value;
    if (value > this.hi) this.hi = value;
  }

  /** Adds another sketch's values (same α). */
  merge(other: QuantileSketch): void {
    if (other.alpha !== this.alpha) throw new RangeError("sketches of different accuracy do not merge");
    for (const [i, n] of other.counts) this.counts.set(i, (this.counts.get(i) ?? 0) + n);
    this.zeros += other.zeros;
    this.total += other.total;
    this.lo = Math.min(this.lo, other.lo);
    this.hi = Math.max(this.hi, other.hi);
  }

  /**
   * Keeps at most `maxBuckets` non-zero buckets by folding the lowest into the
   * lowest one kept (DDSketch's "collapsing lowest"): counts, the top quantiles
   * and the exact max are unchanged; only small values read as larger, which a
   * delay bound can afford. Bounds a sketch kept forever (one per source).
   */
  capBuckets(maxBuckets: number): void {
    if (!(maxBuckets >= 1) || this.counts.size <= maxBuckets) return;
    const indexes = this.sortedIndexes();
    const cut = indexes.length - maxBuckets;
    const into = indexes[cut];
    let folded = 0;
    for (const i of indexes.slice(0, cut)) {
      folded += this.counts.get(i)!;
      this.counts.delete(i);
    }
    this.counts.set(into, this.counts.get(into)! + folded);
  }

  /** The nearest-rank quantile q (see quantileRank), within relative error α; null when empty. */
  quantile(q: number): number | null {
    const i = this.bucketOfQuantile(q);
    if (i === null || i === "zero") return i === null ? null : 0;
    if (q === 0) return this.lo;
    if (q === 1) return this.hi;
    return Math.min(this.hi, Math.max(this.lo, this.valueOf(i)));
  }

  /**
   * A bound at or above the exact quantile q, at most a factor γ ≈ 1 + 2α above
   * it: the top of its bucket (or the exact max). What a delay must cover.
   */
  quantileUpperBound(q: number): number | null {
    const i = this.bucketOfQuantile(q);
    if (i === null || i === "zero") return i === null ? null : 0;
    // a hair of slack: log() may put a value just above γ^i into bucket i
    return Math.min(this.hi, Math.pow(this.gamma, i) * (1 + 1e-9));
  }

  private bucketOfQuantile(q: number): number | "zero" | null {
    if (!(q >= 0 && q <= 1)) throw new RangeError("q must be within [0, 1]");
    if (this.total === 0) return null;
    const rank = quantileRank(this.total, q);
    let seen = this.zeros;
    if (rank < seen) return "zero";
    const indexes = this.sortedIndexes();
    for (const i of indexes) {
      seen += this.counts.get(i)!;
      if (rank < seen) return i;
    }
    return indexes[indexes.length - 1];
  }

  /** Values counted at or below `value` (exact for 0, otherwise to the bucket containing it). */
  countAtMost(value: number): number {
    if (value < 0) return 0;
    let n = this.zeros;
    if (value === 0) return n;
    const last = this.indexOf(value);
    for (const [i, c] of this.counts) if (i <= last) n += c;
    return n;
  }

  /** The occupied buckets, ascending; the zero bucket first when there are zeros. */
  buckets(): SketchBucket[] {
    const out: SketchBucket[] = this.zeros > 0 ? [{ lower: 0, upper: 0, count: this.zeros }] : [];
    for (const i of this.sortedIndexes()) out.push({ lower: Math.pow(this.gamma, i - 1), upper: Math.pow(this.gamma, i), count: this.counts.get(i)! });
    return out;
  }

  toJSON(): SketchJson {
    return {
      alpha: this.alpha,
      zero: this.zeros,
      min: this.min,
      max: this.max,
      buckets: this.sortedIndexes().map((i) => [i, this.counts.get(i)!]),
    };
  }

  static fromJSON(json: SketchJson): QuantileSketch {
    const s = new QuantileSketch(json.alpha);
    s.zeros = json.zero;
    s.total = json.zero;
    for (const [i, n] of json.buckets) {
      s.counts.set(i, n);
      s.total += n;
    }
    if (s.total > 0) {
      s.lo = json.min ?? 0;
      s.hi = json.max ?? 0;
    }
    return s;
  }

  private indexOf(value: number): number {
    return Math.ceil(Math.log(value) / this.logGamma);
  }
  private valueOf(index: number): number {
    return (2 * Math.pow(this.gamma, index)) / (this.gamma + 1);
  }
  private sortedIndexes(): number[] {
    return [...this.counts.keys()].sort((a, b) => a - b);
  }
}
