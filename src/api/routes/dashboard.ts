import { dashboardResponse } from "../../dashboard/page";
import { route } from "../route";

// The operator's dashboard (src/dashboard): a static page, no data and so no auth; it calls /v1 with the admin token typed into it.
export const dashboard = route({
  method: "get", path: "/dashboard", summary: "The operator's dashboard (a static page; it calls /v1 with the admin token typed into it)", tag: "operate", auth: "public",
  responses: { 200: { media: "text/html", description: "HTML" } },
  handler: () => dashboardResponse(),
});

export const routes = [dashboard];
