/**
 * Own-property reads. Configs and rows are parsed JSON, so a user's name such
 * as "constructor" or "toString" must find the user's value or nothing, never
 * something inherited from Object.prototype.
 */
export function own<T>(obj: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}
