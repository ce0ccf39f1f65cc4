import type Database from 'better-sqlite3';

/** The tables whose ids the maintenance watermarks and the faces rely on never being issued twice. */
export type FlooredTable = 'messages' | 'memories';

/**
 * The id of the next row of `table`, as an SQL expression: one above both the largest id the table holds
 * and the largest it ever held before a purge (`service_state.<table>_id_floor`). SQLite gives a new row
 * the largest id plus one, so without the floor a purge that deleted the newest rows would hand their ids
 * out again: the next message would take an id at or below the extraction watermarks and never be
 * extracted, and an id a client saw for one user's memory would name another's.
 */
export function nextIdSql(table: FlooredTable): string {
  return `(SELECT MAX(IFNULL((SELECT MAX(id) FROM ${table}), 0),
    IFNULL((SELECT value FROM service_state WHERE name = '${table}_id_floor'), 0)) + 1)`;
}

/**
 * What a purge leaves behind, inside its transaction: the largest ids the tables hold now (their floors),
 * and one more purge in `service_state.purges`, which tells every process that counts it remembered (the
 * term frequencies) may include words that are gone.
 */
export function recordPurge(database: Database.Database): void {
  for (const table of ['messages', 'memories'] as const) {
    database
      .prepare(
        `INSERT INTO service_state (name, value)
        SELECT '${table}_id_floor', MAX(id) FROM ${table} WHERE true HAVING MAX(id) IS NOT NULL
        ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value)`,
      )
      .run();
  }
  database
    .prepare(
      `INSERT INTO service_state (name, value) VALUES ('purges', 1)
      ON CONFLICT (name) DO UPDATE SET value = value + 1`,
    )
    .run();
}
