/**
 * Spark's trigger at the edge: one run at a time per stream, and whatever is
 * submitted while a run is going becomes the next run, as one group. A lone
 * request runs at once, alone; under load, requests coalesce, so the fixed
 * cost of a run (a call per partition, the R2 objects, the commit) is paid per
 * group instead of per request.
 *
 * No Cloudflare imports: the Coordinator drives it, the tests drive it with
 * fake runs.
 */
export interface BatcherOptions<In> {
  /** the most weight (rows) one run takes; a single heavier item runs alone */
  maxWeight: number;
  weigh: (item: In) => number;
  /** the most items one run takes (a run's records grow with its items) */
  maxItems?: number;
  /**
   * Off by default. When set, the batcher waits `wait()` (one macrotask of
   * the host), and again until `quiet` waits in a row brought nothing, at
   * most `turns` times, so that requests on their way join the next run instead of
   * forming runs of their own: before a run that no commit fixed, when the
   * run before it took more than one item and ended less than BURST_GAP_MS
   * before (requests are arriving concurrently), and when a run of one that queued behind another asks,
   * before its commit fixes the next run (gatherNext). A lone request still
   * starts and commits at once, and requests queued while a run goes still
   * form the next run.
   */
  coalesce?: {
    wait: () => Promise<void>;
    turns: number;
    /** it stops after this many waits in a row in which nothing arrived (default 1) */
    quiet?: number;
  };
}

/** A run that follows another run of several items by less than this waits (options.coalesce); later, requests are no longer arriving together. */
const BURST_GAP_MS = 100;

/** An answer of a run that fails its item alone: the item is rejected with `error`, the others of its run answered as usual. */
export class ItemFailed {
  constructor(readonly error: unknown) {}
}

interface Pending<In, Out> {
  item: In;
  resolve: (out: Out) => void;
  reject: (err: unknown) => void;
}

export class MicroBatcher<In, Out> {
  private queue: Pending<In, Out>[] = [];
  private running = false;
  /** the next run, taken early by takeNext() */
  private reserved: Pending<In, Out>[] | null = null;
  /** how many items the last run took (options.coalesce waits only after one of more than one) */
  private lastRun = 0;
  /** when the last run ended (Date.now()) */
  private lastEnd = -Infinity;
  /** whether the run going queued behind another (requests overlap: options.coalesce may wait before its commit) */
  private chained = false;
  /** work to run between two runs (exclusive()), in order */
  private between: (() => Promise<void>)[] = [];

  /**
   * `run` gets a group in submission order and answers each item, in order. A
   * throw fails the whole group: every item in it is rejected with the error;
   * an ItemFailed answer rejects its item alone.
   */
  constructor(
    private readonly run: (items: In[]) => Promise<(Out | ItemFailed)[]>,
    private readonly options: BatcherOptions<In>,
  ) {}

  submit(item: In): Promise<Out> {
    return this.submitAll([item])[0];
  }

  /** Items that arrive together (one call carrying several requests) queue together, so they share a run. */
  submitAll(items: readonly In[]): Promise<Out>[] {
    const answers = items.map((item) => new Promise<Out>((resolve, reject) => this.queue.push({ item, resolve, reject })));
    if (!this.running && items.length > 0) void this.drain();
    return answers;
  }

  /**
   * From inside a run: fixes the next run now and returns its items (none:
   * nothing waits), so that the run's commit can record their begin too.
   */
  takeNext(): In[] {
    if (!this.reserved && (!this.running || this.queue.length === 0)) return [];
    this.reserved ??= this.nextGroup();
    return this.reserved.map((p) => p.item);
  }

  /**
   * From inside a run of one item that queued behind another run, before its
   * commit fixes the next run (takeNext): waits while requests keep arriving
   * (options.coalesce), so that the next run holds them. Overlapping
   * producers with large batches otherwise settle into runs of one each;
   * sequential ones (nothing queued behind) never wait.
   */
  async gatherNext(): Promise<void> {
    const c = this.options.coalesce;
    if (c && this.running && this.lastRun === 1 && this.chained) await this.gather(c);
  }

  /**
   * Runs `fn` between two runs, never during one: at once if none is going,
   * else once the current run (and its commit) is done, before the next
   * group is taken. Items submitted meanwhile wait, and run after it. A
   * rescale's switch (src/rescale/) changes the partition map here, so that
   * no run is planned under one map and applied under another.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const done = new Promise<T>((resolve, reject) => this.between.push(() => fn().then(resolve, reject)));
    if (!this.running) void this.drain();
    return done;
  }

  /** Items waiting for the next run. */
  get waiting(): number {
    return this.queue.length + (this.reserved?.length ?? 0);
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let n = 0; this.queue.length > 0 || this.reserved || this.between.length > 0; n++) {
        // Work between runs goes first: after the run before it, before the next group is taken.
        while (this.between.length > 0) await this.between.shift()!();
        if (this.queue.length === 0 && !this.reserved) break;
        this.chained = n > 0;
        const c = this.options.coalesce;
        if (c && !this.reserved && this.lastRun > 1 && Date.now() - this.lastEnd < BURST_GAP_MS) await this.gather(c);
        const group = this.reserved ?? this.nextGroup();
        this.reserved = null;
        this.lastRun = group.length;
        try {
          const outs = await this.run(group.map((p) => p.item));
          group.forEach((p, i) => {
            const out = outs[i];
            if (out instanceof ItemFailed) p.reject(out.error);
            else p.resolve(out);
          });
        } catch (err) {
          for (const p of group) p.reject(err);
        }
        this.lastEnd = Date.now();
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Waits while requests keep arriving (options.coalesce), up to its turns
   * and one run's weight. What it costs: a run begins, or a run of one
   * commits, a few macrotasks (about a millisecond each) later; what it
   * saves: the fixed cost of each run (a call per partition, its commit, its
   * rows) is shared by more requests.
   */
  private async gather(c: NonNullable<BatcherOptions<In>["coalesce"]>): Promise<void> {
    const quiet = c.quiet ?? 1;
    const full = () => this.queuedWeight() >= this.options.maxWeight || this.queue.length >= (this.options.maxItems ?? Infinity);
    for (let i = 0, still = 0; i < c.turns && still < quiet && !full(); i++) {
      const n = this.queue.length;
      await c.wait();
      still = this.queue.length === n ? still + 1 : 0;
    }
  }

  private queuedWeight(): number {
    let w = 0;
    for (const p of this.queue) w += this.options.weigh(p.item);
    return w;
  }

  private nextGroup(): Pending<In, Out>[] {
    let weight = 0;
    let n = 0;
    while (n < this.queue.length) {
      const w = this.options.weigh(this.queue[n].item);
      if (n > 0 && (weight + w > this.options.maxWeight || n >= (this.options.maxItems ?? Infinity))) break;
      weight += w;
      n++;
    }
    return this.queue.splice(0, n);
  }
}
