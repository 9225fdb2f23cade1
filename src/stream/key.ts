/**
 * Canonical key encoding: the JSON array of the key columns' values after schema
 * coercion, e.g. ["evt_1"] or [42,"acme"]. JSON keeps 42 and "42" apart and is
 * stable across runtimes, so it is both the state key and the hash input.
 */
export type KeyValue = string | number | boolean;

export function encodeKey(values: readonly KeyValue[]): string {
  return JSON.stringify(values);
}

/** In event-time-key mode the state key also carries the event time. */
export function stateKeyOf(key: string, eventTime: number | null, withEventTime: boolean): string {
  return withEventTime ? `${key}@${eventTime}` : key;
}

export const MAX_KEY_BYTES = 1024;
