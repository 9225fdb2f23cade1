import type { Route } from "../route";
import * as credentials from "./credentials";
import * as dashboard from "./dashboard";
import * as destinations from "./destinations";
import { docsRoutes } from "./docs";
import * as events from "./events";
import * as health from "./health";
import * as metrics from "./metrics";
import * as ops from "./ops";
import * as output from "./output";
import * as runs from "./runs";
import * as state from "./state";
import * as streams from "./streams";
import * as table from "./table";
import * as webhooks from "./webhooks";

/**
 * Every operation of the service, one file per resource (docs/design.md#one-contract):
 * src/api/app.ts mounts them, src/api/openapi.ts documents them, in this order.
 * A resource added later is one more file and one more line here.
 */
export const ROUTES: readonly Route[] = [
  ...streams.routes,
  ...events.routes,
  ...webhooks.routes,
  ...runs.routes,
  ...output.routes,
  ...table.routes,
  ...ops.routes,
  ...state.routes,
  ...credentials.routes,
  ...destinations.routes,
  ...metrics.routes,
  ...health.routes,
  ...docsRoutes(() => ROUTES),
  ...dashboard.routes,
];
