import { z } from "zod";
import { badRequest, notFound, type HttpError } from "../problem";

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
