/**
 * The dashboard's script is TypeScript in src/dashboard/client, bundled by
 * scripts/build-dashboard.ts into src/dashboard/script.generated.ts, which is
 * committed: what the Worker serves must be what the current source builds to.
 */
import { describe, expect, test } from "vitest";
import { bundleDashboardScript, committedGeneratedModule, GENERATED, generatedModule } from "../../../scripts/build-dashboard.ts";
import { DASHBOARD_HTML } from "../../../src/dashboard/page";
import { DASHBOARD_SCRIPT } from "../../../src/dashboard/script.generated";

describe("the dashboard's generated script", () => {
  test("is byte for byte what the build makes of src/dashboard/client (else: npm run build:dashboard)", async () => {
    const built = generatedModule(await bundleDashboardScript());
    expect(committedGeneratedModule() === built, `${GENERATED} is stale: run npm run build:dashboard and commit it`).toBe(true);
  });

  test("is the module's string, strict, one IIFE", async () => {
    expect(DASHBOARD_SCRIPT).toBe(await bundleDashboardScript());
    expect(DASHBOARD_SCRIPT.startsWith('"use strict";\n(() => {\n')).toBe(true);
    expect(DASHBOARD_SCRIPT.endsWith("})();\n")).toBe(true);
  });

  test("sits in the page's inline, nonce-tagged script element as it is", () => {
    // nothing in it ends the element early, or looks like the nonce placeholder dashboardResponse() replaces
    expect(DASHBOARD_SCRIPT).not.toMatch(/<\/script|<!--/i);
    expect(DASHBOARD_SCRIPT).not.toContain("__NONCE__");
    expect(DASHBOARD_HTML).toContain(`<script nonce="__NONCE__">${DASHBOARD_SCRIPT}</script>`);
    expect(DASHBOARD_HTML.match(/<script\b/g)).toHaveLength(1);
  });
});
