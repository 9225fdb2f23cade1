import type { Env } from "../env";
import { openSecret, sealSecret } from "../credentials/sealing";
import { signingSecrets, type SealedSecret } from "./secrets";
import type { DestRow } from "./store";

/** A destination's secret is bound to its stream, destination and secret id (a sealed copy elsewhere does not open). */
const sealedFor = (stream: string, name: string, id: string) => ({ stream, source: `destination:${name}`, id });

/**
 * A destination's signing secrets as it stores them (sealed under
 * CREDENTIALS_KEY) and as it signs with them (opened, kept per instance:
 * opening costs an HKDF + AES per secret).
 */
export class SigningKeys {
  /** opened signing secrets by sealed text */
  private readonly opened = new Map<string, string>();

  constructor(private readonly env: Env) {}

  /** The secrets that sign now, opened (current first). */
  async open(d: DestRow): Promise<string[]> {
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

  /** `secret` sealed for the destination `name` of `stream`, under a new id. */
  async seal(stream: string, name: string, secret: string, now: number): Promise<SealedSecret> {
    const id = `sec_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
    return { id, sealed: await sealSecret(secret, this.env, sealedFor(stream, name, id)), createdAt: now, expiresAt: null };
  }

  forget(): void {
    this.opened.clear();
  }
}
