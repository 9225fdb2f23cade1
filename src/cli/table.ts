/**
 * `edge-dedup table STREAM --url URL`: the stream's Iceberg table read with no
 * network beyond the service and no catalog (DESIGN §7): the current
 * snapshot's data files (GET …/table) downloaded into a folder, a file per
 * partition as the table holds them, and the DuckDB query that reads them
 * printed. Plain Node: fetch and the file system.
 */
import { mkdirSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { ProgressSink } from "./progress.ts";

export const TABLE_USAGE = `Usage: edge-dedup table STREAM --url URL [options]

Downloads the current snapshot of STREAM's Iceberg table: its Parquet data
files (as GET /v1/streams/STREAM/table lists them) into a folder, and prints
the DuckDB query that reads them (read_parquet needs no extension, no network
and no catalog), with the table's partitions.

Options:
  --url URL         the service, e.g. http://127.0.0.1:8787 (required)
  --token TOKEN     an admin token (default: $EDGE_DEDUP_TOKEN)
  --out DIR         where the files go (default: ./STREAM-table); .parquet files there that this snapshot
                    does not hold (an earlier download's) are deleted, so the query reads this snapshot alone
  --json            print what was written as JSON
  -h, --help        this text

Exit status: 0 once every file is written, 1 when the service says no (no
such stream, no table, no snapshot yet), 2 on a usage error.`;

interface TableIo {
  stdout: { write(text: string): unknown };
  stderr: ProgressSink;
  env: Record<string, string | undefined>;
  fetch?: typeof fetch;
}

interface Listed {
  snapshot: { "snapshot-id": number; summary: Record<string, string> };
  files: { path: string; records: number; bytes: number; partition: string | null }[] | null;
  partitionBy?: string;
}

export async function runTable(argv: readonly string[], io: TableIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: "string" },
        token: { type: "string" },
        out: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    return usage(io, (e as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    io.stdout.write(`${TABLE_USAGE}\n`);
    return 0;
  }
  const [stream, ...extra] = positionals;
  if (!stream || extra.length > 0) return usage(io, "name one stream");
  if (!v.url || !/^https?:\/\//.test(v.url)) return usage(io, "--url is required: the service's http(s) URL");
  const token = v.token ?? io.env.EDGE_DEDUP_TOKEN;
  if (!token) return usage(io, "no token: pass --token or set EDGE_DEDUP_TOKEN");
  const get = io.fetch ?? fetch;
  const base = `${v.url.replace(/\/+$/, "")}/v1/streams/${encodeURIComponent(stream)}/table`;
  const headers = { authorization: `Bearer ${token}` };
  const listed = await get(base, { headers });
  if (!listed.ok) return refused(io, listed);
  const table = (await listed.json()) as Listed;
  if (table.files === null) {
    io.stderr.write("edge-dedup: the table's manifests cannot be read now (GET …/table's publishing says why); try again\n");
    return 1;
  }
  const out = resolve(v.out ?? `${stream}-table`);
  mkdirSync(out, { recursive: true });
  const written: { file: string; records: number; partition: string | null }[] = [];
  for (const f of table.files) {
    const r = await get(`${base}/file?path=${encodeURIComponent(f.path)}`, { headers });
    if (!r.ok) return refused(io, r);
    const file = join(out, basename(f.path));
    writeFileSync(file, new Uint8Array(await r.arrayBuffer()));
    written.push({ file, records: f.records, partition: f.partition });
  }
  // An earlier download's files of data since compacted away would be read twice.
  const current = new Set(written.map((w) => basename(w.file)));
  for (const name of readdirSync(out)) if (name.endsWith(".parquet") && !current.has(name)) unlinkSync(join(out, name));
  const query = `SELECT * FROM read_parquet('${join(out, "*.parquet").replaceAll("'", "''")}', union_by_name=true)`;
  const records = written.reduce((n, w) => n + w.records, 0);
  if (v.json) {
    io.stdout.write(`${JSON.stringify({ stream, snapshotId: table.snapshot["snapshot-id"], out, files: written, records, query })}\n`);
    return 0;
  }
  const partitions = new Set(written.map((w) => w.partition ?? "(unpartitioned)"));
  io.stdout.write(
    `${written.length} data file(s), ${records} row(s), ${partitions.size} partition(s) of snapshot ${table.snapshot["snapshot-id"]} in ${out}\n` +
      `duckdb -c "${query}"\n`,
  );
  return 0;
}

function usage(io: TableIo, message: string): number {
  io.stderr.write(`edge-dedup table: ${message}\n(edge-dedup table --help for usage)\n`);
  return 2;
}

async function refused(io: TableIo, r: Response): Promise<number> {
  const body = await r.text();
  let detail = body.slice(0, 500);
  try {
    detail = (JSON.parse(body) as { detail?: string }).detail ?? detail;
  } catch {}
  io.stderr.write(`edge-dedup table: ${r.status}: ${detail}\n`);
  return 1;
}
