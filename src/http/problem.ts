/**
 * Every error response is RFC 9457 problem+json and is made here, so they all
 * carry `type`, `title`, `status`, `detail` and, where useful, `errors`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export const PROBLEM_BASE = "https://edge-dedup.dev/problems/";

export function problemResponse(err: HttpError, instance?: string): Response {
  const body = {
    type: PROBLEM_BASE + err.slug,
    title: err.title,
    status: err.status,
    detail: err.detail,
    ...(instance ? { instance } : {}),
    ...err.extra,
  };
  return new Response(JSON.stringify(body), {
    status: err.status,
    headers: { "content-type": "application/problem+json", ...err.headers },
  });
}

export const badRequest = (detail: string, extra?: Record<string, unknown>) => new HttpError(400, "invalid-request", "Invalid request", detail, extra);
export const notFound = (detail: string) => new HttpError(404, "not-found", "Not found", detail);
export const conflict = (slug: string, detail: string, extra?: Record<string, unknown>, headers?: Record<string, string>) =>
  new HttpError(409, slug, "Conflict", detail, extra, headers);
export const unauthorized = (detail: string) =>
  new HttpError(401, "unauthorized", "Unauthorized", detail, {}, { "www-authenticate": 'Bearer realm="edge-dedup"' });
export const forbidden = (detail: string) => new HttpError(403, "forbidden", "Forbidden", detail);
/** The 500 of anything that failed on the way (a failed micro-batch, an unexpected error): nothing was written, so a retry is safe. */
export const internalError = () => new HttpError(500, "internal", "Internal error", "the request failed; it is safe to retry with the same Idempotency-Key");
/** A shard-count change under way (docs/reference/errors.md#shards-changing): retry after it. */
export const shardsChanging = (detail: string, retryAfterMs = 1_000) =>
  new HttpError(503, "shards-changing", "Shards changing", detail, {}, { "retry-after": String(Math.max(1, Math.ceil(retryAfterMs / 1000))) });
export const notConfigured = (detail: string) => new HttpError(503, "not-configured", "Service not configured", detail);
/** A webhook whose provider signature is missing, malformed, stale or does not match: providers retry it. */
export const webhookUnauthorized = (detail: string) => new HttpError(401, "invalid-webhook-signature", "Webhook signature refused", detail);
/** A stream at its destination cap (src/delivery/config.ts): another needs one deleted first. */
export const tooManyDestinations = (detail: string) => new HttpError(409, "too-many-destinations", "Conflict", detail);
