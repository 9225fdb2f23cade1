/** The names of a stream's destinations, kept by its index object (named `{stream}`). */
export class Members {
  constructor(private readonly sql: SqlStorage) {}

  /** Lists `name`, unless the stream already has `max` others (a storage read and write with no await between: no race). */
  add(name: string, max: number): "added" | "present" | "full" {
    if (this.sql.exec("SELECT 1 FROM members WHERE name = ?", name).toArray().length > 0) return "present";
    if (this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM members").one().n >= max) return "full";
    this.sql.exec("INSERT INTO members (name) VALUES (?)", name);
    return "added";
  }

  remove(name: string): void {
    this.sql.exec("DELETE FROM members WHERE name = ?", name);
  }

  list(): string[] {
    return this.sql
      .exec<{ name: string }>("SELECT name FROM members ORDER BY name")
      .toArray()
      .map((r) => r.name);
  }
}
