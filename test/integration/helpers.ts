import { exports } from "cloudflare:workers";

export const TOKEN = "test-admin-token";
export const AUTH = { authorization: `Bearer ${TOKEN}` };

export async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`http://edge-dedup.test${path}`, {
    method,
    headers: { ...AUTH, ...(body !== undefined && typeof body !== "string" ? { "content-type": "application/json" } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

export async function json<T = any>(r: Response | Promise<Response>): Promise<T> {
  return (await r).json() as Promise<T>;
}

export async function createStream(name: string, body: Record<string, unknown>): Promise<void> {
  const r = await call("PUT", `/v1/streams/${name}`, body);
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
}

export async function post(stream: string, rows: unknown, headers: Record<string, string> = {}): Promise<any> {
  const r = await call("POST", `/v1/streams/${stream}/events`, rows, headers);
  if (r.status !== 200) throw new Error(`ingest: ${r.status} ${await r.text()}`);
  return r.json();
}

export async function output(stream: string): Promise<any[]> {
  const text = new TextDecoder().decode(await (await call("GET", `/v1/streams/${stream}/output`)).arrayBuffer());
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** 2024-01-01 at hh:mm UTC, epoch ms */
export const at = (hh: number, mm: number) => Date.UTC(2024, 0, 1, hh, mm);

/** A request body that counts how many bytes the service pulled from it. */
export function countingBody(chunk: string, chunks: number) {
  const bytes = new TextEncoder().encode(chunk);
  const seen = { pulled: 0 };
  let left = chunks;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (left-- <= 0) return c.close();
      seen.pulled += bytes.length;
      c.enqueue(bytes);
    },
  });
  return { body, seen };
}
