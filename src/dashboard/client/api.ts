import { readToken } from "./token";

/** A refusal or failure of the admin API, with the sentence the page shows for it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** GET path of the admin API as JSON, with the token in a header only. */
export async function api<T>(path: string): Promise<T> {
  const token = readToken();
  const headers: Record<string, string> = { accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(path, { headers, cache: "no-store" });
  } catch (e) {
    throw new ApiError(0, `The server did not answer (${(e as Error).message}). Is it running?`);
  }
  let body: { detail?: string } | null = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (res.ok) return body as T;
  const detail = body?.detail ? ` (${body.detail})` : "";
  if (res.status === 401) throw new ApiError(401, `401 Unauthorized: enter the admin token above${detail}.`);
  if (res.status === 403) throw new ApiError(403, `403 Forbidden: the admin token is not valid${detail}. Enter the current ADMIN_TOKEN.`);
  if (res.status === 404) throw new ApiError(404, `404 Not found: ${body?.detail ? body.detail : path}. It may have been deleted; pick another stream.`);
  if (res.status === 503) throw new ApiError(503, `503 Service unavailable${detail}.`);
  throw new ApiError(res.status, `HTTP ${res.status} from ${path.split("?")[0]}${detail}.`);
}
