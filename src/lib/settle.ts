/** A promise whose failure is kept for its await: several run at once, each awaited in its turn (none rejects unhandled meanwhile). */
export const settle = <T>(p: Promise<T>): Promise<{ ok: T } | { err: unknown }> =>
  p.then(
    (ok) => ({ ok }),
    (err: unknown) => ({ err }),
  );

/** The settled promise's value, or its failure thrown. */
export async function unsettle<T>(p: Promise<{ ok: T } | { err: unknown }>): Promise<T> {
  const r = await p;
  if ("err" in r) throw r.err;
  return r.ok;
}
