/**
 * The operator's dashboard (GET /dashboard): one static page, HTML with its
 * CSS and script inline, no framework, nothing from a CDN. It holds no data:
 * it asks the admin JSON API (/v1/streams…) from the browser with the admin
 * token the operator types in, kept in sessionStorage and sent only as an
 * Authorization header, never in a URL.
 *
 * The script is TypeScript in ./client (typed against the DOM), bundled into
 * ./script.generated.ts by `npm run build:dashboard`.
 */
import { DASHBOARD_SCRIPT } from "./script.generated";

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
.destination { margin-top:14px; padding-top:10px; border-top:1px solid var(--line); }
.destination h3 { font-size:14px; margin:0 0 2px; } .destination h4 { font-size:12px; color:var(--mute); margin:10px 0 4px; font-weight:600; }
.destination p { margin:2px 0; }
.destination button, .destination input { font:inherit; padding:3px 8px; border-radius:6px; border:1px solid var(--line); }
.destination button { cursor:pointer; background:#eef2fb; } .destination button:disabled { cursor:default; opacity:.6; }
ol.attempts { margin:2px 0 0; padding-left:20px; font-size:12px; text-align:left; }
details summary { cursor:pointer; color:var(--accent); }
.finder { margin-top:8px; } .finder .found { margin-top:4px; }
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
<script nonce="${NONCE}">${DASHBOARD_SCRIPT}</script>
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
