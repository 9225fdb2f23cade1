/**
 * A rescale under way, as the Coordinator keeps it (meta.rescale): the old
 * map, the new count, and how far the move has got per old partition. Pure.
 */
import type { MoveCursor } from "./mover";

export interface RescaleState {
  from: { version: number; partitions: number };
  to: number;
  startedAt: number;
  /** keys the old partitions handed to the new ones so far */
  keysMoved: number;
  /** per old partition: its move's cursor (done: it holds no key the new map's partitions lack) */
  cursors: MoveCursor[];
}

/** The old partitions that may still hold keys the new ones lack (read through, and moved). */
export const undrained = (r: RescaleState): number[] => r.cursors.flatMap((c, p) => (c.done ? [] : [p]));
