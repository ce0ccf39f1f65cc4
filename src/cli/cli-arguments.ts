/** A number when the text is one; otherwise the text itself, so the shared schema refuses it with its own message. */
export function numeric(value: string | boolean | undefined): number | string | undefined {
  if (typeof value !== 'string') return undefined;
  const number = Number(value);
  return value.trim() !== '' && Number.isFinite(number) ? number : value;
}

/** The entries whose value is not undefined, so that options left out stay left out. */
export function defined<T extends object>(values: T): { [Key in keyof T]?: Exclude<T[Key], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as {
    [Key in keyof T]?: Exclude<T[Key], undefined>;
  };
}
