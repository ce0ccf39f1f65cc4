import { describe, expect, it } from 'vitest';
import { factSubject, sameSubject } from './fact-subject.js';

describe('factSubject', () => {
  it('reads the leading name of a fact, in lower case', () => {
    expect(factSubject('Oz prefers dark mode in every editor.')).toBe('oz');
    expect(factSubject('Oz says: Family always comes first.')).toBe('oz');
    expect(factSubject('oz prefers dark mode')).toBe('oz');
    expect(factSubject('Oz and others use kubernetes in production.')).toBe('oz');
  });

  it('keeps a name of several capitalised words', () => {
    expect(factSubject('Lee Chen runs the platform team.')).toBe('lee chen');
    expect(factSubject('Mary Ann Smith likes jazz.')).toBe('mary ann smith');
  });

  it('follows possessives to what they own and the name after it', () => {
    expect(factSubject("Sam's team uses PostgreSQL 15.")).toBe("sam's team");
    expect(factSubject("Lee's team uses PostgreSQL 15.")).toBe("lee's team");
    expect(factSubject("Oz's sister Mia is a nurse.")).toBe("oz's sister mia");
    expect(factSubject("Oz's sister is a nurse.")).toBe("oz's sister");
    expect(factSubject("Lee Chen's team ships on Fridays.")).toBe("lee chen's team");
    expect(factSubject("James' car is red.")).toBe("james's car");
    expect(factSubject('Sam’s team uses PostgreSQL 15.')).toBe("sam's team");
  });

  it('reads a lowercase name and a capitalised one alike', () => {
    expect(factSubject("sam's team uses postgres")).toBe(factSubject("Sam's team uses Postgres"));
    expect(factSubject('lee uses postgres')).toBe('lee');
  });

  it('skips an opening date, a phrase set off by a comma and opening words', () => {
    expect(factSubject('On 7 May 2023 Oz went hiking.')).toBe('oz');
    expect(factSubject('On the Sunday before 8 May 2023 Oz went hiking.')).toBe('oz');
    expect(factSubject('A few days before 8 May 2023, Oz met Lee.')).toBe('oz');
    expect(factSubject('In 2020, Sam moved to Bergen.')).toBe('sam');
    expect(factSubject('Yesterday at the park, Mia lost her keys.')).toBe('mia');
    expect(factSubject('Recently Melanie had a setback.')).toBe('melanie');
    expect(factSubject('Glad Jon has you in his corner.')).toBe('jon');
    expect(factSubject('Since Caroline was 17 or so.')).toBe('caroline');
  });

  it('finds no subject in a fact that starts with a determiner or pronoun', () => {
    expect(factSubject('The staging server runs on port 8080.')).toBeNull();
    expect(factSubject("It's raining in Oslo.")).toBeNull();
    expect(factSubject('Our team ships on Fridays.')).toBeNull();
    expect(factSubject('')).toBeNull();
  });

  it("with the speaker, takes a leading word of a fact that names the speaker later for no person, unless it is the speaker's", () => {
    expect(factSubject('Family time matters to Melanie.', 'Melanie')).toBeNull();
    expect(factSubject("Painting's a fun way to express Melanie's feelings.", 'Melanie')).toBeNull();
    expect(factSubject("Melanie's kids love the beach, says Melanie.", 'Melanie')).toBe("melanie's kids");
    expect(factSubject("Sam's team uses PostgreSQL 15.", 'Oz')).toBe("sam's team");
    expect(factSubject('Oz Smith keeps bees.', 'Oz Smith')).toBe('oz smith');
  });
});

describe('sameSubject', () => {
  it('tells facts about different people apart, however alike the rest', () => {
    expect(sameSubject("Sam's team uses PostgreSQL 15.", "Lee's team uses PostgreSQL 15.")).toBe(false);
    expect(sameSubject("Sam's team uses PostgreSQL 15.", "Lee's team uses PostgreSQL 15.", 'Oz')).toBe(false);
    expect(sameSubject('Oz prefers tea.', 'Mia prefers tea.')).toBe(false);
    expect(sameSubject("Oz's sister Mia is a nurse.", 'Oz is a nurse.', 'Oz')).toBe(false);
    expect(sameSubject('Lee Chen likes jazz.', 'Lee Park likes jazz.')).toBe(false);
  });

  it('keeps restatements about the same subject together, and a fact whose subject cannot be told with any', () => {
    expect(sameSubject('Oz prefers dark mode.', 'On 7 May 2023 Oz said he prefers dark mode.')).toBe(true);
    expect(sameSubject("sam's team uses postgres", "Sam's team uses PostgreSQL 15.")).toBe(true);
    expect(sameSubject('The release train leaves every Tuesday.', 'Oz leaves every Tuesday.')).toBe(true);
    expect(sameSubject('Family time matters to Melanie.', 'Melanie cherishes time with family.', 'Melanie')).toBe(true);
  });
});
