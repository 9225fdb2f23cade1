import { sha256Hex } from "../lib/bytes";

/** How a batch's rows were read from its bytes: part of its identity (src/api/body.ts parseMode, files' readAs). */
export type ParseMode = "json" | "ndjson";

/** A batch's identity: its parse mode and the SHA-256 of its bytes (JSON bodies keep the bare hash they always had). */
export async function batchIdentity(bytes: Uint8Array, mode: ParseMode): Promise<string> {
  const hash = await sha256Hex(bytes);
  return mode === "json" ? hash : `${mode}:${hash}`;
}
