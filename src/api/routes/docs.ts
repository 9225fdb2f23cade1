import { docsPage, openApiDocument } from "../openapi";
import { route } from "../route";

// The contract (src/api/openapi.ts), derived from the route table: no credential, no data.
export const openapi = route({
  method: "get", path: "/openapi.json", summary: "This document", tag: "operate", auth: "public",
  responses: { 200: { description: "OpenAPI 3.1" } },
  handler: (c) => c.json(openApiDocument()),
});

export const docs = route({
  method: "get", path: "/docs", summary: "This document, as a page", tag: "operate", auth: "public",
  responses: { 200: { media: "text/html", description: "HTML" } },
  handler: (c) => c.html(docsPage()),
});

export const routes = [openapi, docs];
