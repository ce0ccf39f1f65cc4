/**
 * A retrieval's assignment of one reinforced signal: the touch's value while the memory still holds the value it was
 * computed from (`read_<column>`), else the stored one (attack 31c). Both stores write the same expression.
 */
export function reinforced(column: 'strength' | 'salience' | 'importance'): string {
  return `${column} = CASE WHEN touched.${column} IS NOT NULL AND (touched.read_${column} IS NULL
    OR touched.read_${column} = memories.${column}) THEN touched.${column} ELSE memories.${column} END`;
}
