/** The name of the stream a Runner serves (its alarms know it from here). */
export class RunnerMeta {
  constructor(private readonly sql: SqlStorage) {}

  setStream(stream: string): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (id, stream) VALUES (1, ?)", stream);
  }

  stream(): string {
    return this.sql.exec<{ stream: string }>("SELECT stream FROM meta").one().stream;
  }
}
