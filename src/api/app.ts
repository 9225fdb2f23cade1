import { Hono } from "hono";
import { cors } from "hono/cors";
import { isInjectedFault } from "../instrument/faults";
import { requireAdmin } from "./auth";
import { testRoutes } from "./routes/test-buckets";
import { HttpError, internalError, notFound, problemResponse } from "../http/problem";
import { checkParams, mount, mountMethodNotAllowed, type App } from "./route";
import { ROUTES } from "./routes";

/**
 * The Worker's HTTP face: the declared routes (src/api/routes, one file per
 * resource), each behind the gate its `auth` names, then the 405s of their
 * paths. Nothing is served that is not declared there (test/integration/api/openapi.test.ts).
 */
export const app = new Hono<App>();

app.onError((err, c) => {
  if (err instanceof HttpError) return problemResponse(err, new URL(c.req.url).pathname);
  if (!isInjectedFault(err)) console.error("unhandled", err);
  return problemResponse(internalError(), new URL(c.req.url).pathname);
});

// No CORS unless CORS_ORIGINS names the browser origins that may call.
app.use("*", async (c, next) => {
  const origins = (c.env.CORS_ORIGINS ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
  if (origins.length === 0) return next();
  return cors({
    origin: origins,
    allowHeaders: ["authorization", "content-type", "idempotency-key", "x-source", "x-signature"],
    exposeHeaders: ["idempotency-key", "retry-after"],
    maxAge: 600,
  })(c, next);
});

app.notFound((c) => problemResponse(notFound(`no route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

mount(app, ROUTES);

// Test builds only: the e2e tests' access to the local buckets (src/sources/files/routes.ts).
app.route("/", testRoutes);

// What no route answered (an unknown /v1 path, a declared path with another
// method): the admin token, then a valid stream name, before the 404 or 405.
const STREAM = "/v1/streams/:stream";
app.use("/v1/*", async (c, next) => {
  await requireAdmin(c.req.header("authorization"), c.env);
  await next();
});
app.use(`${STREAM}/*`, checkParams(STREAM));
app.use(STREAM, checkParams(STREAM));

mountMethodNotAllowed(app, ROUTES);
