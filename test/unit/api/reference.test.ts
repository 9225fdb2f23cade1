/**
 * docs/reference/http-api.md's reference is rendered from the OpenAPI document
 * (src/api/reference.ts): the committed file must be what the document renders
 * to now. `npm run docs:api` (UPDATE_DOCS=1) writes it instead of checking.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test, vi } from "vitest";
import { apiReferenceMarkdown, operationAnchor } from "../../../src/api/reference";

// The document comes from the route table (src/api/routes), whose handlers reach the
// Durable Object classes (cloudflare:workers): Node gets a stand-in base class; no handler runs here.
vi.mock("cloudflare:workers", () => ({ DurableObject: class {} }));
// By URL, so the Node typecheck does not follow it into the Worker's code (the Worker's tsconfig checks that).
const { openApiDocument } = (await import(new URL("../../../src/api/openapi.ts", import.meta.url).href)) as {
  openApiDocument(routes: unknown): Record<string, unknown>;
};
const { ROUTES } = (await import(new URL("../../../src/api/routes/index.ts", import.meta.url).href)) as { ROUTES: unknown };

const FILE = fileURLToPath(new URL("../../../docs/reference/http-api.md", import.meta.url));
const BEGIN = "<!-- generated from /openapi.json by npm run docs:api: do not edit below -->";
const END = "<!-- end generated -->";

const doc = openApiDocument(ROUTES) as any;
const markdown = apiReferenceMarkdown(doc);
const ops = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.keys(item).map((method) => ({ method, path, op: item[method] })),
);

/** A document of one operation, to see how the renderer treats a schema. */
const oneOp = (op: Record<string, unknown>) =>
  apiReferenceMarkdown({ openapi: "3.1.0", paths: { "/x": { post: { summary: "X", tags: ["t"], responses: {}, ...op } } } });
const row = (md: string, name: string) => md.split("\n").find((l) => l.startsWith(`| \`${name}\` |`));

describe("docs/reference/http-api.md", () => {
  test("its generated section is what the OpenAPI document renders to", () => {
    const text = readFileSync(FILE, "utf8");
    const from = text.indexOf(BEGIN);
    const to = text.indexOf(END);
    expect(from, `no ${BEGIN} in ${FILE}`).toBeGreaterThanOrEqual(0);
    expect(to, `no ${END} after the begin marker`).toBeGreaterThan(from);
    const generated = `\n${markdown}`;
    if (process.env.UPDATE_DOCS === "1") {
      writeFileSync(FILE, text.slice(0, from + BEGIN.length) + generated + text.slice(to));
      return;
    }
    expect(text.slice(from + BEGIN.length, to) === generated, "docs/reference/http-api.md is stale: run npm run docs:api").toBe(true);
  });
});

describe("apiReferenceMarkdown", () => {
  test("every operation of the document has its heading, and a link to it in the list of calls", () => {
    expect(ops.length).toBeGreaterThan(15);
    const anchors = ops.map((o) => operationAnchor(o.method, o.path));
    expect(new Set(anchors).size).toBe(anchors.length);
    for (const o of ops) {
      const call = `${o.method.toUpperCase()} ${o.path}`;
      expect(markdown).toContain(`\n### \`${call}\`\n`);
      expect(markdown).toContain(`[\`${call}\`](#${operationAnchor(o.method, o.path)})`);
      expect(markdown).toContain(o.op.summary);
    }
    // GitHub's slug of the heading `### \`GET /v1/streams/{stream}/output\``.
    expect(operationAnchor("get", "/v1/streams/{stream}/output")).toBe("get-v1streamsstreamoutput");
  });

  test("query parameters, with their defaults, come from the document", () => {
    const output = markdown.slice(markdown.indexOf("### `GET /v1/streams/{stream}/output`"));
    expect(row(output, "after")).toMatch(/\| query \| integer \|\s+\| `0` \|/);
    const state = markdown.slice(markdown.indexOf("### `GET /v1/streams/{stream}/state`"));
    expect(row(state, "partition")).toMatch(/\| query \| integer \|\s+\|/); // required unless ?row= is given: not marked
    expect(row(state, "row")).toMatch(/\| query \| string \|/);
    // A required query parameter is marked so.
    expect(row(oneOp({ parameters: [{ name: "p", in: "query", required: true, schema: { type: "integer" }, description: "the p" }] }), "p")).toMatch(
      /\| query \| integer \| yes \|/,
    );
  });

  test("a required body field is marked required, an optional one is not, and defaults and enums show", () => {
    const md = oneOp({
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["a"],
              properties: { a: { type: "string", description: "the a" }, b: { type: "string", enum: ["x", "y"], default: "x" } },
            },
          },
        },
      },
    });
    expect(row(md, "a")).toBe("| `a` | string | yes |  | the a |");
    expect(row(md, "b")).toBe("| `b` | string |  | `x` | one of `x`, `y` |");
  });

  test("nested objects, arrays of objects, maps and variants get dotted rows, not raw JSON", () => {
    const md = oneOp({
      responses: {
        200: {
          description: "ok",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["items"],
                properties: {
                  items: {
                    type: "array",
                    items: { type: "object", required: ["id"], properties: { id: { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 } } },
                  },
                  byName: { type: "object", additionalProperties: { type: "object", properties: { n: { type: "number", minimum: 0 } } } },
                  either: { oneOf: [{ type: "string" }, { type: "object", properties: { at: { type: ["number", "null"] } } }] },
                },
              },
            },
          },
        },
      },
    });
    expect(row(md, "items")).toBe("| `items` | object[] | yes |  |  |");
    expect(row(md, "items[].id")).toBe("| `items[].id` | integer | yes |  |  |");
    expect(row(md, "byName")).toMatch(/\| map of object \|/);
    expect(row(md, "byName.*.n")).toMatch(/\| number \|.*at least 0 \|$/);
    expect(row(md, "either")).toMatch(/\| string or object \|/);
    expect(row(md, "either.at")).toMatch(/\| number or null \|/);
    expect(md).not.toContain('"type"');
  });

  test("auth comes from security: none, one scheme, or alternatives", () => {
    const schemes = { components: { securitySchemes: { k: { type: "apiKey", in: "header", name: "X-K", description: "a key" } } } };
    const render = (security: unknown[]) => apiReferenceMarkdown({ ...schemes, paths: { "/x": { get: { summary: "X", security, responses: {} } } } });
    expect(render([])).toContain("**Auth:** none.");
    expect(render([{ k: [] }])).toContain("**Auth:** `X-K` header: a key.");
    expect(render([{ k: [] }, { k: [] }])).toContain("**Auth:** one of");
  });
});
