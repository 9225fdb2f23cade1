// The dashboard's browser script (the page is ../page.ts): the operator's controls, then the first refresh.
import { byId, h } from "./dom";
import { refresh, refreshSoon, setPaused, showError } from "./refresh";
import { showNoStream } from "./show-stream";
import { forgetToken, readToken, saveToken } from "./token";
import { REFRESH_EVENT, view } from "./view";

const tokenInput = byId<HTMLInputElement>("token");
const streamPicker = byId<HTMLSelectElement>("stream");

byId("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = tokenInput.value.trim();
  if (t) saveToken(t);
  else forgetToken();
  tokenInput.value = "";
  tokenInput.placeholder = t ? "token set (this tab only)" : "admin token";
  setPaused(false);
  refresh();
});
byId("forget").addEventListener("click", () => {
  forgetToken();
  tokenInput.placeholder = "admin token";
  showNoStream();
  streamPicker.replaceChildren(h("option", { value: "" }, ["—"]));
  setPaused(true);
  showError("Token forgotten. Enter the admin token to continue.");
});
streamPicker.addEventListener("change", () => {
  view.current = streamPicker.value || null;
  history.replaceState(null, "", view.current ? `#stream=${encodeURIComponent(view.current)}` : location.pathname);
  refresh();
});
byId("pause").addEventListener("click", () => {
  setPaused(!view.paused);
  if (!view.paused) refresh();
});
byId("refresh").addEventListener("click", refresh);
document.addEventListener(REFRESH_EVENT, refreshSoon);

if (readToken()) tokenInput.placeholder = "token set (this tab only)";
setPaused(false);
refresh();
