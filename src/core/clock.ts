/** Where mneme reads the time; inject a fixed clock to make decay and maintenance deterministic. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function toIso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
