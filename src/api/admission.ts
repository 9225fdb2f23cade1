import { hearShards } from "../ingest/shard-router";
import type { Admission, CallerClaim, IngestAuth, SealedSigner } from "../coordinator/protocol";
import type { StreamConfig } from "../stream/config";
import type { CoordinatorStub, Env } from "../env";
import { isProviderType, type ProviderType } from "../webhooks";
import { bearerToken, isAdminToken } from "./auth";
import { hashToken } from "../credentials/credential";
import { forbidden, notFound, unauthorized, webhookUnauthorized } from "../http/problem";
import { openSecret, sealSecret } from "../credentials/sealing";
import { parseSignature, SIGNATURE_TOLERANCE_S, verifySignature, withinReplayWindow, type ParsedSignature, type SignedRequest } from "./signature";
import { TtlCache } from "./ttl-cache";

/**
 * Who may send, decided from the headers before any of the body is read: the
 * admin token, a source's bearer token, or a signature whose timestamp is
 * fresh. One cheap coordinator lookup (cached briefly, refusals never) says
 * whether the caller is allowed in, as which source, and the stream's limits,
 * which then bound how much of the body is read at all.
 */
export interface Caller {
  claim: Exclude<CallerClaim, { kind: "provider" }>;
  source: string;
  limits: StreamConfig["limits"];
  /** a signature claim: the header, checked against the body by proveCaller() */
  signature: ParsedSignature | null;
}

interface Admitted {
  source: string;
  limits: StreamConfig["limits"];
  /** a provider webhook's body cap for the source */
  webhookBytes: number;
  signers: SealedSigner[];
  /** the signers' secrets, opened once per cache entry */
  secrets?: Promise<OpenedSecret[]>;
}

interface OpenedSecret {
  id: string;
  type: SealedSigner["type"];
  secret: string;
}

/** Positive admissions only, per isolate; the Coordinator's admission re-checks every credential, so this decides only what gets read. */
const admissions = new TtlCache<Admitted>(1_000, 10_000);
/** A signature that matches no cached secret refetches them (a credential just added), at most this often. */
const REFETCH_MS = 1_000;

export async function admitCaller(env: Env, stream: string, coordinator: CoordinatorStub, headers: Headers, sourceHeader: string | null): Promise<Caller> {
  const bearer = bearerToken(headers.get("authorization"));
  const header = headers.get("x-signature");
  let claim: Caller["claim"];
  let signature: ParsedSignature | null = null;
  if (bearer !== null) {
    claim = (await isAdminToken(bearer, env)) ? { kind: "admin" } : { kind: "token", hash: await hashToken(bearer) };
  } else if (header !== null) {
    signature = parseSignature(header);
    // Refused before any round trip to the coordinator, on both sides of now.
    if (!withinReplayWindow(signature.t, Date.now())) {
      throw unauthorized(`the signature's timestamp is more than ${SIGNATURE_TOLERANCE_S} s from now`);
    }
    claim = { kind: "hmac" };
  } else {
    await isAdminToken("", env); // 503 when the service has no admin token at all
    throw unauthorized("send Authorization: Bearer <token> (the admin token or a source token) or an X-Signature");
  }
  const admitted = await admission(coordinator, cacheKey(stream, claim, sourceHeader), sourceHeader, claim, stream);
  return { claim, source: admitted.source, limits: admitted.limits, signature };
}

/**
 * The gate of the ingest routes (src/api/route.ts): a request with no
 * credential at all is refused as admitCaller() would refuse it, before its
 * stream name or anything else of it is looked at.
 */
export async function requireIngestCredential(env: Env, headers: Headers): Promise<void> {
  if (bearerToken(headers.get("authorization")) !== null || headers.get("x-signature") !== null) return;
  await isAdminToken("", env);
  throw unauthorized("send Authorization: Bearer <token> (the admin token or a source token) or an X-Signature");
}

/**
 * Turns the claim into proof once the body is here: a signature must match one
 * of the source's signing secrets. Returns the auth that the Coordinator's admission re-checks and
 * the signature version used (v1 is deprecated).
 */
export async function proveCaller(
  env: Env,
  stream: string,
  coordinator: CoordinatorStub,
  caller: Caller,
  sourceHeader: string | null,
  body: Uint8Array,
  bound: SignedRequest,
): Promise<{ auth: IngestAuth; version: "v1" | "v2" | null }> {
  if (caller.claim.kind !== "hmac") return { auth: caller.claim, version: null };
  const sig = caller.signature!;
  const acceptV1 = env.ACCEPT_SIGNATURE_V1 !== "false";
  const now = Date.now();
  const proven = await firstMatch(env, stream, coordinator, caller.claim, sourceHeader, async (secrets) => {
    for (const k of secrets) {
      const version = await verifySignature(k.secret, sig, body, now, bound, acceptV1);
      if (version) return { auth: { kind: "hmac", credentialId: k.id } as const, version };
    }
    return null;
  });
  if (proven) return proven;
  if (sig.v2.length === 0 && !acceptV1) throw unauthorized("X-Signature v1 is no longer accepted; sign with v2");
  throw signatureRefused(caller.source);
}

/**
 * Runs `match` over the source's opened secrets; when nothing matches, once
 * more over freshly fetched ones (a credential just added), at most every REFETCH_MS.
 */
async function firstMatch<T>(
  env: Env,
  stream: string,
  coordinator: CoordinatorStub,
  claim: CallerClaim,
  sourceHeader: string | null,
  match: (secrets: OpenedSecret[]) => Promise<T | null>,
): Promise<T | null> {
  const key = cacheKey(stream, claim, sourceHeader);
  const now = Date.now();
  for (let attempt = 0; attempt < 2; attempt++) {
    const admitted =
      attempt === 0
        ? await admission(coordinator, key, sourceHeader, claim, stream)
        : (admissions.get(key, now, REFETCH_MS) ?? (await admission(coordinator, key, sourceHeader, claim, stream, true)));
    const secrets = (admitted.secrets ??= openAll(env, stream, coordinator, admitted));
    // A failure to open (a key problem, a 503) is not kept: the next request tries again.
    secrets.catch(() => {
      if (admitted.secrets === secrets) admitted.secrets = undefined;
    });
    const found = await match(await secrets);
    if (found !== null) return found;
  }
  return null;
}

/** A webhook's source: who it is, how much of a delivery's body is read at most, and the provider whose scheme its credentials verify. */
export interface WebhookCaller {
  source: string;
  /** the source's maxWebhookBytes (default 1 MiB), never above the stream's maxBodyBytes */
  maxBytes: number;
  provider: ProviderType;
}

const PROVIDER_CLAIM: CallerClaim = { kind: "provider" };

/**
 * One refusal for every caller that a signature did not prove (DESIGN §6): a
 * missing stream, an unknown or disabled source, a deleted secret and a wrong
 * signature all look alike, so that no one learns what exists without a secret.
 */
const ALIKE = "a missing stream, an unknown or disabled source and a revoked secret are refused alike";
export const webhookRefused = (source: string) =>
  webhookUnauthorized(`the signature does not match any webhook signing secret of source "${source}" (${ALIKE}); sign the raw body exactly as sent`);
export const signatureRefused = (source: string) => unauthorized(`the signature does not match any signing secret of source "${source}" (${ALIKE})`);

/**
 * Admits a webhook from its URL alone, before the body is read: one cheap
 * lookup (cached like admitCaller's) of the source's provider credentials.
 * A stream that does not exist and a source without one are the same 401.
 */
export async function admitWebhook(stream: string, coordinator: CoordinatorStub, source: string): Promise<WebhookCaller> {
  const admitted = await admission(coordinator, cacheKey(stream, PROVIDER_CLAIM, source), source, PROVIDER_CLAIM, stream);
  // One provider per source (addCredential refuses a second); the oldest decides should that ever not hold.
  const provider = admitted.signers[0].type;
  if (!isProviderType(provider)) throw webhookRefused(source);
  return { source: admitted.source, maxBytes: admitted.webhookBytes, provider };
}

/** The auth that the Coordinator's admission re-checks: the provider credential whose secret `verify` accepts, else a 401. */
export async function proveWebhook(
  env: Env,
  stream: string,
  coordinator: CoordinatorStub,
  caller: WebhookCaller,
  verify: (secrets: string[]) => Promise<{ ok: true; secretIndex: number } | { ok: false }>,
): Promise<IngestAuth> {
  const auth = await firstMatch(env, stream, coordinator, PROVIDER_CLAIM, caller.source, async (opened) => {
    const live = opened.filter((k) => k.type === caller.provider);
    const r = await verify(live.map((k) => k.secret));
    return r.ok ? ({ kind: "hmac", credentialId: live[r.secretIndex].id } as const) : null;
  });
  if (auth === null) throw webhookRefused(caller.source);
  return auth;
}

async function admission(
  coordinator: CoordinatorStub,
  key: string,
  sourceHeader: string | null,
  claim: CallerClaim,
  stream: string,
  fresh = false,
): Promise<Admitted> {
  const now = Date.now();
  const cached = fresh ? undefined : admissions.get(key, now);
  if (cached) return cached;
  const r = await coordinator.admit(sourceHeader, claim);
  if (r.kind !== "admitted") throw refusal(r, claim, stream, sourceHeader);
  hearShards(stream, r.shards ?? 1); // where its batches go (src/ingest/shard-router.ts)
  // An answer from a Coordinator of the release before (no webhookBytes) caps at the stream's limit, as it did.
  const admitted: Admitted = { source: r.source, limits: r.limits, webhookBytes: r.webhookBytes ?? r.limits.maxBodyBytes, signers: r.signers };
  admissions.set(key, admitted, now);
  return admitted;
}

function refusal(r: Exclude<Admission, { kind: "admitted" }>, claim: CallerClaim, stream: string, sourceHeader: string | null) {
  // A signature claim is not proven yet (the body is not read): a disabled source is the same 401 as a wrong secret.
  if (claim.kind === "provider" && r.kind !== "missing") return webhookRefused(sourceHeader ?? "default");
  if (claim.kind === "hmac" && r.kind !== "missing") return signatureRefused(sourceHeader ?? "default");
  switch (r.kind) {
    case "missing":
      return notFound(`stream "${stream}" does not exist; create it with PUT /v1/streams/${stream}`);
    case "forbidden":
      return forbidden(r.detail);
    case "unauthorized":
      return forbidden("the token is not valid for this stream");
  }
}

function cacheKey(stream: string, claim: CallerClaim, sourceHeader: string | null): string {
  return [stream, claim.kind, claim.kind === "token" ? claim.hash : "", sourceHeader ?? ""].join("\n");
}

/** Opens the signers' secrets; one sealed by the previous key (or the legacy format) is re-sealed under the current one. */
async function openAll(env: Env, stream: string, coordinator: CoordinatorStub, a: Admitted) {
  return Promise.all(
    a.signers.map(async (s) => {
      const for_ = { stream, source: a.source, id: s.id };
      const { secret, stale } = await openSecret(s.material, env, for_);
      if (stale) await coordinator.resealCredential(s.id, s.material, await sealSecret(secret, env, for_));
      return { id: s.id, type: s.type, secret };
    }),
  );
}
