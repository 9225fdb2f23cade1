// How the page writes times, counts, sizes and durations: UTC, as the API does.

/** An epoch-ms time as ISO 8601, whole seconds without ".000"; "—" when unset. */
export function ts(ms: number | null | undefined): string {
  return ms === null || ms === undefined || ms <= 0 ? "—" : new Date(ms).toISOString().replace(".000Z", "Z");
}

/** The time of day, HH:MM:SSZ. */
export function clock(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "—" : `${new Date(ms).toISOString().slice(11, 19)}Z`;
}

export function num(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US");
}

/** A size in binary units (KiB, MiB…), one decimal above bytes. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${u[i]}`;
}

/** A duration in s, min or h. */
export function dur(ms: number): string {
  if (ms < 60000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3600000) return `${Math.round(ms / 6000) / 10} min`;
  return `${Math.round(ms / 360000) / 10} h`;
}
