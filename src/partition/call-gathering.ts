/**
 * Calls that reach a partition within one turn of its event loop, judged
 * together in one storage transaction. Each shard of a stream runs its own
 * micro-batches against the same partitions, so a partition meets several
 * shards' calls at once; judged together they write the meta row (and pay
 * the transaction) once instead of once each (issue #31: the per-micro-batch
 * writes shared across shards). A call still gets its own answer: should the
 * calls together fail, each is judged again alone, and the one at fault
 * fails by itself.
 */
export class CallGathering<Req, Res> {
  private waiting: { req: Req; resolve: (r: Res) => void; reject: (e: unknown) => void }[] = [];

  constructor(
    private readonly judge: {
      /** the calls in order, in one transaction; throws if any does (nothing of them is kept) */
      together(reqs: Req[]): Res[];
      alone(req: Req): Res;
    },
    /** a turn of the event loop: calls delivered meanwhile join the first */
    private readonly turn: () => Promise<void> = () => new Promise((resolve) => setTimeout(resolve, 0)),
  ) {}

  submit(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.waiting.push({ req, resolve, reject });
      if (this.waiting.length === 1) void this.turn().then(() => this.flush());
    });
  }

  private flush(): void {
    const calls = this.waiting.splice(0);
    if (calls.length > 1) {
      try {
        const answers = this.judge.together(calls.map((c) => c.req));
        calls.forEach((c, i) => c.resolve(answers[i]));
        return;
      } catch {
        // one of them failed: each alone, so that each gets its own answer
      }
    }
    for (const c of calls) {
      try {
        c.resolve(this.judge.alone(c.req));
      } catch (e) {
        c.reject(e);
      }
    }
  }
}
