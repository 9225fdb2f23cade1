/**
 * The typed client against the route table (src/api/routes): each of its
 * methods calls a declared operation, with its method, path and declared query
 * parameters only, and every operation a program calls has a method. A route
 * added without a client method, or a client method that calls what is not
 * declared, fails here.
 */
import { describe, expect, test, vi } from "vitest";
import { createClient, type Client } from "edge-dedup/client";

// The table's handlers reach the Durable Object classes (cloudflare:workers): Node gets a stand-in; no handler runs here.
vi.mock("cloudflare:workers", () => ({ DurableObject: class {} }));
interface Declared {
  method: string;
  path: string;
  request?: { query?: { shape: Record<string, unknown> } };
  responses: Record<string, unknown>;
}
// By URL, so the Node typecheck does not follow it into the Worker's code (the Worker's tsconfig checks that).
const { ROUTES } = (await import(new URL("../../../src/api/routes/index.ts", import.meta.url).href)) as { ROUTES: readonly Declared[] };

/** Pages and the document itself: read by browsers and tools, not by programs through the client. */
const NOT_FOR_THE_CLIENT = ["get /openapi.json", "get /docs", "get /dashboard", "get /favicon.ico"];

const pattern = (path: string) => new RegExp(`^${path.replace(/:\w+/g, "[^/]+")}$`);
const declared = (method: string, pathname: string) => ROUTES.filter((r) => r.method === method.toLowerCase() && pattern(r.path).test(pathname));

/** One call of every method but request(), as a program would make it. */
const CALLS: { [K in Exclude<keyof Client, "request">]: (c: Client) => Promise<unknown> } = {
  listStreams: (c) => c.listStreams({ limit: 5, after: "a" }),
  putStream: (c) => c.putStream("s", { key: ["id"] }),
  getStream: (c) => c.getStream("s"),
  rescaleStream: (c) => c.rescaleStream("s", 16),
  deleteStream: (c) => c.deleteStream("s"),
  postEvents: (c) => c.postEvents("s", { rows: [] }),
  ingest: (c) => c.ingest("s", { rows: [], source: "a", batchId: "b" }),
  webhook: (c) => c.webhook("s", "hooks", "{}", { "stripe-signature": "t=1,v1=00" }),
  output: (c) => c.output("s", { after: 3 }),
  late: (c) => c.late("s", { after: 3 }),
  rejected: (c) => c.rejected("s", { after: 3 }),
  conflicts: (c) => c.conflicts("s", { after: 3 }),
  duplicates: (c) => c.duplicates("s", { after: 3 }),
  progress: (c) => c.progress("s", { limit: 10 }),
  state: (c) => c.state("s", { partition: 0, limit: 10, after: "k" }),
  health: (c) => c.health("s"),
  advice: (c) => c.advice("s"),
  startRun: (c) => c.startRun("s", { prefix: "in/" }),
  getRun: (c) => c.getRun("s", "run_1"),
  publication: (c) => c.publication("s"),
  createCredential: (c) => c.createCredential("s", "a", { type: "token" }),
  listCredentials: (c) => c.listCredentials("s", "a"),
  revokeCredential: (c) => c.revokeCredential("s", "a", "cred_1"),
  table: (c) => c.table("s"),
  tableFile: (c) => c.tableFile("s", "data/x.parquet"),
  listDestinations: (c) => c.listDestinations("s"),
  putDestination: (c) => c.putDestination("s", "hook", { type: "http", url: "https://example.com/hook" }),
  getDestination: (c) => c.getDestination("s", "hook"),
  deleteDestination: (c) => c.deleteDestination("s", "hook"),
  deadLane: (c) => c.deadLane("s", "hook", { limit: 10, after: "3.1" }),
  attempts: (c) => c.attempts("s", "hook", { id: "s.3.1", limit: 5 }),
  replayDestination: (c) => c.replayDestination("s", "hook", { fromSeq: 1 }),
  rotateDestinationSecret: (c) => c.rotateDestinationSecret("s", "hook"),
  metrics: (c) => c.metrics(),
  healthz: (c) => c.healthz(),
};

describe("the client and the route table", () => {
  test("every client method calls a declared operation, with declared query parameters only; every operation for programs has a method", async () => {
    const hit = new Set<string>();
    const client = createClient({
      baseUrl: "http://svc.test",
      token: "t",
      fetch: async (url, init) => {
        const u = new URL(url);
        const matches = declared(init.method!, u.pathname);
        expect(
          matches.map((r) => r.path),
          `${init.method} ${u.pathname} is not declared`,
        ).toHaveLength(1);
        const r = matches[0]!;
        hit.add(`${r.method} ${r.path}`);
        const query = Object.keys(r.request?.query?.shape ?? {});
        for (const name of u.searchParams.keys()) expect(query, `?${name} of ${r.method} ${r.path}`).toContain(name);
        // The status the operation declares, with a body the client can read.
        const status = Number(Object.keys(r.responses)[0]);
        return new Response(status === 204 ? null : "{}", { status, headers: { "x-commit-seq": "0" } });
      },
    });
    expect(
      Object.keys(client)
        .filter((k) => k !== "request")
        .sort(),
    ).toEqual(Object.keys(CALLS).sort());
    for (const call of Object.values(CALLS)) await call(client);
    const forPrograms = ROUTES.map((r) => `${r.method} ${r.path}`).filter((r) => !NOT_FOR_THE_CLIENT.includes(r));
    expect([...hit].sort()).toEqual(forPrograms.sort());
  });
});
