import { z } from "zod";

/**
 * Which rows a destination keeps in order: `"none"` (any order, up to six in
 * flight per lane) or `{"by": ["account", "payload.data.object.customer"]}`,
 * whose rows with equal values at those paths reach the handler one at a
 * time, in commit order. Pure: the sender stores each row's entity and lane
 * hash when it reads the row (./pending.ts), and dispatch reads them.
 */
export type Ordering = "none" | { by: string[] };

/** A path is dot-separated field names (no empty ones), as in `payload.data.object.customer`. */
const path = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^.]+(\.[^.]+)*$/, "a path is field names joined by dots, none empty");

export const orderingSchema = z
  .union([z.literal("none"), z.strictObject({ by: z.array(path).min(1).max(8) })])
  .describe('"none" (the default), or {"by": ["<column or dotted path>", …]}: rows with equal values there reach the handler one at a time, in commit order');

/** The value at a dotted path, or null when any step is missing (rows that lack it share the null entity). */
function valueAt(row: unknown, dotted: string): unknown {
  let at: unknown = row;
  for (const step of dotted.split(".")) {
    if (at === null || typeof at !== "object" || !Object.hasOwn(at as object, step)) return null;
    at = (at as Record<string, unknown>)[step];
  }
  return at === undefined ? null : at;
}

/** The row's entity under `ordering`: a JSON text of its values at the paths, or null when rows are not ordered. */
export function entityOf(row: unknown, ordering: Ordering): string | null {
  if (ordering === "none") return null;
  return JSON.stringify(ordering.by.map((p) => valueAt(row, p)));
}

/** FNV-1a over the text's UTF-16 code units: a lane hash, stable across releases (lanes are assigned by it). */
export function laneHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Where a read row goes: its entity (null: unordered) and the hash that picks
 * its lane (`h % lanes`): the entity's, so that an entity keeps to one lane,
 * or else the row's own place, which spreads rows evenly.
 */
export function placementOf(row: unknown, seq: number, idx: number, ordering: Ordering): { entity: string | null; h: number } {
  const entity = entityOf(row, ordering);
  return { entity, h: laneHash(entity ?? `${seq}.${idx}`) };
}

export const sameOrdering = (a: Ordering, b: Ordering) => JSON.stringify(a) === JSON.stringify(b);
