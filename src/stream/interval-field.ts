import { z } from "zod";
import { IntervalError, parseInterval } from "./interval";

/** "1 hour 30 minutes 15 seconds 500 ms" is 35 characters */
export const MAX_INTERVAL_CHARS = 64;

/** A config's interval: text ("2 hours", "500 ms") or ms, parsed to ms; a bad one is the field's error. */
export const intervalField = z.union([z.string().max(MAX_INTERVAL_CHARS, `at most ${MAX_INTERVAL_CHARS} characters`), z.number()]).transform((v, ctx) => {
  try {
    return parseInterval(v);
  } catch (e) {
    ctx.addIssue({ code: "custom", message: e instanceof IntervalError ? e.message : String(e) });
    return z.NEVER;
  }
});
