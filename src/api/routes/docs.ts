import { docsPage, openApiDocument } from "../openapi";
import { route, type Route } from "../route";

/**
 * The contract (src/api/openapi.ts), derived from the route table: no
 * credential, no data. The table is handed in (src/api/routes/index.ts), so
 * that the document's module does not import the table that holds it.
 */
export const docsRoutes = (table: () => readonly Route[]) => [
  route({
    method: "get",
    path: "/openapi.json",
    summary: "This document",
    tag: "operate",
    auth: "public",
    responses: { 200: { description: "OpenAPI 3.1" } },
    handler: (c) => c.json(openApiDocument(table())),
  }),
  route({
    method: "get",
    path: "/docs",
    summary: "This document, as a page",
    tag: "operate",
    auth: "public",
    responses: { 200: { media: "text/html", description: "HTML" } },
    handler: (c) => c.html(docsPage(table())),
  }),
];
