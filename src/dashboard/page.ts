/**
 * The operator's dashboard (GET /dashboard): one static page, HTML with its
 * CSS and JS inline, no build step, no framework, nothing from a CDN. It holds
 * no data: it asks the admin JSON API (/v1/streams…) from the browser with the
 * admin token the operator types in, kept in sessionStorage and sent only as
 * an Authorization header, never in a URL.
 *
 * The script is plain ES2020 in a string; it avoids backticks and "${" so that
 * it can sit in this template literal as it is.
 */

/** Where the script's nonce goes; dashboardResponse() fills in a fresh one per response. */
const NONCE = "__NONCE__";

const CSS = String.raw`
:root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --mute:#667085; --line:#e3e6eb; --ok:#1a7f37; --warn:#b7791f; --crit:#c62828; --accent:#2f6fde; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--ink); background:var(--bg); }
header { display:flex; flex-wrap:wrap; gap:12px; align-items:center; padding:10px 18px; background:#1d2330; color:#fff; }
header h1 { font-size:16px; margin:0 12px 0 0; font-weight:600; }
header label { color:#c9d1e0; font-size:12px; }
header input, header select, header button { font:inherit; padding:4px 8px; border-radius:6px; border:1px solid #48506a; background:#2a3142; color:#fff; }
header button { cursor:pointer; background:#3a4460; }
header button:hover { background:#4a5578; }
header .spacer { flex:1; }
#updated { color:#c9d1e0; font-size:12px; }
main { padding:14px 18px; display:grid; grid-template-columns:repeat(auto-fit, minmax(430px, 1fr)); gap:14px; }
section { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; min-width:0; }
section.wide { grid-column:1 / -1; }
section h2 { font-size:13px; text-transform:uppercase; letter-spacing:.04em; color:var(--mute); margin:0 0 8px; font-weight:600; }
#error { display:none; margin:12px 18px 0; padding:10px 14px; border-radius:8px; background:#fdecec; border:1px solid #f3b7b7; color:#8a1c1c; }
#error.shown { display:block; }
#empty { margin:40px auto; max-width:560px; color:var(--mute); text-align:center; }
.badge { display:inline-block; padding:2px 10px; border-radius:999px; color:#fff; font-weight:600; text-transform:uppercase; font-size:12px; }
.badge.ok { background:var(--ok); } .badge.warn { background:var(--warn); } .badge.critical { background:var(--crit); }
ul.reasons { margin:8px 0 0; padding-left:18px; } ul.reasons li.warn { color:var(--warn); } ul.reasons li.critical { color:var(--crit); }
dl.kv { display:grid; grid-template-columns:max-content 1fr; gap:3px 14px; margin:8px 0 0; }
dl.kv dt { color:var(--mute); } dl.kv dd { margin:0; font-variant-numeric:tabular-nums; }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
th, td { text-align:right; padding:3px 8px; border-bottom:1px solid var(--line); white-space:nowrap; }
th { color:var(--mute); font-weight:600; font-size:12px; }
th:first-child, td:first-child, td.text, th.text { text-align:left; }
.scroll { overflow-x:auto; }
.totals { display:flex; flex-wrap:wrap; gap:8px 18px; margin-bottom:6px; }
.totals div { font-size:12px; color:var(--mute); } .totals b { display:block; font-size:18px; color:var(--ink); font-variant-numeric:tabular-nums; }
svg { display:block; width:100%; height:auto; }
svg text { font-size:10px; fill:var(--mute); }
svg .axis { stroke:var(--line); }
.legend { display:flex; flex-wrap:wrap; gap:4px 14px; font-size:12px; color:var(--mute); margin-top:4px; }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:4px; vertical-align:-1px; }
.note { font-size:12px; color:var(--mute); margin:4px 0 0; }
.held { color:var(--crit); font-weight:600; }
tr.total td { font-weight:600; }
`;

const SCRIPT = String.raw`
(function () {
  "use strict";
  var TOKEN_KEY = "edge-dedup.adminToken";
  var REFRESH_MS = 5000;
  var COLORS = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#5f3dc4", "#e67700"];
  var RATE_SERIES = [["emitted", "#2b8a3e"], ["duplicates", "#2f6fde"], ["late", "#e67700"], ["rejected", "#c62828"]];
  var $ = function (id) { return document.getElementById(id); };
  var timer = null, paused = false, busy = false, current = null;
  // Keyed by stream name, so without a prototype: a stream named "constructor" or "toString" is a key like any other.
  /** per stream: samples of each source's watermark and max event time taken by this page */
  var samples = Object.create(null);
  /** per stream: the last per-partition state read, reused for a while when there are many partitions */
  var stateCache = Object.create(null);
  var STATE_EVERY_MS = 30000;

  // ---- small DOM helpers: text only through textContent, never innerHTML
  function h(tag, attrs, kids) {
    var el = document.createElement(tag);
    for (var k in attrs || {}) el.setAttribute(k, attrs[k]);
    (kids || []).forEach(function (c) { el.append(c instanceof Node ? c : document.createTextNode(String(c))); });
    return el;
  }
  function s(tag, attrs, text) {
    var el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs || {}) el.setAttribute(k, attrs[k]);
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function fill(id, kids) { var el = $(id); el.replaceChildren.apply(el, kids); }

  // ---- formatting
  function ts(ms) { return ms === null || ms === undefined || ms <= 0 ? "—" : new Date(ms).toISOString().replace(".000Z", "Z"); }
  function clock(ms) { return ms === null || ms === undefined ? "—" : new Date(ms).toISOString().slice(11, 19) + "Z"; }
  function num(n) { return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"); }
  function bytes(n) {
    if (n === null || n === undefined) return "—";
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
  }
  function dur(ms) {
    if (ms < 60000) return Math.round(ms / 1000) + " s";
    if (ms < 3600000) return Math.round(ms / 6000) / 10 + " min";
    return Math.round(ms / 360000) / 10 + " h";
  }

  // ---- the API, with the token in a header only
  function ApiError(status, message) { this.status = status; this.message = message; }
  async function api(path) {
    var token = sessionStorage.getItem(TOKEN_KEY);
    var headers = { accept: "application/json" };
    if (token) headers.authorization = "Bearer " + token;
    var res;
    try { res = await fetch(path, { headers: headers, cache: "no-store" }); }
    catch (e) { throw new ApiError(0, "The server did not answer (" + e.message + "). Is it running?"); }
    var body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (res.ok) return body;
    var detail = body && body.detail ? " (" + body.detail + ")" : "";
    if (res.status === 401) throw new ApiError(401, "401 Unauthorized: enter the admin token above" + detail + ".");
    if (res.status === 403) throw new ApiError(403, "403 Forbidden: the admin token is not valid" + detail + ". Enter the current ADMIN_TOKEN.");
    if (res.status === 404) throw new ApiError(404, "404 Not found: " + (body && body.detail ? body.detail : path) + ". It may have been deleted; pick another stream.");
    if (res.status === 503) throw new ApiError(503, "503 Service unavailable" + detail + ".");
    throw new ApiError(res.status, "HTTP " + res.status + " from " + path.split("?")[0] + detail + ".");
  }

  function showError(msg) { var el = $("error"); el.textContent = msg; el.className = msg ? "shown" : ""; }

  // ---- charts
  /** A line chart: series [{name, color, points:[[x,y]...], dots?}], with time axes. */
  function lineChart(series, opt) {
    var W = opt.width || 640, H = opt.height || 220, L = opt.left || 60, R = 12, T = 10, B = 26;
    var svg = s("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": opt.label, "data-chart": opt.id });
    var pts = [];
    series.forEach(function (se) { se.points.forEach(function (p) { pts.push(p); }); });
    if (pts.length === 0) { svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no data yet")); return svg; }
    var x0 = Math.min.apply(null, pts.map(function (p) { return p[0]; })), x1 = Math.max.apply(null, pts.map(function (p) { return p[0]; }));
    var y0 = Math.min.apply(null, pts.map(function (p) { return p[1]; })), y1 = Math.max.apply(null, pts.map(function (p) { return p[1]; }));
    if (opt.yZero) y0 = Math.min(0, y0);
    if (x1 === x0) { x0 -= 30000; x1 += 30000; }
    if (y1 === y0) { var pad = Math.max(1, Math.abs(y0) * 0.001); y0 -= pad; y1 += pad; }
    var X = function (x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    var Y = function (y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); };
    svg.append(s("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
    svg.append(s("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    for (var i = 0; i <= 4; i++) {
      var yv = y0 + (y1 - y0) * i / 4, xv = x0 + (x1 - x0) * i / 4;
      svg.append(s("line", { x1: L, x2: W - R, y1: Y(yv), y2: Y(yv), class: "axis", "stroke-dasharray": "2 3" }));
      svg.append(s("text", { x: L - 4, y: Y(yv) + 3, "text-anchor": "end" }, opt.yFormat(yv)));
      svg.append(s("text", { x: X(xv), y: H - 8, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, clock(xv)));
    }
    series.forEach(function (se) {
      if (se.points.length === 0) return;
      var d = se.points.map(function (p, j) { return (j ? "L" : "M") + X(p[0]).toFixed(1) + " " + Y(p[1]).toFixed(1); }).join(" ");
      if (se.points.length > 1 && !se.dotsOnly) svg.append(s("path", { d: d, fill: "none", stroke: se.color, "stroke-width": se.width || 2, "stroke-dasharray": se.dash || "", "data-series": se.name }));
      if (se.dots || se.points.length === 1 || se.dotsOnly) se.points.forEach(function (p) {
        var c = s("circle", { cx: X(p[0]), cy: Y(p[1]), r: 3, fill: se.color, "data-series": se.name });
        c.append(s("title", {}, se.name + ": " + opt.yFormat(p[1]) + " at " + clock(p[0])));
        svg.append(c);
      });
    });
    return svg;
  }

  /** A bar chart: one bar per item, [{label, value}], bars carry class cls. */
  function barChart(items, opt) {
    var W = 640, H = 170, L = 70, R = 10, T = 16, B = 22;
    var svg = s("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": opt.label, "data-chart": opt.id });
    var max = Math.max.apply(null, [1].concat(items.map(function (it) { return it.value; })));
    var slot = (W - L - R) / Math.max(1, items.length), bw = Math.max(2, Math.min(48, slot * 0.7));
    svg.append(s("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
    svg.append(s("text", { x: L - 4, y: T + 3, "text-anchor": "end" }, opt.format(max)));
    svg.append(s("text", { x: L - 4, y: H - B, "text-anchor": "end" }, opt.format(0)));
    items.forEach(function (it, i) {
      var hgt = (H - T - B) * it.value / max, x = L + slot * i + (slot - bw) / 2;
      var r = s("rect", { x: x, y: H - B - hgt, width: bw, height: Math.max(hgt, 0.5), fill: opt.color, class: "bar " + opt.cls, "data-partition": it.label, "data-value": it.value });
      r.append(s("title", {}, "partition " + it.label + ": " + opt.format(it.value)));
      svg.append(r);
      if (items.length <= 32) {
        svg.append(s("text", { x: x + bw / 2, y: H - 8, "text-anchor": "middle" }, it.label));
        if (hgt > 0) svg.append(s("text", { x: x + bw / 2, y: H - B - hgt - 3, "text-anchor": "middle" }, opt.format(it.value)));
      }
    });
    return svg;
  }

  /** Stacked bars, one per minute: columns [[minute, {name: value}]], series [[name, color]]. */
  function stackedBars(columns, series, opt) {
    var W = 640, H = 220, L = 44, R = 10, T = 14, B = 26;
    var svg = s("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": opt.label, "data-chart": opt.id });
    if (columns.length === 0) { svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no batches yet")); return svg; }
    var totals = columns.map(function (c) { return series.reduce(function (a, se) { return a + c[1][se[0]]; }, 0); });
    // whole, round steps (1, 2, 5 × 10^n) up to at least the tallest bar
    var tallest = Math.max.apply(null, [1].concat(totals));
    var pow = Math.pow(10, Math.floor(Math.log10(Math.max(1, tallest / 4))));
    var step = [1, 2, 5, 10].map(function (m) { return m * pow; }).filter(function (st) { return st * 4 >= tallest; })[0] || 10 * pow;
    var ticks = Math.ceil(tallest / step), max = ticks * step;
    var slot = (W - L - R) / columns.length, bw = Math.max(1, Math.min(40, slot * 0.75));
    var Y = function (v) { return (H - T - B) * v / max; };
    for (var i = 0; i <= ticks; i++) {
      var y = H - B - Y(step * i);
      svg.append(s("line", { x1: L, x2: W - R, y1: y, y2: y, class: "axis", "stroke-dasharray": i ? "2 3" : "" }));
      svg.append(s("text", { x: L - 4, y: y + 3, "text-anchor": "end" }, num(step * i)));
    }
    var every = Math.ceil(columns.length / 8);
    columns.forEach(function (c, j) {
      var x = L + slot * j + (slot - bw) / 2, base = H - B;
      series.forEach(function (se) {
        var v = c[1][se[0]];
        if (!v) return;
        var hgt = Y(v);
        var r = s("rect", { x: x, y: base - hgt, width: bw, height: hgt, fill: se[1], "data-series": se[0], "data-value": v, "data-minute": c[0] });
        r.append(s("title", {}, clock(c[0]).slice(0, 5) + ": " + num(v) + " " + se[0]));
        svg.append(r);
        base -= hgt;
      });
      if (totals[j] > 0 && columns.length <= 30) svg.append(s("text", { x: x + bw / 2, y: base - 3, "text-anchor": "middle" }, num(totals[j])));
      if (j % every === 0) svg.append(s("text", { x: x + bw / 2, y: H - 8, "text-anchor": "middle" }, clock(c[0]).slice(0, 5) + "Z"));
    });
    return svg;
  }

  function legend(series) {
    return h("div", { class: "legend" }, series.map(function (se) {
      var i = h("i"); i.style.background = se.color;
      return h("span", {}, [i, se.name]);
    }));
  }

  // ---- panels
  function renderHealth(health, info) {
    var kids = [h("span", { id: "status", class: "badge " + health.status }, [health.status])];
    if (health.reasons.length) {
      kids.push(h("ul", { class: "reasons", id: "reasons" }, health.reasons.map(function (r) {
        return h("li", { class: r.severity, "data-code": r.code }, [r.code + ": " + r.detail]);
      })));
    } else kids.push(h("p", { class: "note", id: "reasons" }, ["No reasons: nothing looks wrong in the recent window."]));
    kids.push(h("dl", { class: "kv" }, [
      h("dt", {}, ["Held back by"]), h("dd", { id: "held-back-by", class: health.heldBackBy ? "held" : "" }, [health.heldBackBy || "— (no source holds the watermark back)"]),
      h("dt", {}, ["Watermark lag"]), h("dd", {}, [health.watermarkLagMs ? dur(health.watermarkLagMs) : "0"]),
      h("dt", {}, ["Idle sources"]), h("dd", {}, [health.idleSources.length ? health.idleSources.join(", ") : "none"]),
      h("dt", {}, ["Webhooks"]), h("dd", { id: "webhooks" }, [webhooksText(health.webhooks)]),
    ]));
    fill("health", kids);

    var c = info.config;
    fill("summary", [h("dl", { class: "kv" }, [
      h("dt", {}, ["Watermark"]), h("dd", { id: "watermark" }, [ts(info.watermark)]),
      h("dt", {}, ["Policy / delay"]), h("dd", {}, [c.watermarkPolicy + " / " + (c.eventTime ? dur(c.watermarkDelay) : "no event time")]),
      h("dt", {}, ["Mode"]), h("dd", {}, [c.mode]),
      h("dt", {}, ["Key"]), h("dd", {}, [c.key.join(", ") + (c.eventTime ? "  (event time: " + c.eventTime + ")" : "")]),
      h("dt", {}, ["State"]), h("dd", { id: "state-total" }, [num(info.state.rows) + " rows, " + bytes(info.state.bytes)]),
      h("dt", {}, ["Batches committed"]), h("dd", { id: "batches-committed" }, [num(info.batches.committed)]),
      h("dt", {}, ["Bookkeeping"]), h("dd", { id: "bookkeeping" }, [info.bookkeeping
        ? bytes(info.bookkeeping.bytes) + ", " + num(info.bookkeeping.batchesRemembered) + " batch ids remembered for " + dur(info.bookkeeping.idempotencyWindow)
        : "—"]),
      h("dt", {}, ["Partitions"]), h("dd", {}, [String(c.partitions)]),
    ])]);
  }

  // Each webhook source's redeliveries absorbed as replays and signatures refused, by reason (src/webhooks/tally.ts).
  function webhooksText(all) {
    var names = Object.keys(all || {}).sort();
    if (!names.length) return "none counted";
    return names.map(function (n) {
      var w = all[n];
      var refused = Object.keys(w.refused).sort().map(function (r) { return w.refused[r] + " " + r; });
      return n + ": " + w.replayed + " redeliveries replayed, " + (refused.length ? "refused " + refused.join(", ") : "none refused");
    }).join("; ");
  }

  function sourceColor(names, name) { return COLORS[names.indexOf(name) % COLORS.length]; }

  function renderSources(name, info, health, progress) {
    var names = Object.keys(info.sources).sort();
    var now = Date.now();
    var hist = samples[name] || (samples[name] = []);
    hist.push({ at: now, sources: info.sources });
    if (hist.length > 720) hist.shift();

    var rows = names.map(function (n) {
      var src = info.sources[n];
      var i = h("i"); i.style.cssText = "display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;background:" + sourceColor(names, n);
      return h("tr", { "data-source": n }, [
        h("td", { class: "text" }, [i, n, health.heldBackBy === n ? h("span", { class: "held" }, ["  ◀ holds back"]) : ""]),
        h("td", {}, [ts(src.watermark)]), h("td", {}, [ts(src.maxEventTime)]),
        h("td", {}, [ts(src.lastBatchAt)]), h("td", { class: "text" }, [src.declared ? "declared" : "seen"]), h("td", { class: "text" }, [src.idle ? "idle" : "active"]),
      ]);
    });
    var table = h("div", { class: "scroll" }, [h("table", { id: "sources-table" }, [
      h("thead", {}, [h("tr", {}, ["Source", "Watermark", "Max event time", "Last batch", "Declared", "Activity"].map(function (t) { return h("th", {}, [t]); }))]),
      h("tbody", {}, rows),
    ])]);

    // The global watermark after each commit (from /progress); each source's batches as dots on it;
    // each source's watermark and max event time as this page sampled them (the API keeps the latest only).
    var ordered = progress.slice().sort(function (a, b) { return a.committedAt - b.committedAt; });
    var series = [{ name: "global watermark", color: "#1d2330", width: 2.5, points: ordered.filter(function (p) { return p.watermarkAfter > 0; }).map(function (p) { return [p.committedAt, p.watermarkAfter]; }) }];
    names.forEach(function (n) {
      var color = sourceColor(names, n);
      series.push({ name: n + " batches", color: color, dotsOnly: true, points: ordered.filter(function (p) { return p.source === n && p.watermarkAfter > 0; }).map(function (p) { return [p.committedAt, p.watermarkAfter]; }) });
      var wm = [], mx = [];
      var lastCommit = ordered.filter(function (p) { return p.source === n; }).pop();
      var first = info.sources[n];
      if (lastCommit && first.lastBatchAt && first.lastBatchAt < hist[0].at) {
        // known since this source's last batch: the values it has now
        if (first.watermark > 0) wm.push([first.lastBatchAt, first.watermark]);
        if (first.maxEventTime) mx.push([first.lastBatchAt, first.maxEventTime]);
      }
      hist.forEach(function (sm) {
        var v = sm.sources[n];
        if (!v) return;
        if (v.watermark > 0) wm.push([sm.at, v.watermark]);
        if (v.maxEventTime) mx.push([sm.at, v.maxEventTime]);
      });
      series.push({ name: n + " watermark", color: color, points: wm });
      series.push({ name: n + " max event time", color: color, dash: "4 3", width: 1.5, points: mx });
    });
    var chart = lineChart(series, { id: "watermarks", label: "watermarks over time", width: 1240, height: 280, left: 130, yFormat: function (v) { return ts(Math.round(v / 1000) * 1000); } });
    fill("sources", [table, chart, legend(series.filter(function (se) { return !/ batches$/.test(se.name); }).map(function (se) { return { name: se.name + (se.dash ? " (dashed)" : ""), color: se.color }; })),
      h("p", { class: "note" }, ["x: when (wall clock, UTC); y: event time. The global line is each commit's watermark after it (dots: the committing source). Per-source lines are sampled by this page every refresh since it was opened."])]);
  }

  function renderState(parts) {
    var rows = parts.map(function (p) { return { label: String(p.partition), value: p.rows }; });
    var bs = parts.map(function (p) { return { label: String(p.partition), value: p.bytes }; });
    fill("state", [
      h("div", { class: "legend" }, ["Rows per partition"]),
      barChart(rows, { id: "state-rows", label: "state rows per partition", color: "#2f6fde", cls: "bar-rows", format: num }),
      h("div", { class: "legend" }, ["Bytes per partition"]),
      barChart(bs, { id: "state-bytes", label: "state bytes per partition", color: "#862e9c", cls: "bar-bytes", format: bytes }),
    ]);
  }

  function renderRates(progress) {
    var totals = { emitted: 0, duplicates: 0, late: 0, rejected: 0, input: 0, conflicts: 0 };
    var buckets = {};
    progress.forEach(function (p) {
      RATE_SERIES.forEach(function (r) { totals[r[0]] += p[r[0]]; });
      totals.input += p.input;
      totals.conflicts += p.conflicts || 0; // a subset of duplicates and rejected: a total, not a series
      var m = Math.floor(p.committedAt / 60000) * 60000;
      var b = buckets[m] || (buckets[m] = { emitted: 0, duplicates: 0, late: 0, rejected: 0 });
      RATE_SERIES.forEach(function (r) { b[r[0]] += p[r[0]]; });
    });
    var minutes = Object.keys(buckets).map(Number).sort(function (a, b) { return a - b; });
    // fill the minutes with no commits with zeros, so the lines drop to 0 (at most 180 minutes)
    var full = [];
    if (minutes.length) for (var m = Math.max(minutes[0], minutes[minutes.length - 1] - 179 * 60000); m <= minutes[minutes.length - 1]; m += 60000) full.push(m);
    var columns = full.map(function (m) { return [m, buckets[m] || { emitted: 0, duplicates: 0, late: 0, rejected: 0 }]; });
    var span = progress.length ? "over the last " + progress.length + " batch" + (progress.length === 1 ? "" : "es") : "no batches yet";
    fill("rates", [
      h("div", { class: "totals" }, RATE_SERIES.map(function (r) {
        return h("div", {}, [h("b", { id: "total-" + r[0] }, [num(totals[r[0]])]), r[0]]);
      }).concat([h("div", {}, [h("b", { id: "total-input" }, [num(totals.input)]), "input rows"]), h("div", {}, [h("b", { id: "total-conflicts" }, [num(totals.conflicts)]), "conflicts"])])),
      stackedBars(columns, RATE_SERIES, { id: "rates", label: "rows per minute by outcome" }),
      legend(RATE_SERIES.map(function (r) { return { name: r[0], color: r[1] }; })),
      h("p", { class: "note" }, ["Rows per minute of commit time (UTC), by outcome, " + span + "."]),
    ]);
  }

  function renderBatches(progress) {
    var recent = progress.slice(-20).reverse();
    var cols = ["Committed", "Source", "Batch", "Input", "Emitted", "Dups", "Late", "Rejected", "Conflicts", "Watermark after", "State rows", "State bytes", "ms"];
    fill("batches", [h("div", { class: "scroll" }, [h("table", { id: "batches-table" }, [
      h("thead", {}, [h("tr", {}, cols.map(function (c, i) { return h("th", { class: i < 3 ? "text" : "" }, [c]); }))]),
      h("tbody", {}, recent.length ? recent.map(function (p) {
        return h("tr", { "data-batch": p.batchId }, [
          h("td", { class: "text" }, [ts(p.committedAt)]), h("td", { class: "text" }, [p.source]), h("td", { class: "text", title: p.batchId }, [p.batchId.length > 24 ? p.batchId.slice(0, 22) + "…" : p.batchId]),
          h("td", {}, [num(p.input)]), h("td", {}, [num(p.emitted)]), h("td", {}, [num(p.duplicates)]), h("td", {}, [num(p.late)]), h("td", {}, [num(p.rejected)]), h("td", { "data-figure": "conflicts" }, [num(p.conflicts || 0)]),
          h("td", {}, [ts(p.watermarkAfter)]), h("td", {}, [num(p.numRowsTotal)]), h("td", {}, [bytes(p.stateBytes)]), h("td", {}, [num(p.durationMs)]),
        ]);
      }) : [h("tr", {}, [h("td", { colspan: cols.length, class: "text" }, ["No batches committed yet."])])]),
    ])])]);
  }

  /** The delay advisor, live (GET /advice): per source and over all, what edge-dedup advise would say of what was received. */
  function renderAdvice(advice) {
    function q(v) { return v === null || v === undefined ? "—" : v === 0 ? "0" : v < 1000 ? num(v) + " ms" : dur(v); }
    function verdict(f) {
      if (!f.currentDelay) return "—";
      var r = f.recommendation.delayMs, c = f.currentDelay.ms;
      return c < r ? "raise to " + f.recommendation.watermarkDelay : c > 2 * r ? "could be " + f.recommendation.watermarkDelay : "covers it";
    }
    function row(name, f, cls) {
      return h("tr", { "data-advice": name, class: cls || "" }, [
        h("td", { class: "text" }, [name]),
        h("td", {}, [num(f.rows)]),
        h("td", { "data-figure": "duplicate-rate" }, [num(f.duplicates) + " (" + (100 * f.duplicateRate).toFixed(1) + "%)"]),
        h("td", { "data-figure": "gap-p999" }, [q(f.gaps["p99.9"])]),
        h("td", { "data-figure": "disorder-p999" }, [q(f.disorder["p99.9"])]),
        h("td", { "data-figure": "recommended" }, [f.recommendation.watermarkDelay]),
        h("td", { "data-figure": "current" }, [f.currentDelay ? f.currentDelay.interval : "—"]),
        h("td", { "data-figure": "verdict", class: "text" + (f.currentDelay && f.currentDelay.ms < f.recommendation.delayMs ? " held" : "") }, [verdict(f)]),
      ]);
    }
    var names = Object.keys(advice.sources).sort();
    var cols = ["Source", "Rows", "Duplicates", "Gap p99.9", "Disorder p99.9", "Recommended", "Current", "Verdict"];
    fill("advice", [h("div", { class: "scroll" }, [h("table", { id: "advice-table" }, [
      h("thead", {}, [h("tr", {}, cols.map(function (c, i) { return h("th", { class: i === 0 || i === 7 ? "text" : "" }, [c]); }))]),
      h("tbody", {}, names.length ? names.map(function (n) { return row(n, advice.sources[n]); }).concat(names.length > 1 ? [row("(stream)", advice.overall, "total")] : [])
        : [h("tr", {}, [h("td", { colspan: cols.length, class: "text" }, ["No rows yet."])])]),
    ])]),
      h("p", { class: "note", id: "advice-recommendation" }, ["Recommended for the stream: " + advice.overall.recommendation.watermarkDelay + " (" + advice.overall.recommendation.basis + "), the larger p99.9 × " + advice.margin + " rounded up, as edge-dedup advise computes it over a history" + (advice.overall.recommendation.floor ? ", raised to its floor: " + advice.overall.recommendation.floor.reason : "") + "; " + (advice.overall.currentDelay ? "configured: " + advice.overall.currentDelay.interval + "." : "no event time configured.")]),
      advice.overall.recommendation.caveat ? h("p", { class: "note held", id: "advice-caveat" }, ["Caution, " + advice.overall.recommendation.caveat + "."]) : "",
      h("p", { class: "note" }, ["Gap: event time between a duplicate and the copy kept. Disorder: how far a row is behind its source's newest event time. Counted since the stream was created."]),
    ]);
  }

  /** Delivery (GET /destinations): per destination, how far it has delivered, how far behind it is, whether it is failing. */
  function renderDelivery(list) {
    var cols = ["Destination", "Type", "Target", "Delivered seq", "Pending", "Lag", "Failing", "Dead", "Last success", "Last error"];
    fill("delivery", [h("div", { class: "scroll" }, [h("table", { id: "delivery-table" }, [
      h("thead", {}, [h("tr", {}, cols.map(function (c, i) { return h("th", { class: i < 3 || i === 9 ? "text" : "" }, [c]); }))]),
      h("tbody", {}, list.length ? list.map(function (d) {
        return h("tr", { "data-destination": d.name }, [
          h("td", { class: "text" }, [d.name]), h("td", { class: "text" }, [d.type]), h("td", { class: "text" }, [d.url || d.binding || "—"]),
          h("td", { "data-figure": "delivered-seq" }, [num(d.deliveredSeq)]), h("td", { "data-figure": "pending" }, [num(d.pending)]),
          h("td", { "data-figure": "lag" }, [d.lagMs ? dur(d.lagMs) : "0"]),
          h("td", { "data-figure": "failing", class: d.failing ? "held" : "" }, [d.paused ? "paused" : d.failing ? "yes" : "no"]),
          h("td", { "data-figure": "dead" }, [num(d.dead)]), h("td", {}, [ts(d.lastSuccessAt)]), h("td", { class: "text" }, [d.lastError || "—"]),
        ]);
      }) : [h("tr", {}, [h("td", { colspan: cols.length, class: "text" }, ["No destinations: PUT /v1/streams/{stream}/destinations/{name} adds one."])])]),
    ])])]);
  }

  // ---- loading
  async function loadStreams() {
    var names = [], after = "";
    for (var page = 0; page < 20; page++) {
      var r = await api("/v1/streams?limit=100" + (after ? "&after=" + encodeURIComponent(after) : ""));
      r.streams.forEach(function (st) { names.push(st.name); });
      if (!r.next) break;
      after = r.next;
    }
    var sel = $("stream");
    var want = current || decodeURIComponent((location.hash.match(/stream=([^&]+)/) || [])[1] || "");
    sel.replaceChildren.apply(sel, [h("option", { value: "" }, [names.length ? "— pick a stream —" : "no streams yet"])].concat(names.map(function (n) { return h("option", { value: n }, [n]); })));
    if (want && names.indexOf(want) >= 0) { sel.value = want; current = want; }
    return names;
  }

  async function loadStream(name) {
    var base = "/v1/streams/" + encodeURIComponent(name);
    var got = await Promise.all([api(base), api(base + "/health"), api(base + "/progress?limit=1000"), api(base + "/advice"), api(base + "/destinations")]);
    var info = got[0], health = got[1], progress = got[2].progress, advice = got[3];
    var destinations = got[4].destinations;
    // One call per partition: with many partitions, at most every STATE_EVERY_MS.
    var cached = stateCache[name];
    var parts = cached && cached.parts.length === info.config.partitions && info.config.partitions > 32 && Date.now() - cached.at < STATE_EVERY_MS
      ? cached.parts
      : await Promise.all(Array.from({ length: info.config.partitions }, function (_, p) { return api(base + "/state?partition=" + p + "&limit=1"); }));
    stateCache[name] = { at: cached && cached.parts === parts ? cached.at : Date.now(), parts: parts };
    if (name !== current) return; // the operator picked another stream meanwhile
    $("panels").hidden = false; $("empty").hidden = true;
    renderHealth(health, info);
    renderSources(name, info, health, progress);
    renderState(parts);
    renderRates(progress);
    renderBatches(progress);
    renderAdvice(advice);
    renderDelivery(destinations);
  }

  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      if (!sessionStorage.getItem(TOKEN_KEY)) { showError("Enter the admin token (the Worker's ADMIN_TOKEN) to see the streams."); return; }
      await loadStreams();
      if (current) await loadStream(current);
      else { $("panels").hidden = true; $("empty").hidden = false; }
      showError("");
      // UTC, as every other time on the page (and in the API)
      $("updated").textContent = "updated " + clock(Date.now()) + (paused ? " (paused)" : "");
    } catch (e) {
      showError(e instanceof ApiError ? e.message : "Error: " + (e && e.message ? e.message : String(e)));
      if (e.status === 401 || e.status === 403) setPaused(true);
    } finally { busy = false; }
  }

  function setPaused(p) {
    paused = p;
    $("pause").textContent = paused ? "Resume" : "Pause";
    $("pause").setAttribute("aria-pressed", String(paused));
    if (timer) clearInterval(timer);
    timer = paused ? null : setInterval(refresh, REFRESH_MS);
  }

  $("token-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var t = $("token").value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    $("token").value = "";
    $("token").placeholder = t ? "token set (this tab only)" : "admin token";
    setPaused(false);
    refresh();
  });
  $("forget").addEventListener("click", function () {
    sessionStorage.removeItem(TOKEN_KEY);
    $("token").placeholder = "admin token";
    $("panels").hidden = true; $("empty").hidden = false;
    $("stream").replaceChildren(h("option", { value: "" }, ["—"]));
    setPaused(true);
    showError("Token forgotten. Enter the admin token to continue.");
  });
  $("stream").addEventListener("change", function () {
    current = $("stream").value || null;
    history.replaceState(null, "", current ? "#stream=" + encodeURIComponent(current) : location.pathname);
    refresh();
  });
  $("pause").addEventListener("click", function () { setPaused(!paused); if (!paused) refresh(); });
  $("refresh").addEventListener("click", refresh);

  if (sessionStorage.getItem(TOKEN_KEY)) $("token").placeholder = "token set (this tab only)";
  setPaused(false);
  refresh();
})();
`;

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>edge-dedup dashboard</title>
<style nonce="${NONCE}">${CSS}</style>
</head>
<body>
<header>
  <h1>edge-dedup</h1>
  <form id="token-form" autocomplete="off">
    <label for="token">Admin token</label>
    <input id="token" type="password" placeholder="admin token" size="22" autocomplete="off" spellcheck="false">
    <button type="submit" id="connect">Use token</button>
    <button type="button" id="forget">Forget</button>
  </form>
  <label for="stream">Stream</label>
  <select id="stream"><option value="">—</option></select>
  <span class="spacer"></span>
  <span id="updated"></span>
  <button type="button" id="refresh">Refresh</button>
  <button type="button" id="pause" aria-pressed="false">Pause</button>
</header>
<div id="error" role="alert"></div>
<p id="empty">Enter the admin token, then pick a stream. The page refreshes every 5 s.</p>
<main id="panels" hidden>
  <section><h2>Health</h2><div id="health"></div></section>
  <section><h2>Stream</h2><div id="summary"></div></section>
  <section class="wide"><h2>Watermark and max event time per source</h2><div id="sources"></div></section>
  <section><h2>Rows per minute</h2><div id="rates"></div></section>
  <section><h2>State per partition</h2><div id="state"></div></section>
  <section class="wide"><h2>Delay advisor</h2><div id="advice"></div></section>
  <section class="wide"><h2>Recent batches (last 20)</h2><div id="batches"></div></section>
  <section class="wide"><h2>Delivery</h2><div id="delivery"></div></section>
</main>
<script nonce="${NONCE}">${SCRIPT}</script>
</body>
</html>
`;

/** The page's HTML, with the nonce placeholder (for tests and inspection). */
export const DASHBOARD_HTML = HTML;

/**
 * GET /dashboard: the page, with a fresh CSP nonce. The CSP lets the page run
 * only its own inline script and style and call only this origin.
 */
export function dashboardResponse(): Response {
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  return new Response(HTML.replaceAll(NONCE, nonce), {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-cache",
      "content-security-policy": [
        "default-src 'none'",
        `script-src 'nonce-${nonce}'`,
        `style-src 'nonce-${nonce}'`,
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ].join("; "),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}
