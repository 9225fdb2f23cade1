import { api } from "./api";
import { byId, h } from "./dom";
import type { StreamList } from "./types";
import { view } from "./view";

/** At most this many pages of 100 streams are listed. */
const PAGES = 20;

/** Lists the streams into the picker, keeping the one picked (or the one in the URL's #stream=) when it is still there. */
export async function loadStreams(): Promise<string[]> {
  const names: string[] = [];
  let after = "";
  for (let page = 0; page < PAGES; page++) {
    const r = await api<StreamList>(`/v1/streams?limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`);
    for (const st of r.streams) names.push(st.name);
    if (!r.next) break;
    after = r.next;
  }
  const sel = byId<HTMLSelectElement>("stream");
  const want = view.current || decodeURIComponent((location.hash.match(/stream=([^&]+)/) || [])[1] || "");
  sel.replaceChildren(h("option", { value: "" }, [names.length ? "— pick a stream —" : "no streams yet"]), ...names.map((n) => h("option", { value: n }, [n])));
  if (want && names.indexOf(want) >= 0) {
    sel.value = want;
    view.current = want;
  }
  return names;
}
