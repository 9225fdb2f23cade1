/** What the page shows: the stream picked (null: none), and whether the refresh loop is paused. */
export const view: { current: string | null; paused: boolean } = { current: null, paused: false };

/** The event a panel sends when what it did (a replay) should show at once; main.ts refreshes on it. */
export const REFRESH_EVENT = "edge-dedup:refresh";

export function requestRefresh(): void {
  document.dispatchEvent(new Event(REFRESH_EVENT));
}
