/**
 * Which rows a destination keeps and how they go into its SQLite backlog:
 * a row beyond MAX_ROW_BYTES is not sent (a stand-in goes to the dead lane),
 * and the others are inserted in runs of at most INSERT_CHARS of text, since
 * a bound value, like a stored row, is limited to 2 MB.
 */
/** The largest row a destination sends (and keeps in its backlog), in UTF-8 bytes. */
export const MAX_ROW_BYTES = 512 * 1024;
/** Text per insert: JSON-quoted, it stays well within SQLite's 2 MB per bound value. */
export const INSERT_CHARS = 256 * 1024;

/** Longer than MAX_ROW_BYTES in UTF-8 (encoded only when it could be). */
export const tooLarge = (line: string) =>
  line.length > MAX_ROW_BYTES || (line.length > MAX_ROW_BYTES / 3 && new TextEncoder().encode(line).byteLength > MAX_ROW_BYTES);

/** Consecutive runs of the rows that fit (each at most MAX_ROW_BYTES), each run at most `budget` characters of text. */
export function slices(lines: readonly string[], start: number, budget: number): { first: number; rows: string[] }[] {
  const out: { first: number; rows: string[] }[] = [];
  let size = 0;
  lines.forEach((line, i) => {
    const last = out[out.length - 1];
    if (tooLarge(line)) {
      out.push({ first: start + i + 1, rows: [] });
      size = 0;
      return;
    }
    if (!last || size + line.length > budget || last.first + last.rows.length !== start + i) {
      out.push({ first: start + i, rows: [line] });
      size = line.length;
    } else {
      last.rows.push(line);
      size += line.length;
    }
  });
  return out.filter((r) => r.rows.length > 0);
}
