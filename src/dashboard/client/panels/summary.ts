import { fill, h } from "../dom";
import { bytes, dur, num, ts } from "../format";
import type { StreamInfo } from "../types";

/** The Stream panel: the stream's watermark, configuration, state and bookkeeping. */
export function renderSummary(info: StreamInfo): void {
  const c = info.config;
  fill("summary", [
    h("dl", { class: "kv" }, [
      h("dt", {}, ["Watermark"]),
      h("dd", { id: "watermark" }, [ts(info.watermark)]),
      h("dt", {}, ["Policy / delay"]),
      h("dd", {}, [`${c.watermarkPolicy} / ${c.eventTime ? dur(c.watermarkDelay) : "no event time"}`]),
      h("dt", {}, ["Mode"]),
      h("dd", {}, [c.mode]),
      h("dt", {}, ["Key"]),
      h("dd", {}, [c.key.join(", ") + (c.eventTime ? `  (event time: ${c.eventTime})` : "")]),
      h("dt", {}, ["State"]),
      h("dd", { id: "state-total" }, [`${num(info.state.rows)} rows, ${bytes(info.state.bytes)}`]),
      h("dt", {}, ["Batches committed"]),
      h("dd", { id: "batches-committed" }, [num(info.batches.committed)]),
      h("dt", {}, ["Bookkeeping"]),
      h("dd", { id: "bookkeeping" }, [
        info.bookkeeping
          ? `${bytes(info.bookkeeping.bytes)}, ${num(info.bookkeeping.batchesRemembered)} batch ids remembered for ${dur(info.bookkeeping.idempotencyWindow)}`
          : "—",
      ]),
      h("dt", {}, ["Partitions"]),
      h("dd", {}, [String(c.partitions)]),
    ]),
  ]);
}
