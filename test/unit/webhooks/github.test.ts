import { createHash } from "node:crypto";
import { sign, verify } from "@octokit/webhooks-methods";
import { describe, expect, test } from "vitest";
import { batchIdFor, PROVIDERS, signGithub } from "../../../src/webhooks";
import { conformance, enc, NOW_MS, ok, type Reference } from "./conformance";

const provider = PROVIDERS.github;
const headersOf = (value: string) => new Headers({ "X-Hub-Signature-256": value });

conformance({
  provider,
  secret: (seed) => `It's a Secret to Everybody ${seed}`,
  theirHeaders: async (secret, body) => headersOf(await sign(secret, body)),
  theyAccept: async (secret, body, headers) => verify(secret, body, headers.get("X-Hub-Signature-256")!),
  ourHeaders: async (secret, body) => headersOf(await signGithub(secret, body)),
} satisfies Reference);

describe("github: the X-Hub-Signature-256 header", () => {
  const verifyWith = async (headers: Headers, body = "{}") => ok(await provider.verify(headers, enc(body), ["s3cret"], NOW_MS));

  test("GitHub's documented example (docs.github.com, validating webhook deliveries)", async () => {
    const expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(await signGithub("It's a Secret to Everybody", "Hello, World!")).toBe(expected);
    expect(ok(await provider.verify(headersOf(expected), enc("Hello, World!"), ["It's a Secret to Everybody"], NOW_MS))).toBe(0);
  });

  test("no timestamp is signed: any arrival time verifies, and there is none to read", async () => {
    const headers = headersOf(await signGithub("s3cret", "{}"));
    expect(ok(await provider.verify(headers, enc("{}"), ["s3cret"], 0))).toBe(0);
    expect(provider.timestamp(headers)).toBeNull();
  });

  test("only the SHA-1 X-Hub-Signature is refused, and says why", async () => {
    const reason = "missing X-Hub-Signature-256 header (the SHA-1 X-Hub-Signature is not accepted)";
    expect(await verifyWith(new Headers({ "X-Hub-Signature": "sha1=0123" }))).toBe(reason);
  });

  test.each(["757107ea", "sha1=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "sha256=xyz", "sha256=", `sha256=${"a".repeat(66)}`])(
    "malformed %j is refused before the body",
    async (value) => {
      const reason = "X-Hub-Signature-256 must look like sha256=<64 hex digits>";
      expect(provider.precheck(headersOf(value), NOW_MS)).toEqual({ ok: false, reason });
      expect(await verifyWith(headersOf(value))).toBe(reason);
    },
  );
});

describe("github: the envelope", () => {
  const delivery = { "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event": "push" };
  const payload = { ref: "refs/heads/main", commits: [{ id: "abc" }] };
  const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
  const envelope = (headers: Headers | Record<string, string>, body: Uint8Array) => provider.envelope(new Headers(headers), body, NOW_MS, sha256(body));

  // DESIGN §6 (issue 14): GitHub signs the body alone, so only the body is identity; the headers are kept, unverified.
  test("id = the SHA-256 of the signed body; deliveryId = X-GitHub-Delivery and type = X-GitHub-Event (unverified); time = arrival", () => {
    const body = enc(JSON.stringify(payload));
    expect(envelope(delivery, body)).toEqual({
      ok: true,
      row: { id: sha256(body), time: NOW_MS, type: "push", deliveryId: delivery["X-GitHub-Delivery"], payload },
      identity: sha256(body),
    });
  });

  test("another delivery id or event header on the same bytes is the same identity", () => {
    const body = enc(JSON.stringify(payload));
    const forged = envelope({ "X-GitHub-Delivery": "forged-1", "X-GitHub-Event": "release" }, body);
    expect(forged).toMatchObject({ ok: true, row: { id: sha256(body), deliveryId: "forged-1", type: "release" }, identity: sha256(body) });
    expect(envelope(delivery, enc(JSON.stringify({ ...payload, ref: "x" })))).not.toMatchObject({ identity: sha256(body) });
  });

  test("a form-encoded delivery carries the JSON in its payload field; its identity is the signed (form) bytes", () => {
    const form = enc(`payload=${encodeURIComponent(JSON.stringify(payload))}`);
    const headers = new Headers({ ...delivery, "content-type": "application/x-www-form-urlencoded" });
    expect(envelope(headers, form)).toMatchObject({ ok: true, row: { id: sha256(form), payload }, identity: sha256(form) });
    expect(envelope(headers, enc("other=1"))).toMatchObject({ ok: false, reason: expect.stringMatching(/^the body is not valid JSON/) });
  });

  test("no X-GitHub-Delivery, or a body that is not a JSON object, is refused", () => {
    expect(envelope({ "X-GitHub-Event": "push" }, enc("{}"))).toEqual({ ok: false, reason: "missing X-GitHub-Delivery header" });
    expect(envelope(delivery, enc("[]"))).toEqual({ ok: false, reason: "the body is not a JSON object" });
    expect(envelope(delivery, new Uint8Array([0xff, 0xfe]))).toEqual({ ok: false, reason: "the body is not valid UTF-8" });
  });

  test("the batch id is github: + the body's SHA-256, which a redelivery (the same bytes) keeps", async () => {
    const hash = sha256(enc(JSON.stringify(payload)));
    expect(await batchIdFor("github", hash)).toBe(`github:${hash}`);
  });
});
