import type { CredentialType, StoredCredential } from "../credentials/credential";
import { isProviderType, type ProviderType } from "../webhooks";
import { sourceConfig, type StreamConfig } from "../stream/config";
import type { CallerClaim, IngestAuth, SealedSigner } from "./protocol";

/** A source's signing secret, still sealed (src/api/admission.ts opens it to check a signature). */

/**
 * A stream's credentials (the `credentials` table, created by
 * COORDINATOR_MIGRATIONS, src/coordinator/migrations.ts): tokens by their hash, signing secrets sealed. The
 * caller checks that the tables exist.
 */
export class CredentialStore {
  constructor(private readonly sql: SqlStorage) {}

  /** The source a token (by its hash) or a signing credential (by its id) belongs to; undefined: no such credential. */
  holder(by: { kind: "token"; hash: string } | { kind: "hmac"; credentialId: string }): string | undefined {
    return this.sql
      .exec<{ source: string }>(
        by.kind === "token"
          ? "SELECT source FROM credentials WHERE material = ? AND type = 'token'"
          : "SELECT source FROM credentials WHERE id = ? AND type <> 'token'",
        by.kind === "token" ? by.hash : by.credentialId,
      )
      .toArray()[0]?.source;
  }

  /** A source's signing secrets of one kind: HMAC, or its webhook provider's. */
  signers(source: string, kind: "hmac" | "provider"): SealedSigner[] {
    return this.list(source, true)
      .filter((c) => (kind === "hmac" ? c.type === "hmac" : isProviderType(c.type)))
      .map((c) => ({ id: c.id, material: c.material, type: c.type }));
  }

  /** The sources with a webhook provider credential, and that provider (one per source: add() refuses a second). */
  providers(): Map<string, ProviderType> {
    const rows = this.sql.exec<{ source: string; type: string }>("SELECT source, type FROM credentials ORDER BY created_at, id").toArray();
    const out = new Map<string, ProviderType>();
    for (const r of rows) if (isProviderType(r.type) && !out.has(r.source)) out.set(r.source, r.type);
    return out;
  }

  /** A source's credentials, without their material when `withMaterial` is false. */
  /** Every source's credentials, with their material (a new shard takes them all: src/coordinator/shard-count.ts). */
  all(): StoredCredential[] {
    return this.sql
      .exec<{ source: string }>("SELECT DISTINCT source FROM credentials ORDER BY source")
      .toArray()
      .flatMap((r) => this.list(r.source, true));
  }

  list(source: string, withMaterial = false): StoredCredential[] {
    return this.sql
      .exec<{ id: string; source: string; type: CredentialType; label: string | null; created_at: number; material: string }>(
        "SELECT * FROM credentials WHERE source = ? ORDER BY created_at, id",
        source,
      )
      .toArray()
      .map((r) => ({ id: r.id, source: r.source, type: r.type, label: r.label, createdAt: r.created_at, material: withMaterial ? r.material : "" }));
  }

  /**
   * Stores a credential. A token already given to any source of this stream is
   * refused: lookups go by its hash, so the second holder would be locked out.
   */
  add(c: StoredCredential): "added" | "duplicate" | "other-provider" {
    // A source's webhook credentials are of one provider, so that its endpoint knows the scheme.
    if (isProviderType(c.type) && this.list(c.source).some((o) => isProviderType(o.type) && o.type !== c.type)) return "other-provider";
    if (c.type === "token" && this.sql.exec("SELECT 1 FROM credentials WHERE material = ? AND type = 'token'", c.material).toArray().length > 0) {
      return "duplicate";
    }
    this.sql.exec(
      "INSERT INTO credentials (id, source, type, label, created_at, material) VALUES (?, ?, ?, ?, ?, ?)",
      c.id,
      c.source,
      c.type,
      c.label,
      c.createdAt,
      c.material,
    );
    return "added";
  }

  /** Re-seals a signing secret under the current CREDENTIALS_KEY, if it is still as it was read. */
  reseal(id: string, from: string, to: string): void {
    this.sql.exec("UPDATE credentials SET material = ? WHERE id = ? AND material = ?", to, id, from);
  }

  delete(source: string, id: string): boolean {
    return this.sql.exec("DELETE FROM credentials WHERE source = ? AND id = ?", source, id).rowsWritten > 0;
  }

  /**
   * Who is calling: the source a credential belongs to (X-Source must agree, and
   * defaults to it), refused when the credential is unknown or the source disabled.
   * A signature claim yields the source's signing secrets (sealed) to check it with.
   * Reads only.
   */
  caller(
    config: StreamConfig,
    sourceHeader: string | null,
    auth: IngestAuth | CallerClaim,
  ): { kind: "ok"; source: string; signers: SealedSigner[] } | { kind: "unauthorized" } | { kind: "forbidden"; detail: string } {
    let credentialSource: string | null = null;
    let signers: SealedSigner[] = [];
    if (auth.kind === "token" || (auth.kind === "hmac" && "credentialId" in auth)) {
      const holder = this.holder(auth);
      if (holder === undefined) return { kind: "unauthorized" };
      credentialSource = holder;
    } else if (auth.kind === "hmac" || auth.kind === "provider") {
      credentialSource = sourceHeader ?? "default";
      signers = this.signers(credentialSource, auth.kind);
      if (signers.length === 0) return { kind: "unauthorized" };
    }
    const source = sourceHeader ?? credentialSource ?? "default";
    if (credentialSource !== null && credentialSource !== source) {
      return { kind: "forbidden", detail: `the credential belongs to source "${credentialSource}", not "${source}"` };
    }
    if (sourceConfig(config, source)?.disabled) return { kind: "forbidden", detail: `source "${source}" is disabled` };
    return { kind: "ok", source, signers };
  }
}
