import { ApiError } from "./api";
import { byId } from "./dom";
import { clock } from "./format";
import { showNoStream, showStream } from "./show-stream";
import { loadStreams } from "./stream-list";
import { readToken } from "./token";
import { view } from "./view";

const REFRESH_MS = 5000;

let timer: number | null = null;
let busy = false;
/** refreshSoon() was called while a refresh was under way: it runs once more after it. */
let again = false;

export function showError(msg: string): void {
  const el = byId("error");
  el.textContent = msg;
  el.className = msg ? "shown" : "";
}

/** Reads the streams and the one picked, and redraws; a refresh already under way makes this one a no-op. */
export async function refresh(): Promise<void> {
  if (busy) return;
  busy = true;
  again = false;
  try {
    if (!readToken()) {
      showError("Enter the admin token (the Worker's ADMIN_TOKEN) to see the streams.");
      return;
    }
    await loadStreams();
    if (view.current) await showStream(view.current);
    else showNoStream();
    showError("");
    // UTC, as every other time on the page (and in the API)
    byId("updated").textContent = `updated ${clock(Date.now())}${view.paused ? " (paused)" : ""}`;
  } catch (e) {
    showError(e instanceof ApiError ? e.message : `Error: ${e && (e as Error).message ? (e as Error).message : String(e)}`);
    // a wrong token stays wrong: no point asking again every 5 s
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) setPaused(true);
  } finally {
    busy = false;
    if (again) void refresh();
  }
}

/** A refresh now, or right after the one under way (what a panel's action changed shows even while paused). */
export function refreshSoon(): void {
  if (busy) again = true;
  else void refresh();
}

/** Pauses or resumes the refresh every REFRESH_MS. */
export function setPaused(p: boolean): void {
  view.paused = p;
  const pause = byId("pause");
  pause.textContent = view.paused ? "Resume" : "Pause";
  pause.setAttribute("aria-pressed", String(view.paused));
  if (timer) clearInterval(timer);
  timer = view.paused ? null : setInterval(refresh, REFRESH_MS);
}
