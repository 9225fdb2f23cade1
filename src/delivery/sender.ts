import { laneStub, type Env } from "../env";
import { judge, type Verdict } from "./attempt";
import type { AttemptRecord } from "./attempts-log";
import { LANE_CONNECTIONS } from "./config";
import { planDispatch, rowKey } from "./dispatch";
import { messageBody, signedHeaders, webhookId } from "./message";
import { recordOutcomes, type Outcome } from "./outcomes";
import type { LaneAnswer } from "./protocol";
import { RateCap } from "./rate-cap";
import { readAhead } from "./read-ahead";
import { QUEUE_BATCH, sendQueueChunk } from "./send-queue";
import type { SigningKeys } from "./signing";
import { MAX_PENDING, type DestRow, type PendingRow } from "./store";
import type { DestinationTables } from "./tables";
import { checkDestinationUrl } from "./url";

/** How long one alarm invocation keeps sending before it re-arms (its rows in flight finish first). */
const RUN_MS = 30_000;
/** An invocation with nothing in flight waits this long at most for a row to come due, or it ends and re-arms. */
const LINGER_MS = 2_000;
/** Due rows looked at per dispatch, per idle lane (some are in flight or on a busy lane). */
const LOOK_AHEAD = 4;

/**
 * A destination's sending, one alarm invocation long: it reads committed
 * rows ahead (./read-ahead.ts) and keeps every lane busy. A lane takes up to
 * LANE_CONNECTIONS rows (a queue destination's: one sendBatch) whenever it has
 * none in flight; an ordered entity has at most one row in flight, its oldest;
 * maxPerSecond is held over all lanes (./rate-cap.ts); each answer is
 * recorded as it comes (./outcomes.ts). A row is in flight only in this
 * invocation's memory: after a crash it is simply sent again, under its id.
 */
export class Sender {
  private cap: RateCap | null = null;
  private wake: (() => void) | null = null;
  private mustRead = true;
  /** the shard a read starts with (./read-ahead.ts), turned at each read */
  private turn = 0;

  constructor(
    private readonly env: Env,
    private readonly storage: DurableObjectStorage,
    private readonly t: DestinationTables,
    private readonly keys: SigningKeys,
  ) {}

  /** New commits were reported: a waiting invocation reads them now. */
  poke(): void {
    this.wake?.();
  }

  /** The cursor moved back (a replay): read again now, marks or not. */
  reread(): void {
    this.mustRead = true;
    this.wake?.();
  }

  async run(): Promise<void> {
    const deadline = Date.now() + RUN_MS;
    const flying = new Map<number, Promise<void>>();
    const rows = new Set<string>();
    const entities = new Set<string>();
    let reading: Promise<void> | null = null;
    let readError: unknown = null;
    this.mustRead = true;
    for (;;) {
      const d = this.t.record.read();
      if (!d || d.paused) break;
      let now = Date.now();
      const open = now < deadline;
      // Each invocation reads once whatever the marks say (a replay rewound the cursor, the stream was re-created), then as commits are reported.
      const unread = this.mustRead ? "all" : this.t.marks.unread(d.cursors);
      if (open && !reading && readError === null && (unread === "all" || unread.length > 0) && this.t.pending.count() < MAX_PENDING) {
        this.mustRead = false;
        reading = readAhead(this.env, this.storage, this.t, d, unread, this.turn++)
          .catch((e) => void (readError = e))
          .finally(() => void (reading = null));
      }
      if (open) {
        const cap = this.capFor(d, now);
        const idle = d.config.lanes - [...flying.keys()].filter((l) => l < d.config.lanes).length;
        const room = cap ? cap.room(now) : Infinity;
        if (idle > 0 && room > 0) {
          const perLane = d.config.type === "http" ? LANE_CONNECTIONS : QUEUE_BATCH;
          const due = this.t.pending.due(now, Math.min(MAX_PENDING, rows.size + idle * perLane * LOOK_AHEAD), d.cursors.length > 1);
          const plan = planDispatch(due, { rows, entities, lanes: new Set(flying.keys()) }, d.config.lanes, perLane, room);
          for (const [lane, chunk] of plan) {
            cap?.take(chunk.length, now);
            for (const r of chunk) {
              rows.add(rowKey(r));
              if (r.entity !== null) entities.add(r.entity);
            }
            const call = this.send(d, lane, chunk).finally(() => {
              for (const r of chunk) {
                rows.delete(rowKey(r));
                if (r.entity !== null) entities.delete(r.entity);
              }
              flying.delete(lane);
            });
            flying.set(lane, call);
          }
        }
      }
      now = Date.now();
      const waits: Promise<unknown>[] = [...flying.values()];
      if (reading) waits.push(reading);
      // Rows due now wait for a flight to end (a busy lane, an entity in flight) or for the cap's room; retries for their time.
      const later = open ? this.t.pending.nextDueAfter(now) : null;
      const capped = open && this.cap !== null && this.cap.room(now) <= 0 ? this.cap.nextAt(now) : null;
      const timerAt = Math.min(later ?? Infinity, capped ?? Infinity);
      if (waits.length === 0 && !(open && timerAt - now <= LINGER_MS)) break;
      if (open && timerAt < deadline) waits.push(sleep(Math.max(1, timerAt - now)));
      if (open) waits.push(new Promise<void>((resolve) => (this.wake = resolve)));
      await Promise.race(waits);
      this.wake = null;
    }
    // Paused or gone meanwhile: what is in flight is still recorded before the invocation ends.
    await Promise.allSettled([...flying.values()]);
    if (readError !== null) throw readError;
  }

  /** The cap as configured now (a changed maxPerSecond starts a new window, full). */
  private capFor(d: DestRow, now: number): RateCap | null {
    const perSecond = d.config.maxPerSecond;
    if (perSecond === null) return (this.cap = null);
    if (this.cap?.perSecond !== perSecond) this.cap = new RateCap(perSecond, now);
    return this.cap;
  }

  /** Sends one lane's rows and records how each went. */
  private async send(d: DestRow, lane: number, chunk: PendingRow[]): Promise<void> {
    const outcomes = d.config.type === "http" ? await this.postOnLane(d, d.config, lane, chunk) : await sendQueueChunk(this.env, d, d.config.binding, chunk);
    this.storage.transactionSync(() => recordOutcomes(this.t, d, outcomes, Date.now()));
  }

  private async postOnLane(d: DestRow, config: Extract<DestRow["config"], { type: "http" }>, lane: number, chunk: PendingRow[]): Promise<Outcome[]> {
    const at = Date.now();
    // Checked again before each send: a URL stored under older rules (or a loopback one once the var is off) is never fetched.
    const target = checkDestinationUrl(config.url, this.env.ALLOW_LOOPBACK_DESTINATIONS === "true");
    if (!target.ok) {
      const error = `not sent: the destination's url is refused (${target.reason}); PUT it again with a public https:// URL`;
      return chunk.map((row) => ({ row, verdict: { kind: "retry", error, retryAfterMs: null }, attempt: { at, ms: 0, status: null, error } }));
    }
    const secrets = await this.keys.open(d);
    const requests = await Promise.all(
      chunk.map(async (r) => {
        const id = webhookId(d.stream, r.seq, r.idx, d.incarnation);
        const body = messageBody(JSON.parse(r.row), r.committed_at);
        return { url: target.url, headers: await signedHeaders(secrets, id, Date.now(), body), body, timeoutMs: config.timeoutMs };
      }),
    );
    let answers: LaneAnswer[];
    try {
      answers = await laneStub(this.env, d.stream, d.name, lane).post(requests);
    } catch (e) {
      const error = `lane ${lane} failed: ${(e as Error)?.message ?? String(e)}`;
      answers = chunk.map(() => ({ at, ms: Date.now() - at, status: null, retryAfter: null, error }));
    }
    return chunk.map((row, i) => outcomeOf(row, answers[i]));
  }
}

function outcomeOf(row: PendingRow, a: LaneAnswer): Outcome {
  const verdict: Verdict = judge(a.status === null ? { error: a.error ?? "no answer" } : { status: a.status, retryAfter: a.retryAfter }, Date.now());
  const attempt: AttemptRecord = { at: a.at, ms: a.ms, status: a.status, error: verdict.kind === "delivered" ? null : verdict.error };
  return { row, verdict, attempt };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
