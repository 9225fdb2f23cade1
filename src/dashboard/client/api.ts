import { readToken } from "./token";

/** A refusal or failure of the admin API, with the sentence the page shows for it (and the problem's own detail, when it had one). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly detail: string | null = null,
  ) {
    super(message);
  }
}

/** GET path of the admin API as JSON (or POST `post` as JSON), with the token in a header only. */
export async function api<T>(path: string, post?: unknown): Promise<T> {
  const token = readToken();
  const headers: Record<string, string> = { accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  if (post !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, post === undefined ? { headers, cache: "no-store" } : { method: "POST", headers, cache: "no-store", body: JSON.stringify(post) });
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
  const said = typeof body?.detail === "string" ? body.detail : null;
  const detail = said ? ` (${said})` : "";
  const fail = (message: string) => new ApiError(res.status, message, said);
  if (res.status === 401) throw fail(`401 Unauthorized: enter the admin token above${detail}.`);
  if (res.status === 403) throw fail(`403 Forbidden: the admin token is not valid${detail}. Enter the current ADMIN_TOKEN.`);
  if (res.status === 404) throw fail(`404 Not found: ${said ? said : path}. It may have been deleted; pick another stream.`);
  if (res.status === 503) throw fail(`503 Service unavailable${detail}.`);
  throw fail(`HTTP ${res.status} from ${path.split("?")[0]}${detail}.`);
}

/** What the page says of a failed call: the server's own detail when it gave one, else the sentence. */
export function failure(e: unknown): string {
  if (e instanceof ApiError) return e.detail ? `${e.status}: ${e.detail}` : e.message;
  return `Error: ${e && (e as Error).message ? (e as Error).message : String(e)}`;
}
