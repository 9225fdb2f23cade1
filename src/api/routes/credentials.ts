import { coordinatorStub } from "../../env";
import { zodErrors } from "../../stream/config";
import { credentialBody, hashToken, newSecret, type StoredCredential } from "../../credentials/credential";
import { badRequest, conflict, notFound } from "../../http/problem";
import { route } from "../route";
import { credentialCreatedSchema, credentialListSchema } from "../schemas";
import { sealSecret } from "../../credentials/sealing";
import { missing, STREAM } from "./shared";

// Per-source ingest credentials (credentialBody in ../credentials), shown once at creation and never again.
const CREDENTIALS = `${STREAM}/sources/:source/credentials`;

export const createCredential = route({
  method: "post",
  path: CREDENTIALS,
  summary: "Create a source credential; its secret is shown once",
  tag: "credentials",
  auth: "admin",
  description: "The provider types need the provider's `secret`; `token` and `hmac` get a generated one when it is left out.",
  request: { body: credentialBody },
  responses: { 201: { schema: credentialCreatedSchema, description: "the credential with its secret" } },
  handler: async (c) => {
    const parsed = credentialBody.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) throw badRequest("the credential is invalid", { errors: zodErrors(parsed.error) });
    const { type, label } = parsed.data;
    const secret = parsed.data.secret ?? newSecret(type === "token" ? "token" : "hmac");
    const stream = c.get("stream");
    const source = c.req.param("source")!;
    const id = `cred_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const cred: StoredCredential = {
      id,
      source,
      type,
      label: label ?? null,
      createdAt: Date.now(),
      material: type === "token" ? await hashToken(secret) : await sealSecret(secret, c.env, { stream, source, id }),
    };
    const added = await coordinatorStub(c.env, stream).addCredential(cred);
    if (added === "missing") throw missing(stream);
    if (added === "duplicate")
      throw conflict("credential-in-use", "this token is already a credential of this stream; choose another (or omit secret to get a generated one)");
    if (added === "other-provider") {
      throw conflict(
        "credential-provider-mismatch",
        `source "${source}" already verifies another provider's webhooks; a source's webhook credentials are all of one provider: use another source for ${type}`,
      );
    }
    const { material: _m, ...shown } = cred;
    return c.json({ ...shown, secret }, 201);
  },
});

export const listCredentials = route({
  method: "get",
  path: CREDENTIALS,
  summary: "A source's credentials, without secrets",
  tag: "credentials",
  auth: "admin",
  responses: { 200: { schema: credentialListSchema, description: "{credentials}" } },
  handler: async (c) => {
    const coordinator = coordinatorStub(c.env, c.get("stream"));
    if (!(await coordinator.locate())) throw missing(c.get("stream"));
    const list = await coordinator.credentials(c.req.param("source")!);
    return c.json({ credentials: list.map(({ material: _m, ...shown }) => shown) });
  },
});

export const revokeCredential = route({
  method: "delete",
  path: `${CREDENTIALS}/:id`,
  summary: "Revoke a credential",
  tag: "credentials",
  auth: "admin",
  description: "At once.",
  responses: { 204: { description: "revoked" } },
  handler: async (c) => {
    const deleted = await coordinatorStub(c.env, c.get("stream")).deleteCredential(c.req.param("source")!, c.req.param("id")!);
    if (!deleted) throw notFound(`no credential ${c.req.param("id")} for source ${c.req.param("source")}`);
    return c.body(null, 204);
  },
});

export const routes = [createCredential, listCredentials, revokeCredential];
