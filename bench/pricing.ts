/**
 * Cloudflare's published prices, as the bench's cost model uses them (all in
 * one place, with the date they were read). Source: Cloudflare's pricing pages
 * for Workers, Durable Objects (SQLite storage backend) and R2, as summarised in
 * PLATFORM.md "Pricing units". What is left out: CPU time and DO duration
 * (wall clock while awake, 128 MB), R2 storage ($0.015/GB-month) and the free
 * allowances; alarm invocations are DO requests too but are not counted by
 * src/instrument/opcount.ts. SQLite storage is priced apart from the counted
 * operations (storagePerMonth): it depends on how many keys a stream holds,
 * not on what a run did.
 */
export const PRICES = {
  readOn: '2026-12-01 (PLATFORM.md "Pricing units", gathered from Cloudflare\'s docs, late 2026)',
  /** USD per million */
  workersRequests: 0.3,
  doRequests: 0.15,
  doRowsWritten: 1.0,
  doRowsRead: 0.001,
  r2ClassA: 4.5,
  r2ClassB: 0.36,
  /** USD per GB-month (GB = 10^9 bytes) of a SQLite Durable Object's stored data */
  doStorageGbMonth: 0.2,
} as const;

/** Cloudflare bills storage by the month: a day is this share of one. */
export const DAYS_PER_MONTH = 365.25 / 12;

/** USD a month for keeping `bytes` in SQLite Durable Objects. */
export function storagePerMonth(bytes: number): number {
  return (bytes / 1e9) * PRICES.doStorageGbMonth;
}

/** R2 operations Cloudflare bills as Class A (mutations and listings); deletes are free; the rest is Class B (reads). */
const CLASS_A = new Set(["put", "list", "createMultipartUpload", "uploadPart", "completeMultipartUpload"]);
const FREE = new Set(["delete"]);

export interface CountedOps {
  /** HTTP requests the Worker served */
  requests: number;
  doCalls: Record<string, number>;
  rowsWritten: Record<string, number>;
  rowsRead: Record<string, number>;
  /** `BINDING.method` → calls */
  r2: Record<string, number>;
}

const total = (t: Record<string, number> | undefined) => Object.values(t ?? {}).reduce((a, b) => a + b, 0);

/** USD for the counted operations, by item. */
export function costOf(ops: CountedOps): { workers: number; doRequests: number; rowsWritten: number; rowsRead: number; r2: number; total: number } {
  let classA = 0;
  let classB = 0;
  for (const [k, n] of Object.entries(ops.r2)) {
    const method = k.slice(k.indexOf(".") + 1);
    if (FREE.has(method)) continue;
    if (CLASS_A.has(method)) classA += n;
    else classB += n;
  }
  const m = 1e-6;
  const c = {
    workers: ops.requests * PRICES.workersRequests * m,
    doRequests: total(ops.doCalls) * PRICES.doRequests * m,
    rowsWritten: total(ops.rowsWritten) * PRICES.doRowsWritten * m,
    rowsRead: total(ops.rowsRead) * PRICES.doRowsRead * m,
    r2: (classA * PRICES.r2ClassA + classB * PRICES.r2ClassB) * m,
  };
  return { ...c, total: c.workers + c.doRequests + c.rowsWritten + c.rowsRead + c.r2 };
}
