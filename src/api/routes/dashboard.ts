import { faviconResponse } from "../../dashboard/favicon";
import { dashboardResponse } from "../../dashboard/page";
import { route } from "../route";

// The operator's dashboard (src/dashboard): a static page, no data and so no auth; it calls /v1 with the admin token typed into it.
export const dashboard = route({
  method: "get",
  path: "/dashboard",
  summary: "The operator's dashboard (a static page; it calls /v1 with the admin token typed into it)",
  tag: "operate",
  auth: "public",
  responses: { 200: { media: "text/html", description: "HTML" } },
  handler: () => dashboardResponse(),
});

// The dashboard's tab icon: browsers ask every origin for /favicon.ico (a 404 otherwise). No auth, cached.
export const favicon = route({
  method: "get",
  path: "/favicon.ico",
  summary: "The dashboard's tab icon",
  tag: "operate",
  auth: "public",
  responses: { 200: { media: "image/svg+xml", description: "an SVG icon" } },
  handler: () => faviconResponse(),
});

export const routes = [dashboard, favicon];
