import { describe, expect, test } from "vitest";
import { acrossRpc, IngestRefused, refusalError } from "../../../src/rpc/refusal";

describe("an RPC refusal as it crosses the binding", () => {
  const busy = { ok: false, status: 409, kind: "busy", detail: 'batch id "k" is being processed by another request; retry later', retryAfterMs: 2000 } as const;

  test("a plain Error (no custom name to fold into the message), the message starting with the status, the fields its own", () => {
    const e = refusalError(busy);
    expect(Object.getPrototypeOf(e)).toBe(Error.prototype);
    expect(`${e.name}: ${e.message}`).toBe('Error: 409 busy: batch id "k" is being processed by another request; retry later');
    expect({ ...e }).toEqual({ status: 409, kind: "busy", detail: busy.detail, retryAfterMs: 2000 });
  });

  test("IngestRefused becomes that error; anything else crosses as it is", () => {
    const crossed = acrossRpc(new IngestRefused(busy)) as Error;
    expect(crossed).not.toBeInstanceOf(IngestRefused);
    expect(crossed.message).toBe(new IngestRefused(busy).message);
    const other = new TypeError("x");
    expect(acrossRpc(other)).toBe(other);
  });
});
