import { z } from "zod";
import { badRequest, notFound, type HttpError } from "../../http/problem";
import type { Ctx } from "../route";

/** The path of one stream; its sub-resources hang below it. */
export const STREAM = "/v1/streams/:stream";

export function missing(stream: string): HttpError {
  return notFound(`stream "${stream}" does not exist`);
}

/** A whole number in min..max from the query, or `fallback` when it is left out; a 400 otherwise. */
export function intParam(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw badRequest(`${name} must be a whole number in ${min}..${max}`);
  return n;
}

/** A query parameter's schema for the document: a whole number in min..max. */
export const intIn = (min: number, max: number) => z.number().int().min(min).max(max);

/**
 * A whole-number query parameter read by its declaration (`intIn(min, max).default(d)`
 * in the route's query): its bounds and default said once, for the document and the handler alike.
 */
export function intQuery<Q extends z.ZodObject>(c: Ctx, query: Q, name: keyof Q["shape"] & string): number {
  const field = query.shape[name];
  if (!(field instanceof z.ZodDefault) || !(field.unwrap() instanceof z.ZodNumber)) throw new Error(`query ${name}: not an intIn(…).default(…)`);
  const n = field.unwrap() as z.ZodNumber;
  return intParam(c.req.query(name), name, field._zod.def.defaultValue as number, n.minValue!, n.maxValue!);
}
