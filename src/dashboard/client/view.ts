/** What the page shows: the stream picked (null: none), and whether the refresh loop is paused. */
export const view: { current: string | null; paused: boolean } = { current: null, paused: false };
