/** What GET …/destinations/{name} answers (src/delivery/schemas.ts publishes its shape). */
export interface DestinationStatus {
  stream: string;
  name: string;
  type: "http" | "queue";
  url?: string;
  binding?: string;
  timeoutMs?: number;
  retryForMs: number;
  createdAt: number;
  deliveredSeq: number;
  pending: number;
  failing: boolean;
  paused: boolean;
  lastError: string | null;
  lastErrorAt: number | null;
  lastSuccessAt: number | null;
  lagMs: number;
  delivered: number;
  failures: number;
  dead: number;
  secrets: { id: string; createdAt: number; expiresAt: number | null }[];
}
