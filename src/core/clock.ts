/** Where mneme reads the time; inject a fixed clock to make decay and maintenance deterministic. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

const MS_PER_DAY = 86_400_000;
/** 10000-01-01T00:00:00.000Z: from there on `toISOString` writes six-digit years. */
const YEAR_10000 = 253_402_300_800_000;
const TWO_DIGITS = Array.from({ length: 100 }, (_, value) => String(value).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, value) => String(value).padStart(3, '0'));
let lastDay = -1;
let lastDayText = '';

/**
 * The time as `Date.prototype.toISOString` writes it (`2024-06-15T12:00:00.000Z`). A memory's row has
 * several times and a recall reads dozens of rows, so whole milliseconds from 1970 to 9999 are written
 * here without a `Date` (about a quarter of its cost), the date part kept for the last day written;
 * any other value goes to `toISOString`.
 */
export function toIso(epochMs: number): string {
  if (!(Number.isInteger(epochMs) && epochMs >= 0 && epochMs < YEAR_10000)) return new Date(epochMs).toISOString();
  const days = Math.floor(epochMs / MS_PER_DAY);
  if (days !== lastDay) {
    lastDayText = dayText(days);
    lastDay = days;
  }
  let rest = epochMs - days * MS_PER_DAY;
  const milliseconds = rest % 1000;
  rest = (rest - milliseconds) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  return `${lastDayText}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[milliseconds]}Z`;
}

/** `YYYY-MM-DDT` of the day `days` after 1970-01-01 (the proleptic Gregorian calendar, as `Date`). */
function dayText(days: number): string {
  // Days from 0000-03-01, in 400-year eras of 146,097 days; a year runs from March, so February's
  // leap day is the last of its year.
  const shifted = days + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return `${TWO_DIGITS[Math.floor(year / 100)]}${TWO_DIGITS[year % 100]}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T`;
}
