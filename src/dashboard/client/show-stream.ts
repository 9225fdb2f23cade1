import { byId } from "./dom";
import { renderAdvice } from "./panels/advice";
import { renderBatches } from "./panels/batches";
import { renderDelivery } from "./panels/delivery";
import { renderHealth } from "./panels/health";
import { renderRates } from "./panels/rates";
import { renderSources } from "./panels/sources";
import { renderState } from "./panels/state";
import { renderSummary } from "./panels/summary";
import { fetchStreamFigures } from "./stream-figures";
import { view } from "./view";

/** Reads one stream's figures and draws every panel with them. */
export async function showStream(name: string): Promise<void> {
  const { info, health, progress, advice, destinations, details, parts } = await fetchStreamFigures(name);
  if (name !== view.current) return; // the operator picked another stream meanwhile
  byId("panels").hidden = false;
  byId("empty").hidden = true;
  renderHealth(health);
  renderSummary(info);
  renderSources(name, info, health, progress);
  renderState(parts);
  renderRates(progress);
  renderBatches(progress);
  renderAdvice(advice);
  renderDelivery(name, destinations, details);
}

/** No stream picked: the panels give way to the hint. */
export function showNoStream(): void {
  byId("panels").hidden = true;
  byId("empty").hidden = false;
}
