/**
 * A Runner's storage as its first version kept it (before run options and
 * publication, no recorded version), with one finished run `run_old`: what
 * the upgrade tests start from.
 */
export const runnerV1 = (stream: string, prefix: string) => `
  CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), stream TEXT NOT NULL);
  CREATE TABLE runs (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, prefix TEXT NOT NULL, source TEXT NOT NULL, epoch TEXT NOT NULL,
    status TEXT NOT NULL, cursor TEXT, listed INTEGER NOT NULL, totals TEXT NOT NULL, errors TEXT NOT NULL, attempts INTEGER NOT NULL,
    started_at INTEGER NOT NULL, finished_at INTEGER);
  CREATE TABLE run_files (run_id TEXT NOT NULL, n INTEGER NOT NULL, key TEXT NOT NULL, etag TEXT NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (run_id, n)) WITHOUT ROWID;
  CREATE TABLE done_files (epoch TEXT NOT NULL, key TEXT NOT NULL, etag TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (epoch, key, etag)) WITHOUT ROWID;
  INSERT INTO meta VALUES (1, '${stream}');
  INSERT INTO runs VALUES ('run_old', 1, '${prefix}', 'files', 'e', 'done', NULL, 1,
    '{"files":{"done":0,"skipped":0,"failed":0,"replayed":0},"input":0,"emitted":0,"duplicates":0,"late":0,"rejected":0}', '[]', 0, 1, 2);
`;
