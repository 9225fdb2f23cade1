/**
 * The input object versions (key and etag) the stream has ingested, by a run
 * or another way (an R2 event notification), per incarnation of the stream
 * (its epoch): a later run skips them.
 */
export class IngestedVersions {
  constructor(private readonly sql: SqlStorage) {}

  add(epoch: string, key: string, etag: string, at: number): void {
    this.sql.exec("INSERT OR IGNORE INTO done_files (epoch, key, etag, at) VALUES (?, ?, ?, ?)", epoch, key, etag, at);
  }

  addAll(epoch: string, files: { key: string; etag: string }[], at: number): void {
    this.sql.exec(
      "INSERT OR IGNORE INTO done_files (epoch, key, etag, at) SELECT ?, value ->> 'key', value ->> 'etag', ? FROM json_each(?)",
      epoch,
      at,
      JSON.stringify(files),
    );
  }

  has(epoch: string, key: string, etag: string): boolean {
    return this.sql.exec("SELECT 1 FROM done_files WHERE epoch = ? AND key = ? AND etag = ?", epoch, key, etag).toArray().length > 0;
  }

  /** Records of an earlier incarnation of the stream (deleted and created again) are of no use. */
  forgetOtherEpochs(epoch: string): void {
    this.sql.exec("DELETE FROM done_files WHERE epoch <> ?", epoch);
  }
}
