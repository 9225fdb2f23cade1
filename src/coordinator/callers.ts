import type { StoredCredential } from "../credentials/credential";
import { webhookBodyLimit } from "../stream/config";
import { intakeShardsOf, isSharded } from "../stream/shards";
import { isWebhookCounter } from "../webhooks/tally";
import type { Admission, CallerClaim } from "./protocol";
import type { CoordinatorStores } from "./stores";

/** Who may send to a stream: admission before a body is read, the credentials it goes by, and the webhook counts Workers report. */
export class Callers {
  constructor(private readonly s: CoordinatorStores) {}

  /**
   * Before a body is read: is this caller allowed in, as which source, and what
   * may it send? Cheap (one indexed lookup) and writes nothing, so a wrong
   * credential costs no more than this. ingest checks again: it is the authority.
   */
  admit(sourceHeader: string | null, claim: CallerClaim): Admission {
    const meta = this.s.meta();
    if (!meta) return claim.kind === "admin" ? { kind: "missing" } : { kind: "unauthorized" };
    const caller = this.s.credentials.caller(meta.config, sourceHeader, claim);
    if (caller.kind !== "ok") return caller;
    return {
      kind: "admitted",
      source: caller.source,
      limits: meta.config.limits,
      signers: caller.signers,
      webhookBytes: webhookBodyLimit(meta.config, caller.source),
      ...(isSharded(meta.config) ? { shards: intakeShardsOf(meta.config) } : {}),
    };
  }

  /**
   * A Worker's counts of this source's webhook replays and refused signatures
   * (src/webhooks/tally.ts), at most one call per source every few seconds per
   * isolate: added to the /metrics counters and written with the state record.
   * A stream that does not exist, or a source with no provider credential,
   * counts nothing (anyone can name them).
   */
  noteWebhooks(source: string, deltas: [string, number][]): void {
    const meta = this.s.meta();
    if (!meta || this.s.credentials.caller(meta.config, source, { kind: "provider" }).kind === "unauthorized") return;
    const counted = deltas
      .filter(([name, n]) => isWebhookCounter(name) && Number.isSafeInteger(n) && n > 0)
      .map(([name, n]): [string, string, number] => [name, source, n]);
    if (counted.length === 0) return;
    this.s.counters.add(counted);
    this.s.book.write();
  }

  /** Whether a batch id has begun (or committed): such a batch keeps the limits of its first attempt. */
  knownBatch(source: string, batchId: string): boolean {
    if (!this.s.exists()) return false;
    return this.s.ledger.known(source, batchId);
  }

  /**
   * Stores a credential. A token already given to any source of this stream is
   * refused: lookups go by its hash, so the second holder would be locked out.
   */
  addCredential(c: StoredCredential): "added" | "missing" | "duplicate" | "other-provider" {
    if (!this.s.meta()) return "missing";
    return this.s.credentials.add(c);
  }

  /** Re-seals a signing secret under the current CREDENTIALS_KEY, if it is still as it was read. */
  resealCredential(id: string, from: string, to: string): void {
    if (!this.s.exists()) return;
    this.s.credentials.reseal(id, from, to);
  }

  /** A source's credentials, without their material when `withMaterial` is false. */
  credentials(source: string, withMaterial = false): StoredCredential[] {
    if (!this.s.exists()) return [];
    return this.s.credentials.list(source, withMaterial);
  }

  deleteCredential(source: string, id: string): boolean {
    if (!this.s.exists()) return false;
    return this.s.credentials.delete(source, id);
  }
}
