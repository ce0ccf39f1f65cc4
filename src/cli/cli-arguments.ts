import { InvalidArgumentError, Option } from 'commander';

/**
 * Option parsers for every command. Commander runs them while it reads the command line, so a bad value
 * stops the run before anything is opened: exit 2 and one line, `option '--port <port>' argument 'abc'
 * is invalid. expected a whole number from 0 to 65535`. A new command gets the same checks by using them.
 */

/** A parser of whole numbers from `min` to `max` (digits only: `abc`, `1.5`, `1e3` and `-1` are refused). */
export function wholeNumber(min: number, max: number = Number.MAX_SAFE_INTEGER): (value: string) => number {
  const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
  return (value) => {
    const text = value.trim().replaceAll('_', '');
    const number = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!(Number.isSafeInteger(number) && number >= min && number <= max)) {
      throw new InvalidArgumentError(`expected a whole number ${range}`);
    }
    return number;
  };
}

/** A parser of decimal numbers from `min` to `max` (`0.8`, `.5`, `1`). */
export function decimalNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    const text = value.trim();
    const number = /^(\d+(\.\d*)?|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
    if (!(number >= min && number <= max)) throw new InvalidArgumentError(`expected a number from ${min} to ${max}`);
    return number;
  };
}

/** A parser of any finite decimal number (`-1`, `0.8`, `2`), for values the shared schema clamps. */
export function finiteNumber(value: string): number {
  const text = value.trim();
  const number = /^[-+]?(\d+(\.\d*)?|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(number)) throw new InvalidArgumentError('expected a number, e.g. 0.8');
  return number;
}

/**
 * A parser of comma-separated ids (`ann, bob`; empty items dropped). A value naming none (`''`, an unset shell
 * variable) is refused rather than read as the empty list: `instead` says how to ask for that on purpose.
 */
export function idList(instead: string): (value: string) => string[] {
  return (value) => {
    const ids = value
      .split(',')
      .map((id) => id.trim())
      .filter((id) => id !== '');
    if (ids.length === 0) throw new InvalidArgumentError(`expected comma-separated ids, e.g. ann,bob; ${instead}`);
    return ids;
  };
}

/** An option whose value is a whole number from `min` to `max`. */
export function wholeNumberOption(flags: string, description: string, min: number, max?: number): Option {
  return new Option(flags, description).argParser(wholeNumber(min, max));
}

/** An option whose value is a decimal number from `min` to `max`. */
export function decimalNumberOption(flags: string, description: string, min: number, max: number): Option {
  return new Option(flags, description).argParser(decimalNumber(min, max));
}

/** An option whose value is one of `choices` (commander lists them when another is given). */
export function choiceOption(flags: string, description: string, choices: readonly string[]): Option {
  return new Option(flags, description).choices(choices);
}

/** The entries whose value is not undefined, so that options left out stay left out. */
export function defined<T extends object>(values: T): { [Key in keyof T]?: Exclude<T[Key], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as {
    [Key in keyof T]?: Exclude<T[Key], undefined>;
  };
}
