/**
 * The dashboard (GET /dashboard, src/dashboard) in a real headless browser —
 * Debian's chromium driven by playwright-core — against a real `wrangler dev`:
 * it shows a stream's own figures, read from the JSON API with the token typed
 * into the page, and says so plainly when the token is wrong or the stream is gone.
 *
 * A destination whose handler (a node:http server on 127.0.0.1) always answers
 * 500 shows its lanes, its dead rows with their attempts, its recent attempts,
 * a row's attempts found by webhook-id, and a replay that sends the rows again.
 *
 * Needs /usr/bin/chromium (.ci/run installs it); without it the tests fail, they do not skip.
 * The screenshot goes to a temporary directory (its path is printed); with
 * UPDATE_DASHBOARD_SCREENSHOT=1 it also replaces docs/guides/dashboard.png.
 */
import { copyFileSync, existsSync, mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { at, pollUntil, useServer } from "./server";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const STREAM = "dash";
const PARTITIONS = 4;

const { server, api } = useServer();
let browser: Browser | undefined;

// Without chromium every test fails (a failing beforeAll would only mark them skipped).
beforeAll(async () => {
  if (existsSync(CHROMIUM)) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});
afterAll(async () => {
  await browser?.close();
});

function theBrowser(): Browser {
  if (!browser) {
    throw new Error(
      `the dashboard tests need a headless chromium at ${CHROMIUM} and there is none: ` +
        "install Debian's (apt-get install -y chromium; .ci/run does it), or set CHROMIUM_PATH",
    );
  }
  return browser;
}

/** Formats an epoch-ms time as the page does. */
const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");

async function openPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await theBrowser().newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[134]/.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  await page.goto(`${server.url}/dashboard`);
  return { page, errors };
}

async function enterToken(page: Page, token: string): Promise<void> {
  await page.fill("#token", token);
  await page.click("#connect");
}

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.textContent(selector)) ?? "").trim();
}

describe("the dashboard in a browser", () => {
  test("GET /dashboard is a static page: no token needed, no data in it, a strict CSP", async () => {
    theBrowser();
    const res = await api.request("GET", "/dashboard", { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/connect-src 'self'/);
    const nonce = csp.match(/script-src 'nonce-([^']+)'/)?.[1];
    expect(nonce).toBeTruthy();
    expect(res.text).toContain(`<script nonce="${nonce}">`);
    expect(res.text).not.toContain(server.token);
    expect(res.text).not.toMatch(/\b(src|href)=["']|<link|@import|url\(/); // nothing loaded from elsewhere (no CDN)
    expect((await api.request("POST", "/dashboard", { token: null })).status).toBe(405);
  });

  test("shows the stream's own figures: health, held-back source, watermark, counts, partitions, batches", async () => {
    theBrowser();
    await api.putStream(STREAM, {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "5 minutes",
      partitions: PARTITIONS,
      sources: { web: {}, mobile: {} },
    });
    await api.putStream("other", { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute" });
    await api.ingest(STREAM, [{ id: "m1", ts: at(9) }], { source: "mobile" });
    await api.ingest(
      STREAM,
      [
        { id: "a", ts: at(10) },
        { id: "a", ts: at(10) },
        { id: "b", ts: at(10, 1) },
      ],
      { source: "web" },
    );
    await api.ingest(
      STREAM,
      [
        { id: "c", ts: at(10, 30) },
        { id: "a", ts: at(10) },
      ],
      { source: "web" },
    );
    // m0 is older than the watermark (8:55): late; "nots" has no event time: rejected.
    const last = await api.ingest(STREAM, [{ id: "m2", ts: at(9, 30) }, { id: "m0", ts: at(8) }, { id: "m1", ts: at(9) }, { id: "nots" }], {
      source: "mobile",
    });
    expect(last).toMatchObject({ late: 1, duplicates: 1, emitted: 1, watermarkAfter: at(9, 25) });

    // m1 (9:00) is behind the watermark (9:25): its state row is evicted; wait for the state to settle.
    const settled = await pollUntil(
      () => api.stream(STREAM),
      (s) => s.state.rows === 4,
      10_000,
    );
    expect(settled.state.rows).toBe(4);
    const info = await api.stream(STREAM);
    const progress = await api.progress(STREAM);
    const sum = (k: "emitted" | "duplicates" | "late" | "rejected") => progress.reduce((a, p) => a + p[k], 0);
    expect([sum("emitted"), sum("duplicates"), sum("late"), sum("rejected")]).toEqual([5, 3, 1, 1]);
    const health = JSON.parse((await api.request("GET", `/v1/streams/${STREAM}/health`)).text);
    expect(health.heldBackBy).toBe("mobile");

    const { page, errors } = await openPage();
    await enterToken(page, server.token);
    await page.waitForSelector(`#stream option[value="${STREAM}"]`, { state: "attached" });
    expect(await page.$$eval("#stream option", (os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(["", "dash", "other"]);
    await page.selectOption("#stream", STREAM);
    await page.waitForSelector("#watermark");

    expect(await text(page, "#watermark")).toBe(iso(info.watermark));
    expect(await text(page, "#watermark")).toBe("2024-01-01T09:25:00Z");
    expect(await text(page, "#status")).toBe(health.status);
    expect(await text(page, "#held-back-by")).toBe("mobile");
    expect(await text(page, "#total-emitted")).toBe(String(sum("emitted")));
    expect(await text(page, "#total-duplicates")).toBe(String(sum("duplicates")));
    expect(await text(page, "#total-late")).toBe(String(sum("late")));
    expect(await text(page, "#total-rejected")).toBe(String(sum("rejected")));
    expect(await text(page, "#batches-committed")).toBe(String(info.batches.committed));
    expect(await text(page, "#bookkeeping")).toContain(`${info.bookkeeping.batchesRemembered} batch ids remembered for 24 h`);
    expect(await text(page, "#state-total")).toContain(`${info.state.rows} rows`);

    // Per source: the watermark and max event time of GET /v1/streams/{s}.
    for (const [name, src] of Object.entries(info.sources)) {
      const cells = await page.$$eval(`#sources-table tr[data-source="${name}"] td`, (tds) => tds.map((td) => td.textContent?.trim()));
      expect(cells[1]).toBe(iso(src.watermark));
      expect(cells[2]).toBe(iso(src.maxEventTime!));
    }
    expect(await text(page, '#sources-table tr[data-source="mobile"] td:first-child')).toContain("holds back");
    // Every column has a heading; the page's clock is UTC, as every other time on it (#15).
    expect(await page.$$eval("th", (ths) => ths.filter((th) => (th.textContent ?? "").trim() === "").length)).toBe(0);
    expect(await page.$$eval("#sources-table th", (ths) => ths.map((th) => th.textContent))).toEqual([
      "Source",
      "Watermark",
      "Max event time",
      "Last batch",
      "Declared",
      "Activity",
    ]);
    expect(await text(page, "#updated")).toMatch(/^updated \d\d:\d\d:\d\dZ/);
    const icon = await fetch(`${server.url}/favicon.ico`);
    expect([icon.status, icon.headers.get("content-type")]).toEqual([200, "image/svg+xml"]);
    expect(await icon.text()).toMatch(/^<svg /);

    // One bar per partition, rows and bytes, with each partition's real figures.
    const state = await api.allState(STREAM, PARTITIONS);
    const bars = async (cls: string) => page.$$eval(`rect.${cls}`, (rs) => rs.map((r) => Number(r.getAttribute("data-value"))));
    expect(await bars("bar-rows")).toEqual(state.map((s) => s.rows));
    expect(await bars("bar-bytes")).toEqual(state.map((s) => s.bytes));
    expect((await bars("bar-rows")).reduce((a, b) => a + b, 0)).toBe(info.state.rows);

    // The line charts have their series; the table has the batches, newest first.
    expect(await page.$$eval('svg[data-chart="watermarks"] path[data-series="global watermark"]', (ps) => ps.length)).toBe(1);
    expect(await page.$$eval('svg[data-chart="watermarks"] path[data-series="web watermark"]', (ps) => ps.length)).toBe(1);
    // The per-minute bars add up to the totals.
    for (const k of ["emitted", "duplicates", "late", "rejected"] as const) {
      const values = await page.$$eval(`svg[data-chart="rates"] rect[data-series="${k}"]`, (rs) => rs.map((r) => Number(r.getAttribute("data-value"))));
      expect(values.reduce((a, b) => a + b, 0)).toBe(sum(k));
    }
    const rows = await page.$$eval("#batches-table tbody tr", (trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll("td")).map((td) => td.textContent?.trim())),
    );
    expect(rows).toHaveLength(progress.length);
    const newest = progress[progress.length - 1];
    expect(await page.getAttribute("#batches-table tbody tr", "data-batch")).toBe(newest.batchId);
    expect([rows[0][1], ...rows[0].slice(3, 8)]).toEqual(["mobile", "4", "1", "1", "1", "1"]);

    // The token is in sessionStorage and never in the URL.
    expect(page.url()).not.toContain(server.token);
    expect(page.url()).toContain(`#stream=${STREAM}`);
    expect(await page.evaluate(() => sessionStorage.getItem("edge-dedup.adminToken"))).toBe(server.token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);

    // Auto-refresh: a new batch shows up within a refresh (5 s) without touching the page.
    await api.ingest(
      STREAM,
      [
        { id: "d", ts: at(10, 40) },
        { id: "e", ts: at(10, 41) },
      ],
      { source: "web" },
    );
    await page.waitForFunction((n) => document.getElementById("total-emitted")?.textContent === String(n), sum("emitted") + 2, { timeout: 15_000 });

    // Pause stops it.
    await page.click("#pause");
    expect(await text(page, "#pause")).toBe("Resume");
    await api.ingest(STREAM, [{ id: "f", ts: at(10, 42) }], { source: "web" });
    await page.waitForTimeout(6_000);
    expect(await text(page, "#total-emitted")).toBe(String(sum("emitted") + 2));
    await page.click("#pause");
    await page.waitForFunction((n) => document.getElementById("total-emitted")?.textContent === String(n), sum("emitted") + 3, { timeout: 15_000 });

    const dir = mkdtempSync(join(tmpdir(), "edge-dedup-dashboard-"));
    const shot = join(dir, "dashboard.png");
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`dashboard screenshot: ${shot}`);
    if (process.env.UPDATE_DASHBOARD_SCREENSHOT === "1") copyFileSync(shot, join(ROOT, "docs/guides/dashboard.png"));

    expect(errors).toEqual([]);
    await page.context().close();
  });

  test("the delay advisor panel: per source the gap and disorder p99.9, the duplicate rate, recommended vs current delay", async () => {
    theBrowser();
    await api.putStream("advised", { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", partitions: 2 });
    // web: k1 again 5 minutes later, and k3 3 minutes behind web's newest; app: y 3 minutes out of order, x twice at once.
    await api.ingest(
      "advised",
      [
        { id: "k1", ts: at(10) },
        { id: "k2", ts: at(10, 1) },
      ],
      { source: "web" },
    );
    expect(
      await api.ingest(
        "advised",
        [
          { id: "k1", ts: at(10, 5) },
          { id: "k3", ts: at(10, 2) },
        ],
        { source: "web" },
      ),
    ).toMatchObject({ emitted: 1, duplicates: 1, late: 0 });
    expect(
      await api.ingest(
        "advised",
        [
          { id: "x", ts: at(10, 10) },
          { id: "y", ts: at(10, 7) },
          { id: "x", ts: at(10, 10) },
        ],
        { source: "app" },
      ),
    ).toMatchObject({ emitted: 2, duplicates: 1, late: 0 });
    const advice = JSON.parse((await api.request("GET", "/v1/streams/advised/advice")).text);
    expect(advice.sources.web).toMatchObject({
      rows: 4,
      duplicates: 1,
      gaps: { "p99.9": 300_000 },
      disorder: { "p99.9": 180_000 },
      recommendation: { watermarkDelay: "10 minutes" },
    });
    expect(advice.sources.app).toMatchObject({
      rows: 3,
      duplicates: 1,
      gaps: { "p99.9": 0 },
      disorder: { "p99.9": 180_000 },
      recommendation: { watermarkDelay: "5 minutes" },
    });

    const { page, errors } = await openPage();
    await enterToken(page, server.token);
    await page.waitForSelector('#stream option[value="advised"]', { state: "attached" });
    await page.selectOption("#stream", "advised");
    await page.waitForSelector("#advice-table");
    const figures = async (row: string) =>
      page.$$eval(`#advice-table tr[data-advice="${row}"] td[data-figure]`, (tds) =>
        Object.fromEntries(tds.map((td) => [td.getAttribute("data-figure"), td.textContent?.trim()])),
      );
    expect(await figures("web")).toEqual({
      "duplicate-rate": "1 (25.0%)",
      "gap-p999": "5 min",
      "disorder-p999": "3 min",
      recommended: "10 minutes",
      current: "1 minute",
      verdict: "raise to 10 minutes",
    });
    expect(await figures("app")).toEqual({
      "duplicate-rate": "1 (33.3%)",
      "gap-p999": "0",
      "disorder-p999": "3 min",
      recommended: "5 minutes",
      current: "1 minute",
      verdict: "raise to 5 minutes",
    });
    expect(await figures("(stream)")).toMatchObject({ "duplicate-rate": "2 (28.6%)", "gap-p999": "5 min", recommended: "10 minutes" });
    expect(await text(page, "#advice-recommendation")).toMatch(/^Recommended for the stream: 10 minutes \(duplicate gaps\)/);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  // Issue 14: the page's per-stream caches were plain objects, so "constructor" found Object's own constructor.
  test("streams named like Object's own properties (constructor, toString, hasOwnProperty) show like any other", async () => {
    const names = ["constructor", "toString", "hasOwnProperty"];
    for (const name of names) {
      await api.putStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
      await api.ingest(name, [{ id: "a", ts: at(10) }]);
    }
    const { page, errors } = await openPage();
    await enterToken(page, server.token);
    for (const name of names) {
      await page.waitForSelector(`#stream option[value="${name}"]`, { state: "attached" });
      await page.selectOption("#stream", name);
      await page.waitForFunction((n) => document.getElementById("watermark")?.textContent?.trim() === n, iso(at(9, 55)), { timeout: 10_000 });
      await page.click("#refresh"); // a second round reads the caches it filled
      await page.waitForSelector("#watermark");
      expect(await text(page, "#error")).toBe("");
      expect(await text(page, "#total-emitted")).toBe("1");
    }
    expect(errors).toEqual([]);
    await page.context().close();
  });

  test("the delivery panel: a destination's lanes, its dead lane with each row's attempts, attempts by webhook-id, replay", async () => {
    theBrowser();
    // The handler: answers 500 to everything, and notes when each webhook-id came.
    const seen = new Map<string, number[]>();
    const handler = createServer((req, res) => {
      const id = String(req.headers["webhook-id"]);
      (seen.get(id) ?? seen.set(id, []).get(id)!).push(Date.now());
      req.resume();
      req.on("end", () => res.writeHead(500).end("down"));
    });
    await new Promise<void>((r) => handler.listen(0, "127.0.0.1", r));
    try {
      const s = "dash-deliver";
      const D = `/v1/streams/${s}/destinations/hook`;
      const get = async (path: string) => {
        const r = await api.request("GET", path);
        expect(r.status, r.text).toBe(200);
        return JSON.parse(r.text);
      };
      await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 });
      const put = await api.request("PUT", D, {
        body: JSON.stringify({
          type: "http",
          url: `http://127.0.0.1:${(handler.address() as AddressInfo).port}/hook`,
          timeout: "1 second",
          retryFor: "1 second",
          lanes: 4,
          ordering: { by: ["id"] },
          maxPerSecond: 50,
        }),
        headers: { "content-type": "application/json" },
      });
      expect(put.status, put.text).toBe(201);
      expect(
        await api.ingest(s, [
          { id: "p", ts: at(10) },
          { id: "q", ts: at(10, 1) },
        ]),
      ).toMatchObject({ emitted: 2 });
      const dead = await pollUntil(
        () => get(`${D}/dead`),
        (p) => p.rows.length === 2,
        60_000,
        250,
      );
      expect(dead.rows.map((r: { seq: number }) => r.seq)).toEqual([1, 1]);
      const [first, second] = dead.rows;
      expect(first.history.length).toBeGreaterThan(0);

      const { page, errors } = await openPage();
      await enterToken(page, server.token);
      await page.waitForSelector(`#stream option[value="${s}"]`, { state: "attached" });
      await page.selectOption("#stream", s);
      await page.waitForSelector(`tr[data-dead-id="${second.id}"]`, { timeout: 15_000 });
      await page.click("#pause"); // what follows reads a page that holds still
      const block = '[data-destination-detail="hook"]';

      // The lanes: four, ordered by id, capped at 50 a second, nothing pending.
      expect(await text(page, `${block} [data-figure="lanes"]`)).toBe("4 lanes · ordered by id · ≤ 50/s — no lane has rows pending");
      expect(await text(page, 'tr[data-destination="hook"] [data-figure="dead"]')).toBe("2");

      // The dead lane: each row's id, commit, when it died, its attempts, its last error; its attempts beside it.
      for (const r of dead.rows) {
        const row = `${block} tr[data-dead-id="${r.id}"]`;
        expect(await text(page, `${row} [data-field="seq"]`)).toBe("1");
        expect(await text(page, `${row} [data-field="died-at"]`)).toBe(iso(r.diedAt));
        expect(await text(page, `${row} [data-field="attempts"]`)).toBe(String(r.attempts));
        expect(await text(page, `${row} [data-field="last-error"]`)).toBe("HTTP 500");
      }
      const firstRow = `${block} tr[data-dead-id="${first.id}"]`;
      expect(await page.isVisible(`${firstRow} li[data-attempt]`)).toBe(false);
      await page.click(`${firstRow} details summary`);
      const lines = await page.$$eval(`${firstRow} li[data-attempt]`, (lis) =>
        lis.map((li) => Object.fromEntries(Array.from(li.querySelectorAll("[data-field]")).map((f) => [f.getAttribute("data-field"), f.textContent]))),
      );
      const ms = (n: number) => `${n.toLocaleString("en-US")} ms`;
      expect(lines).toEqual(first.history.map((a: { at: number; ms: number }) => ({ at: iso(a.at), status: "500", ms: ms(a.ms), error: "HTTP 500" })));
      // Opened, it stays open through a refresh (which draws it anew).
      await page.$eval(`${firstRow} details`, (el) => el.setAttribute("data-drawn-before", ""));
      await page.click("#refresh");
      await page.waitForFunction((sel) => !document.querySelector(sel)?.hasAttribute("data-drawn-before"), `${firstRow} details`, { timeout: 10_000 });
      expect(await page.isVisible(`${firstRow} li[data-attempt]`)).toBe(true);

      // Recent attempts: both rows, dead, last answered 500.
      const recent = await get(`${D}/attempts`);
      expect(recent.rows.map((r: { state: string }) => r.state)).toEqual(["dead", "dead"]);
      for (const r of dead.rows) {
        const row = `${block} .attempts-table tr[data-attempt-id="${r.id}"]`;
        expect(await text(page, `${row} [data-field="state"]`)).toBe("dead");
        expect(await text(page, `${row} [data-field="status"]`)).toBe("500");
        expect(await text(page, `${row} [data-field="error"]`)).toBe("HTTP 500");
        expect(await text(page, `${row} [data-field="attempts"]`)).toBe(String(r.history.length));
      }

      // Find by webhook-id: the row's attempts; an id the destination has no row of, the server's own detail.
      await page.fill(`${block} input[name="webhook-id"]`, second.id);
      await page.click(`${block} .finder button`);
      await page.waitForSelector(`${block} [data-found-id="${second.id}"]`);
      expect(await text(page, `${block} [data-found-id] [data-field="state"]`)).toBe("dead");
      expect(await page.$$eval(`${block} [data-found-id] li [data-field="status"]`, (fs) => fs.map((f) => f.textContent))).toEqual(
        second.history.map(() => "500"),
      );
      await page.fill(`${block} input[name="webhook-id"]`, `${s}.99.0`);
      await page.click(`${block} .finder button`);
      await page.waitForSelector(`${block} [data-role="not-found"]`);
      expect(await text(page, `${block} [data-role="not-found"]`)).toBe(
        `404: destination "hook" keeps no attempts of ${s}.99.0 (not a row it has, or delivered long ago)`,
      );

      // Replay: asked first, then the rows go again under the ids they had, and the page says so.
      let asked = "";
      page.once("dialog", (d) => {
        asked = d.message();
        void d.accept();
      });
      const replayedAt = Date.now();
      await page.click(`${block} button[data-role="replay"]`);
      await page.waitForFunction(
        (sel) => document.querySelector(sel)?.textContent === "replaying 2 dead rows from commit 1",
        `${block} [data-role="replayed"]`,
        { timeout: 10_000 },
      );
      expect(asked).toContain('Send the 2 dead rows of destination "hook" again?');
      expect(asked).toContain("from commit 1");
      await pollUntil(
        async () => (seen.get(first.id) ?? []).filter((t) => t >= replayedAt).length,
        (n) => n > 0,
        15_000,
        100,
      );
      expect((seen.get(first.id) ?? []).some((t) => t >= replayedAt)).toBe(true);
      expect((seen.get(second.id) ?? []).some((t) => t >= replayedAt)).toBe(true);
      expect([...seen.keys()].sort()).toEqual([first.id, second.id].sort());
      expect(errors).toEqual([]);
      await page.context().close();
    } finally {
      handler.closeAllConnections();
      await new Promise((r) => handler.close(r));
    }
  });

  test("a wrong token is a clear 403 in the page; an unreadable one a 401; a deleted stream a 404", async () => {
    const { page } = await openPage();
    await enterToken(page, "not-the-admin-token");
    await page.waitForFunction(() => /^403 /.test(document.getElementById("error")?.textContent ?? ""), null, { timeout: 10_000 });
    expect(await text(page, "#error")).toMatch(/^403 Forbidden: the admin token is not valid/);
    expect(await page.isHidden("#panels")).toBe(true);
    expect(await text(page, "#pause")).toBe("Resume"); // a bad token stops the auto-refresh

    // Forgetting the token clears it; a session without one says what to do.
    await page.click("#forget");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await text(page, "#error")).toMatch(/Enter the admin token/);

    // A token the API cannot read as a bearer token (it has a space) is a 401, shown as such.
    await enterToken(page, "two words");
    await page.waitForFunction(() => /^401 /.test(document.getElementById("error")?.textContent ?? ""), null, { timeout: 10_000 });
    expect(await text(page, "#error")).toMatch(/^401 Unauthorized: enter the admin token/);

    // A stream deleted while it is on screen: 404, said plainly.
    await api.putStream("doomed", { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute" });
    await enterToken(page, server.token);
    await page.waitForSelector('#stream option[value="doomed"]', { state: "attached" });
    await page.selectOption("#stream", "doomed");
    await page.waitForSelector("#watermark");
    expect(await text(page, "#error")).toBe("");
    expect((await api.request("DELETE", "/v1/streams/doomed")).status).toBe(204);
    await page.click("#refresh");
    await page.waitForFunction(() => /^404 Not found/.test(document.getElementById("error")?.textContent ?? ""), null, { timeout: 10_000 });
    expect(await text(page, "#error")).toContain('stream "doomed" does not exist');
    await page.context().close();
  });
});
