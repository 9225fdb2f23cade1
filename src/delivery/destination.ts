import { coordinatorStub, destinationStub, type Env } from "../env";
import type { Migration } from "../storage/migrations";
import { SqliteObject } from "../storage/sqlite-object";

// The stubs live with the others in src/env.ts; still importable from here.
export { destinationIndex, destinationStub } from "../env";
import { committedPages, readParts } from "../output/reader";
import { openSecret, sealSecret } from "../credentials/sealing";
import { deliveredSeq, describeError, judge, type Answer, type Verdict } from "./attempt";
import { DEFAULT_ROTATION_OVERLAP_MS, type DestinationConfig } from "./config";
import { messageBody, newSigningSecret, queueMessage, signedHeaders, webhookId } from "./message";
import { nextAttempt } from "./schedule";
import { checkDestinationUrl } from "./url";
import { afterRotation, signingSecrets } from "./secrets";
import { INSERT_CHARS, MAX_ROW_BYTES, slices, tooLarge } from "./rows";
import {
  commitTime,
  DEST_INCARNATION,
  DESTINATION_TABLES,
  MAX_DEAD,
  MAX_MARKS,
  MAX_PENDING,
  readDest,
  type DestRow,
  type PendingRow,
  type SealedSecret,
} from "./store";
import type { DestinationStatus } from "./status";
import type { ConfigureResult, DeadRow, DestinationRpc } from "./protocol";

export type { DestinationStatus };

/** Rows sent per alarm round (each a subrequest); the alarm re-arms for the rest. */
const ROUND_ROWS = 50;
/** HTTP attempts in flight at once within a round. */
const CONCURRENCY = 8;
/** Commits asked of the Coordinator per read. */
const COMMITS_PER_READ = 20;
/** Queue messages per sendBatch (the Queues limit is 100 messages and 256 KB). */
const QUEUE_BATCH = 100;
const QUEUE_BATCH_BYTES = 200 * 1024;
/** Room for the message's other fields within the Queues limit of 128 KB per message. */
const MAX_QUEUE_ROW_BYTES = 120 * 1024;

export type { ConfigureResult, DeadRow };

/** The Destination's storage layouts, oldest first (src/storage/migrations.ts). */
export const DESTINATION_MIGRATIONS: readonly Migration[] = [
  { version: 1, does: "the destination, its pending and dead rows, commit-time marks, the index's members", up: (sql) => sql.exec(DESTINATION_TABLES) },
  { version: 2, does: "dest.incarnation: the stream's incarnation, which its webhook-ids carry", up: (sql) => sql.exec(DEST_INCARNATION) },
];

/**
 * One sender per destination, named `{stream}/{name}`, driven by its alarm:
 * it reads committed output through the Coordinator's commit index (rows still
 * in the outbox or in R2), keeps at most MAX_PENDING of them, and sends each
 * until it is delivered or its retryFor runs out (then the dead lane). Every
 * step is recorded before the next, so a crash or restart resends at most the
 * rows in flight, under the same id. The object named `{stream}` is the
 * stream's index: the names of its destinations, which the Coordinator's
 * poke fans out to. A slow receiver delays only its own object.
 */
export class Destination extends SqliteObject<Env> implements DestinationRpc {
  /** opened signing secrets by sealed text: opening costs an HKDF + AES per secret */
  private readonly opened = new Map<string, string>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: DESTINATION_MIGRATIONS, countAs: null });
  }

  // ---- the stream's index (the object named `{stream}`) ----

  /** Lists `name`, unless the stream already has `max` others (a storage read and write with no await between: no race). */
  addMember(name: string, max = Infinity): "added" | "present" | "full" {
    if (this.sql.exec("SELECT 1 FROM members WHERE name = ?", name).toArray().length > 0) return "present";
    if (this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM members").one().n >= max) return "full";
    this.sql.exec("INSERT INTO members (name) VALUES (?)", name);
    return "added";
  }

  removeMember(name: string): void {
    this.sql.exec("DELETE FROM members WHERE name = ?", name);
  }

  members(): string[] {
    return this.sql
      .exec<{ name: string }>("SELECT name FROM members ORDER BY name")
      .toArray()
      .map((r) => r.name);
  }

  /** The stream is being deleted: every destination goes with it (its pending rows, dead lane, attempts and secrets). */
  async removeMembers(stream: string): Promise<number> {
    const names = this.members();
    await Promise.all(names.map((n) => destinationStub(this.env, stream, n).remove()));
    // Only the names removed: one added meanwhile (a PUT racing the DELETE) stays listed, so a later DELETE finds it.
    for (const n of names) this.removeMember(n);
    return names.length;
  }

  /** Tells each destination of the stream that commits up to `lastSeq` exist (committed at `at`). */
  async pokeMembers(stream: string, lastSeq: number, at: number): Promise<number> {
    const names = this.members();
    await Promise.all(
      names.map((n) =>
        destinationStub(this.env, stream, n)
          .poke(lastSeq, at)
          .catch(() => undefined),
      ),
    );
    return names.length;
  }

  // ---- one destination (the object named `{stream}/{name}`) ----

  /** Creates or updates the destination; a new http destination gets its signing secret, answered once. */
  async configure(
    stream: string,
    name: string,
    config: DestinationConfig,
    at: { epoch: string; incarnation: number; lastSeq: number },
  ): Promise<ConfigureResult> {
    const now = Date.now();
    const current = readDest(this.sql);
    let secret: string | null = null;
    let secrets = current?.secrets ?? [];
    if (config.type === "http" && secrets.length === 0) {
      secret = newSigningSecret();
      secrets = [await this.seal(stream, name, secret, now)];
    }
    if (!current) {
      // A new destination starts with the next commit (replay reaches back).
      this.sql.exec(
        "INSERT INTO dest (id, stream, name, config, secrets, created_at, epoch, incarnation, read_seq, read_index) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
        stream,
        name,
        JSON.stringify(config),
        JSON.stringify(secrets),
        now,
        at.epoch,
        at.incarnation,
        at.lastSeq,
      );
    } else {
      // PUT again also resumes a paused destination.
      this.sql.exec("UPDATE dest SET config = ?, secrets = ?, paused = NULL WHERE id = 1", JSON.stringify(config), JSON.stringify(secrets));
    }
    await this.ctx.storage.setAlarm(now);
    return { status: current ? "updated" : "created", secret };
  }

  status(): DestinationStatus | null {
    const d = readDest(this.sql);
    if (!d) return null;
    const now = Date.now();
    const p = this.sql
      .exec<{ n: number; low: number | null; oldest: number | null; failing: number }>(
        "SELECT count(*) AS n, min(seq) AS low, min(committed_at) AS oldest, coalesce(max(attempts > 0), 0) AS failing FROM pending",
      )
      .one();
    const unread = commitTime(this.sql, d.readSeq + 1);
    const oldest = p.oldest ?? unread;
    const dead = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dead").one().n;
    return {
      stream: d.stream,
      name: d.name,
      type: d.config.type,
      ...(d.config.type === "http" ? { url: d.config.url, timeoutMs: d.config.timeoutMs } : { binding: d.config.binding }),
      retryForMs: d.config.retryForMs,
      createdAt: d.createdAt,
      deliveredSeq: deliveredSeq(p.low, d.readSeq),
      pending: p.n,
      failing: d.paused !== null || p.failing === 1,
      paused: d.paused !== null,
      lastError: d.paused ?? d.lastError,
      lastErrorAt: d.lastErrorAt,
      lastSuccessAt: d.lastSuccessAt,
      lagMs: oldest === null ? 0 : Math.max(0, now - oldest),
      delivered: d.delivered,
      failures: d.failures,
      dead,
      secrets: signingSecrets(d.secrets, now).map(({ id, createdAt, expiresAt }) => ({ id, createdAt, expiresAt })),
    };
  }

  /** A new signing secret; the old ones keep signing for `overlapMs` (then stop), at most two of them (./secrets.ts). Null: not an http destination. */
  async rotateSecret(overlapMs = DEFAULT_ROTATION_OVERLAP_MS): Promise<{ secret: string; id: string } | null> {
    const d = readDest(this.sql);
    if (!d || d.config.type !== "http") return null;
    const now = Date.now();
    const secret = newSigningSecret();
    const fresh = await this.seal(d.stream, d.name, secret, now);
    const again = readDest(this.sql);
    if (!again) return null;
    this.sql.exec("UPDATE dest SET secrets = ? WHERE id = 1", JSON.stringify(afterRotation(again.secrets, fresh, now, overlapMs)));
    return { secret, id: fresh.id };
  }

  /** Recorded when the Coordinator commits: commits up to `lastSeq` exist. Starts a round soon. */
  async poke(lastSeq: number, at: number): Promise<void> {
    const d = readDest(this.sql);
    if (!d) return;
    if (lastSeq > d.readSeq) {
      this.sql.exec("INSERT OR IGNORE INTO marks (seq, at) VALUES (?, ?)", lastSeq, at);
      this.sql.exec("DELETE FROM marks WHERE seq NOT IN (SELECT seq FROM marks ORDER BY seq DESC LIMIT ?)", MAX_MARKS);
    }
    if (d.paused) return;
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > Date.now()) await this.ctx.storage.setAlarm(Date.now());
  }

  /** The dead lane, oldest seq first, after (seq, index). */
  dead(after: { seq: number; index: number }, limit: number): DeadRow[] {
    const d = readDest(this.sql);
    if (!d) return [];
    return this.sql
      .exec<PendingRow & { died_at: number }>(
        "SELECT seq, idx, row, committed_at, attempts, last_error, died_at FROM dead WHERE (seq, idx) > (?, ?) ORDER BY seq, idx LIMIT ?",
        after.seq,
        after.index,
        limit,
      )
      .toArray()
      .map((r) => ({
        id: webhookId(d.stream, r.seq, r.idx, d.incarnation),
        seq: r.seq,
        index: r.idx,
        attempts: r.attempts,
        lastError: r.last_error,
        diedAt: r.died_at,
        committedAt: r.committed_at,
        row: r.row,
      }));
  }

  /**
   * Sends every row from commit `fromSeq` on again (dead ones included), with
   * the ids they had. Returns how many dead rows it takes back, or null when
   * the destination does not exist.
   */
  async replay(fromSeq: number): Promise<{ fromSeq: number; fromDead: number } | null> {
    const d = readDest(this.sql);
    if (!d) return null;
    const fromDead = this.ctx.storage.transactionSync(() => {
      const n = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dead WHERE seq >= ?", fromSeq).one().n;
      this.sql.exec("DELETE FROM dead WHERE seq >= ?", fromSeq);
      this.sql.exec("DELETE FROM pending WHERE seq >= ?", fromSeq);
      if (d.readSeq >= fromSeq - 1) this.sql.exec("UPDATE dest SET read_seq = ?, read_index = 0, paused = NULL WHERE id = 1", fromSeq - 1);
      else this.sql.exec("UPDATE dest SET paused = NULL WHERE id = 1");
      return n;
    });
    await this.ctx.storage.setAlarm(Date.now());
    return { fromSeq, fromDead };
  }

  /** Stops and forgets the destination (DELETE). */
  async remove(): Promise<boolean> {
    if (!readDest(this.sql)) return false;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.opened.clear();
    this.migrate(); // the instance may serve again (the destination created anew)
    return true;
  }

  /** One round: read ahead what is committed, send the rows that are due, re-arm for the rest. */
  async alarm(): Promise<void> {
    const before = readDest(this.sql);
    if (!before || before.paused) return;
    await this.read(before);
    // As read() left it (a re-created stream moves the epoch and the incarnation its ids carry), or gone.
    const d = readDest(this.sql);
    if (!d || d.paused) return;
    const due = this.sql.exec<PendingRow>("SELECT * FROM pending WHERE next_at <= ? ORDER BY seq, idx LIMIT ?", Date.now(), ROUND_ROWS).toArray();
    if (due.length > 0) {
      if (d.config.type === "http") await this.sendHttp(d, d.config, due);
      else await this.sendQueue(d, d.config.binding, due);
    }
    await this.rearm();
  }

  private async rearm(): Promise<void> {
    const d = readDest(this.sql);
    if (!d || d.paused) return;
    const next = this.sql.exec<{ at: number | null }>("SELECT min(next_at) AS at FROM pending").one().at;
    // Commits the Coordinator reported that are not read yet: read on at once.
    const unread = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM marks WHERE seq > ?", d.readSeq).one().n > 0;
    const count = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pending").one().n;
    const at = unread && count < MAX_PENDING ? Date.now() : next;
    if (at !== null) await this.ctx.storage.setAlarm(Math.max(at, Date.now()));
  }

  /** Reads committed rows after the cursor into `pending`, up to MAX_PENDING, through the Coordinator. */
  private async read(d: DestRow): Promise<void> {
    const coordinator = coordinatorStub(this.env, d.stream);
    const at = await coordinator.locate();
    if (!at) {
      // The stream is gone (or not there yet): nothing to read, and no reported commit to wait for.
      this.sql.exec("DELETE FROM marks");
      return;
    }
    if (at.epoch !== d.epoch) {
      // The stream was deleted and created again (and this destination outlived it: the delete came before destinations went
      // with their stream, or raced a PUT): its commits start over, under ids this destination never sent.
      this.sql.exec("DELETE FROM pending; DELETE FROM marks;");
      const incarnation = Math.max(at.incarnation, d.incarnation + 1);
      this.sql.exec("UPDATE dest SET epoch = ?, incarnation = ?, read_seq = 0, read_index = 0 WHERE id = 1", at.epoch, incarnation);
      d = readDest(this.sql)!;
    }
    let readSeq = d.readSeq;
    let readIndex = d.readIndex;
    let room = MAX_PENDING - this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pending").one().n;
    while (room > 0 && readSeq < at.lastSeq) {
      // Commits the ledger has forgotten (past the idempotency window: a replay, or a destination far behind) are
      // read from the committed manifest, as /output reads them; the rest from the Coordinator's commit index.
      const forgotten = readSeq < at.indexedFrom - 1;
      const parts = forgotten
        ? ((await committedPages(this.env.SINK, at, "data", readSeq, at.indexedFrom - 1, async () => []).next()).value ?? [])
        : await coordinator.commits("data", readSeq, at.lastSeq, COMMITS_PER_READ);
      if (forgotten && parts.length === 0) {
        // No output rows in the forgotten commits after the cursor: on to the ones the index holds.
        const again = readDest(this.sql);
        if (!again || again.readSeq !== readSeq || again.epoch !== at.epoch) return;
        this.sql.exec("UPDATE dest SET read_seq = ?, read_index = 0 WHERE id = 1", at.indexedFrom - 1);
        readSeq = at.indexedFrom - 1;
        readIndex = 0;
        continue;
      }
      let full = true;
      for (const part of parts) {
        const lines = await linesOf(this.env.SINK, part);
        const start = part.seq === readSeq + 1 ? readIndex : 0;
        const take = lines.slice(start, start + room);
        const committedAt = commitTime(this.sql, part.seq) ?? Date.now();
        const complete = start + take.length >= lines.length;
        const again = readDest(this.sql);
        // A replay or a delete while this read awaited moved the cursor: this read is stale.
        if (!again || again.readSeq !== readSeq || again.readIndex !== readIndex || again.epoch !== at.epoch) return;
        this.ctx.storage.transactionSync(() => {
          const now = Date.now();
          // In slices of at most ~1 MB of text: a bound value, like a stored row, is limited to 2 MB.
          for (const slice of slices(take, start, INSERT_CHARS)) {
            this.sql.exec(
              `INSERT OR IGNORE INTO pending (seq, idx, row, committed_at, next_at)
               SELECT ?, ? + key, value, ?, ? FROM json_each(?)`,
              part.seq,
              slice.first,
              committedAt,
              now,
              JSON.stringify(slice.rows),
            );
          }
          // A row too large to keep (or to POST sensibly) goes to the dead lane at once, as a stand-in that says so.
          take.forEach((line, i) => {
            if (!tooLarge(line)) return;
            this.sql.exec(
              "INSERT OR REPLACE INTO dead (seq, idx, row, committed_at, attempts, last_error, died_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
              part.seq,
              start + i,
              JSON.stringify({ tooLarge: true, length: line.length }),
              committedAt,
              `the row is over ${MAX_ROW_BYTES} bytes, more than destinations send (read it from /output)`,
              now,
            );
            this.sql.exec("UPDATE dest SET died = died + 1 WHERE id = 1");
          });
          readSeq = complete ? part.seq : part.seq - 1;
          readIndex = complete ? 0 : start + take.length;
          this.sql.exec("UPDATE dest SET read_seq = ?, read_index = ? WHERE id = 1", readSeq, readIndex);
        });
        room -= take.length;
        if (!complete) {
          full = false;
          break;
        }
      }
      // Fewer parts than asked: every commit up to lastSeq has been seen (commits without output rows have none).
      if (full && !forgotten && parts.length < COMMITS_PER_READ) {
        const again = readDest(this.sql);
        if (!again || again.readSeq !== readSeq || again.epoch !== at.epoch) return;
        this.sql.exec("UPDATE dest SET read_seq = ?, read_index = 0 WHERE id = 1", at.lastSeq);
        readSeq = at.lastSeq;
        readIndex = 0;
      }
      if (!full) break;
    }
    this.sql.exec("DELETE FROM marks WHERE seq <= ?", readSeq);
  }

  private async sendHttp(d: DestRow, config: Extract<DestinationConfig, { type: "http" }>, rows: PendingRow[]): Promise<void> {
    // Checked again before each round: a URL stored under older rules (or a loopback one once the var is off) is never fetched.
    const target = checkDestinationUrl(config.url, this.env.ALLOW_LOOPBACK_DESTINATIONS === "true");
    if (!target.ok) {
      const error = `not sent: the destination's url is refused (${target.reason}); PUT it again with a public https:// URL`;
      this.record(d, rows, { kind: "retry", error, retryAfterMs: null }, Date.now());
      return;
    }
    const secrets = await this.secrets(d);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < rows.length; i = next++) {
        const r = rows[i];
        const id = webhookId(d.stream, r.seq, r.idx, d.incarnation);
        const body = messageBody(JSON.parse(r.row), r.committed_at);
        const sentAt = Date.now();
        let answer: Answer;
        try {
          const res = await fetch(target.url, {
            method: "POST",
            headers: await signedHeaders(secrets, id, sentAt, body),
            body,
            redirect: "manual",
            signal: AbortSignal.timeout(config.timeoutMs),
          });
          answer = { status: res.status, retryAfter: res.headers.get("retry-after") };
          await res.body?.cancel();
        } catch (e) {
          answer = { error: describeError(e, config.timeoutMs) };
        }
        const verdict = judge(answer, Date.now());
        this.record(d, [r], verdict, sentAt);
        if (verdict.kind === "gone") return;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, rows.length) }, worker));
  }

  private async sendQueue(d: DestRow, binding: string, all: PendingRow[]): Promise<void> {
    const queue = (this.env as unknown as Record<string, Queue | undefined>)[binding];
    // A message is at most 128 KB: a larger row can never be sent, and must not hold its neighbours back.
    const rows = all.filter((r) => r.row.length <= MAX_QUEUE_ROW_BYTES);
    const oversized = all.filter((r) => r.row.length > MAX_QUEUE_ROW_BYTES);
    if (oversized.length > 0)
      this.record(d, oversized, { kind: "undeliverable", error: `the row is larger than a queue message can be (${MAX_QUEUE_ROW_BYTES} bytes)` }, Date.now());
    for (let i = 0; i < rows.length; ) {
      const chunk: PendingRow[] = [];
      let bytes = 0;
      while (i < rows.length && chunk.length < QUEUE_BATCH && (chunk.length === 0 || bytes + rows[i].row.length < QUEUE_BATCH_BYTES)) {
        bytes += rows[i].row.length;
        chunk.push(rows[i++]);
      }
      const sentAt = Date.now();
      let verdict: Verdict;
      try {
        if (!queue || typeof queue.sendBatch !== "function") throw new Error(`the binding ${binding} is not a Queues producer of this Worker`);
        await queue.sendBatch(
          chunk.map((r) => ({ body: queueMessage(d.stream, r.seq, r.idx, JSON.parse(r.row), r.committed_at, d.incarnation), contentType: "json" as const })),
        );
        verdict = { kind: "delivered" };
      } catch (e) {
        verdict = { kind: "retry", error: `sendBatch failed: ${(e as Error).message}`, retryAfterMs: null };
      }
      this.record(d, chunk, verdict, sentAt);
    }
  }

  /** Records attempts' outcome: delivered rows leave, failed ones get their next attempt or go to the dead lane. */
  private record(d: DestRow, rows: PendingRow[], verdict: Verdict, sentAt: number): void {
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      for (const r of rows) {
        // A replay or delete meanwhile may have taken the row away (or back): only the row as it was is updated.
        const still = this.sql.exec<{ attempts: number }>("SELECT attempts FROM pending WHERE seq = ? AND idx = ?", r.seq, r.idx).toArray()[0];
        if (!still || still.attempts !== r.attempts) continue;
        if (verdict.kind === "delivered") {
          this.sql.exec("DELETE FROM pending WHERE seq = ? AND idx = ?", r.seq, r.idx);
          continue;
        }
        const firstAt = r.first_at ?? sentAt;
        const failures = r.attempts + 1;
        const next =
          verdict.kind === "gone"
            ? { at: now }
            : verdict.kind === "undeliverable"
              ? "dead"
              : nextAttempt({ failures, firstAttemptAt: firstAt }, verdict.retryAfterMs, d.config, now, Math.random());
        if (next === "dead") {
          this.sql.exec(
            "INSERT OR REPLACE INTO dead (seq, idx, row, committed_at, attempts, last_error, died_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            r.seq,
            r.idx,
            r.row,
            r.committed_at,
            failures,
            verdict.error,
            now,
          );
          this.sql.exec("DELETE FROM pending WHERE seq = ? AND idx = ?", r.seq, r.idx);
          this.sql.exec("UPDATE dest SET died = died + 1 WHERE id = 1");
          this.sql.exec("DELETE FROM dead WHERE (seq, idx) NOT IN (SELECT seq, idx FROM dead ORDER BY seq DESC, idx DESC LIMIT ?)", MAX_DEAD);
        } else {
          this.sql.exec(
            "UPDATE pending SET attempts = ?, first_at = ?, next_at = ?, last_error = ? WHERE seq = ? AND idx = ?",
            failures,
            firstAt,
            next.at,
            verdict.error,
            r.seq,
            r.idx,
          );
        }
      }
      if (verdict.kind === "delivered") {
        this.sql.exec("UPDATE dest SET delivered = delivered + ?, last_success_at = ? WHERE id = 1", rows.length, now);
      } else {
        this.sql.exec("UPDATE dest SET failures = failures + ?, last_error = ?, last_error_at = ? WHERE id = 1", rows.length, verdict.error, now);
        if (verdict.kind === "gone") this.sql.exec("UPDATE dest SET paused = ? WHERE id = 1", verdict.error);
      }
    });
  }

  /** The secrets that sign now, opened (current first). */
  private async secrets(d: DestRow): Promise<string[]> {
    const live = signingSecrets(d.secrets, Date.now());
    return Promise.all(
      live.map(async (s) => {
        let open = this.opened.get(s.sealed);
        if (open === undefined) {
          open = (await openSecret(s.sealed, this.env, sealedFor(d.stream, d.name, s.id))).secret;
          this.opened.set(s.sealed, open);
        }
        return open;
      }),
    );
  }

  private async seal(stream: string, name: string, secret: string, now: number): Promise<SealedSecret> {
    const id = `sec_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
    return { id, sealed: await sealSecret(secret, this.env, sealedFor(stream, name, id)), createdAt: now, expiresAt: null };
  }
}

/** A destination's secret is bound to its stream, destination and secret id (a sealed copy elsewhere does not open). */
const sealedFor = (stream: string, name: string, id: string) => ({ stream, source: `destination:${name}`, id });

async function linesOf(bucket: R2Bucket, part: Parameters<typeof readParts>[1][number]): Promise<string[]> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const bytes of readParts(bucket, [part])) text += decoder.decode(bytes, { stream: true });
  text += decoder.decode();
  return text.split("\n").filter((l) => l !== "");
}
