import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { Provider, VerifyResult } from "../../../src/webhooks";

/**
 * The checks every provider passes against its reference implementation:
 * we accept what it signs, it accepts what we sign, and both refuse a
 * tampered body or a wrong secret. Each provider's test file adds its own
 * header formats, time window and envelope.
 */
export interface Reference {
  provider: Provider;
  /** a secret of the provider's format, distinct per seed */
  secret(seed: number): string;
  /** the headers the provider's reference implementation sends for `body` at `t` (unix s) */
  theirHeaders(secret: string, body: string, t: number): Promise<Headers>;
  /** whether the reference implementation accepts the delivery at `nowMs` */
  theyAccept(secret: string, body: string, headers: Headers, nowMs: number): Promise<boolean>;
  /** the headers our sign helper makes */
  ourHeaders(secret: string, body: string, t: number): Promise<Headers>;
}

export const T = 1_796_000_000; // unix s, 2026-11-30
export const NOW_MS = T * 1000;
/** The body hash envelope() takes, for providers whose identity is a signed id (Stripe, Standard Webhooks): they ignore it. */
export const UNUSED_HASH = "0".repeat(64);
export const enc = (s: string) => new TextEncoder().encode(s);

export const ok = (r: VerifyResult) => (r.ok ? r.secretIndex : r.reason);

/**
 * Bodies as providers send them, and the odd ones a signature must survive.
 * Not empty: no provider sends an empty body, and Stripe's library refuses one
 * before it looks at the signature.
 */
const body = fc
  .oneof(fc.json(), fc.string({ unit: "binary", maxLength: 200 }), fc.constantFrom(" ", "{}", '{"a":"é😀\\u0000"}', "\r\n"))
  .filter((text) => text !== "");

export function conformance(ref: Reference): void {
  const { provider } = ref;
  const [A, B] = [ref.secret(1), ref.secret(2)];

  describe(`${provider.type}: conformance with the reference implementation`, () => {
    test("we accept what it signs, and it accepts what we sign (property)", async () => {
      await fc.assert(
        fc.asyncProperty(body, fc.nat(1000), async (text, seed) => {
          const secret = ref.secret(seed);
          const theirs = await ref.theirHeaders(secret, text, T);
          expect(ok(await provider.verify(theirs, enc(text), [secret], NOW_MS))).toBe(0);
          const ours = await ref.ourHeaders(secret, text, T);
          expect(await ref.theyAccept(secret, text, ours, NOW_MS)).toBe(true);
        }),
        { numRuns: 60 },
      );
    });

    test("a tampered body is refused, by it and by us (property)", async () => {
      await fc.assert(
        fc.asyncProperty(body, body, async (sent, tampered) => {
          fc.pre(sent !== tampered);
          const headers = await ref.theirHeaders(A, sent, T);
          expect(await ref.theyAccept(A, tampered, headers, NOW_MS)).toBe(false);
          const r = await provider.verify(headers, enc(tampered), [A], NOW_MS);
          expect(ok(r)).toBe(`the ${provider.signatureHeader} signature does not match this body under the source's secret; sign the raw body exactly as sent`);
        }),
        { numRuns: 40 },
      );
    });

    test("one flipped bit anywhere in the body is refused", async () => {
      const text = '{"id":"evt_1","type":"x"}';
      const headers = await ref.theirHeaders(A, text, T);
      for (let i = 0; i < text.length; i++) {
        const bytes = enc(text);
        bytes[i] ^= 1;
        expect((await provider.verify(headers, bytes, [A], NOW_MS)).ok).toBe(false);
      }
    });

    test("a wrong secret is refused, by it and by us", async () => {
      const headers = await ref.theirHeaders(A, "{}", T);
      expect(await ref.theyAccept(B, "{}", headers, NOW_MS)).toBe(false);
      expect(ok(await provider.verify(headers, enc("{}"), [B], NOW_MS))).toMatch(/does not match this body under the source's secret/);
    });

    test("rotation: any live secret verifies, and its index says which", async () => {
      const headers = await ref.theirHeaders(A, "{}", T);
      expect(ok(await provider.verify(headers, enc("{}"), [A, B], NOW_MS))).toBe(0);
      expect(ok(await provider.verify(headers, enc("{}"), [B, A], NOW_MS))).toBe(1);
      expect(ok(await provider.verify(headers, enc("{}"), [B, ref.secret(3)], NOW_MS))).toMatch(/under any of the source's 2 secrets/);
    });

    test("no secret configured is a refusal, not an error", async () => {
      const headers = await ref.theirHeaders(A, "{}", T);
      expect(ok(await provider.verify(headers, enc("{}"), [], NOW_MS))).toBe("no signing secret is configured for this source");
    });

    test("a missing signature header is refused before the body is read", async () => {
      const expected = new RegExp(`^missing .*${provider.signatureHeader}`);
      expect(provider.precheck(new Headers(), NOW_MS)).toEqual({ ok: false, reason: expect.stringMatching(expected) });
      expect(ok(await provider.verify(new Headers(), enc("{}"), [A], NOW_MS))).toMatch(expected);
    });

    test("precheck passes what the reference implementation sends, without the body", async () => {
      expect(provider.precheck(await ref.theirHeaders(A, "{}", T), NOW_MS)).toEqual({ ok: true });
    });

    test("an unusable secret is skipped, not thrown on", async () => {
      const headers = await ref.theirHeaders(A, "{}", T);
      expect(ok(await provider.verify(headers, enc("{}"), ["", A], NOW_MS))).toBe(1);
      expect(provider.secretProblem("")).not.toBeNull();
      expect(provider.secretProblem(A)).toBeNull();
    });
  });
}

/** Both sides of both edges of a ±300 s window, against a reference that checks `pastOnly` or both sides. */
export function timeWindow(ref: Reference, label: string, pastOnly: boolean): void {
  const { provider } = ref;
  const A = ref.secret(1);
  describe(`${provider.type}: the 300 s window`, () => {
    test.each<[string, number, boolean]>([
      ["300 s old", 300, true],
      ["300.999 s old (whole seconds count)", 300.999, true],
      ["301 s old", 301, false],
      ["300 s ahead", -300, true],
      ["301 s ahead", -301, false],
    ])("%s", async (_name, ageS, accepted) => {
      const nowMs = Math.round((T + ageS) * 1000);
      const headers = await ref.theirHeaders(A, "{}", T);
      const r = await provider.verify(headers, enc("{}"), [A], nowMs);
      const pre = provider.precheck(headers, nowMs);
      if (accepted) {
        expect(ok(r)).toBe(0);
        expect(pre).toEqual({ ok: true });
      } else {
        const reason =
          ageS > 0
            ? `${label}=${T} is 301 s old; at most 300 s are accepted (replay protection)`
            : `${label}=${T} is 301 s in the future; at most 300 s of clock skew are accepted`;
        expect(ok(r)).toBe(reason);
        expect(pre).toEqual({ ok: false, reason });
      }
      // The reference agrees, except where it does not look at the future at all.
      expect(await ref.theyAccept(A, "{}", headers, nowMs)).toBe(accepted || (pastOnly && ageS < 0));
    });

    test("the signed timestamp is readable from the headers alone", async () => {
      expect(provider.timestamp(await ref.theirHeaders(A, "{}", T))).toBe(T);
      expect(provider.timestamp(new Headers())).toBeNull();
    });
  });
}
