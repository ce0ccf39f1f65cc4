import { describe, expect, it } from 'vitest';
import { ExtractedFactsSchema, type ExtractionInput } from '../../core/ports/fact-extractor.js';
import {
  createOfflineExtractor,
  extractFacts,
  factsWithoutKnown,
  resolveRelativeTimes,
  splitSentences,
} from './offline-extractor.js';

const sentAt = '2023-05-08T13:56:00.000Z';

function facts(userMessage: string, options: Partial<ExtractionInput> = {}) {
  return extractFacts({
    speaker: { userId: 'oz-1', displayName: 'Oz' },
    channelId: 'room-1',
    userMessage,
    assistantReply: null,
    related: [],
    ...options,
  });
}

function contents(userMessage: string, options: Partial<ExtractionInput> = {}) {
  return facts(userMessage, options).map((fact) => fact.content);
}

describe('the offline extractor', () => {
  it('attributes first-person facts to the speaker by name, with the verb agreeing', () => {
    expect(contents('I prefer dark mode in every editor')).toEqual(['Oz prefers dark mode in every editor.']);
    expect(contents("I'm a nurse at the city hospital")).toEqual(['Oz is a nurse at the city hospital.']);
    expect(contents('my sister lives in Oslo with her two cats')).toEqual([
      "Oz's sister lives in Oslo with her two cats.",
    ]);
    expect(contents("I don't drink coffee after noon")).toEqual(["Oz doesn't drink coffee after noon."]);
  });

  it('never says "the user"', () => {
    const all = contents('I work as a carpenter. My dog is called Rex. I love hiking in the Alps.');
    expect(all).toHaveLength(3);
    for (const content of all) {
      expect(content).toMatch(/^Oz/);
      expect(content).not.toMatch(/\buser\b/i);
    }
  });

  it('skips messages of 20 characters or less and messages starting with /', () => {
    expect(facts('I went there with Al')).toEqual([]);
    expect('I went there with Al'.length).toBe(20);
    expect(facts('I went there with Al.')).not.toEqual([]);
    expect(facts('/remember I prefer dark mode in every editor')).toEqual([]);
    expect(facts('   /forget everything about my sister please')).toEqual([]);
  });

  it('skips questions and small talk', () => {
    expect(facts('Do you know a good place for dinner tonight?')).toEqual([]);
    expect(facts("Have you ever been to Lisbon, I'm curious")).toEqual([]);
    expect(facts("I'm so happy for you! I love it! Thanks so much!")).toEqual([]);
    expect(facts('That sounds amazing, tell me more about it')).toEqual([]);
  });

  it('keeps a short message that states a value the speaker has, not a short reply', () => {
    expect(contents('My manager is Dana')).toEqual(["Oz's manager is Dana."]);
    expect(contents('I have two cats')).toEqual(['Oz has two cats.']);
    expect(contents('My cat is Luna')).toEqual(["Oz's cat is Luna."]);
    expect(contents('I weigh 80 kilos')).toEqual(['Oz weighs 80 kilos.']);
    for (const reply of [
      'My bad',
      'My answer is yes',
      'My turn',
      'Our plan is good',
      'My guess is no',
      'My day is fine',
    ]) {
      expect(contents(reply), reply).toEqual([]);
    }
  });

  it('keeps no short message that counts what the speaker has for the talk or says how something is going', () => {
    for (const reply of [
      'I have 2 questions',
      'I have 5 minutes',
      'We have 3 options',
      'I have 2 tabs open',
      'My day is going well',
      'My phone is dying',
      'My flight is delayed',
      'My brain is fried',
      'My battery is at 5%',
      'My hands are full',
    ]) {
      expect(contents(reply), reply).toEqual([]);
    }
    expect(contents('I have 3 kids')).toEqual(['Oz has 3 kids.']);
    expect(contents('My sister is married')).toEqual(["Oz's sister is married."]);
    expect(contents('My name is Sterling')).toEqual(["Oz's name is Sterling."]);
  });

  it('keeps a short message that says what the speaker likes or uses and names it, not a short reply', () => {
    expect(contents('I prefer dark mode')).toEqual(['Oz prefers dark mode.']);
    expect(contents('I hate cilantro')).toEqual(['Oz hates cilantro.']);
    expect(contents('I use Vim')).toEqual(['Oz uses Vim.']);
    expect(contents('I really love jazz')).toEqual(['Oz really loves jazz.']);
    expect(contents('I never eat meat')).toEqual(['Oz never eats meat.']);
    expect(contents("I don't eat pork")).toEqual(["Oz doesn't eat pork."]);
    expect(contents('I love all dogs')).toEqual(['Oz loves all dogs.']);
    expect(contents('I like the Beatles')).toEqual(['Oz likes the Beatles.']);
    for (const reply of [
      'I love it!',
      'I like that idea',
      'I like your plan',
      'I love you guys',
      'I eat later',
      'I prefer the second',
      'I like the first one',
      'I like the idea',
      'I love everything',
      'I like both',
      'I like all of them',
      'I eat anything',
      'I like em',
      'I love ya',
      'i love u',
      'ok',
    ]) {
      expect(contents(reply), reply).toEqual([]);
    }
  });

  it('keeps a rule said with only "always" or "never" as a personal preference of the speaker, by name', () => {
    expect(facts('Always use tabs for indentation in Python code')).toEqual([
      {
        content: 'Oz says to always use tabs for indentation in Python code.',
        category: 'preference',
        importance: 0.8,
        scope: 'personal',
      },
    ]);
    expect(contents('Never push directly to the main branch on Fridays')).toEqual([
      'Oz says to never push directly to the main branch on Fridays.',
    ]);
    expect(contents('Please always answer in British English. Remember to never book red-eye flights!')).toEqual([
      'Oz says to always answer in British English.',
      'Oz says to never book red-eye flights.',
    ]);
    expect(facts('Remember: always double-check the invoice totals')[0]).toMatchObject({
      content: 'Oz says to always double-check the invoice totals.',
      importance: 0.9,
    });
    expect(facts('Tabs should always be used for indentation')[0]).toMatchObject({
      content: 'Oz says: Tabs should always be used for indentation.',
      category: 'preference',
      scope: 'personal',
    });
    expect(facts('Honestly, the night bus never comes on time')[0]).toMatchObject({
      content: 'Oz says: The night bus never comes on time.',
      category: 'fact',
      scope: 'personal',
    });
  });

  it('keeps questions, small talk and words about the listener with "always" or "never" out', () => {
    for (const message of [
      'Do you always work this late at night?',
      'Why does the printer never work on Mondays?',
      'Never mind, that was a silly idea anyway',
      'Always a pleasure chatting with you!',
      'Never been better, thanks for asking',
      'You always know what to say to cheer people up',
      'Always believe in yourself and your dreams',
      "That's always so much fun to watch together",
      'Meal times are always fun with them',
      'Challenging but fun, always admired musicians',
      'Never had a chance to visit it, sadly',
      'The sign on the door says "never give up"',
    ]) {
      expect(facts(message), message).toEqual([]);
    }
  });

  it('keeps the fact and drops the chatter around it', () => {
    expect(contents('Hey Mel! Good to see you! I went to a pottery class and made a bowl.')).toEqual([
      'Oz went to a pottery class and made a bowl.',
    ]);
    expect(contents("Oh wow, thanks! Yeah, I've been learning Portuguese for two years.")).toEqual([
      'Oz has been learning Portuguese for two years.',
    ]);
  });

  it('puts back the subject a chat sentence leaves out', () => {
    expect(
      contents("Lost my job as a banker yesterday, so I'm gonna start my own business", { createdAt: sentAt }),
    ).toEqual(["Oz lost Oz's job as a banker on 7 May 2023, so Oz is gonna start Oz's own business."]);
    expect(contents('Gonna continue my education next year', { createdAt: sentAt })).toEqual([
      "Oz is gonna continue Oz's education in 2024.",
    ]);
    expect(contents('Wanna learn my grandmother’s recipes someday')).toEqual([
      "Oz wants to learn Oz's grandmother's recipes someday.",
    ]);
  });

  it('skips advice, suggestions and requests to the listener', () => {
    expect(facts("Don't forget to take breaks when you need them")).toEqual([]);
    expect(facts("Let's go to a dance class together soon!")).toEqual([]);
    expect(facts('Check out my new dance studio by the water')).toEqual([]);
    expect(facts('I think you would make a great counselor one day')).toEqual([]);
  });

  it('sorts preferences, events and facts into categories, with importance from the signal', () => {
    const [preference] = facts('I really enjoy long walks by the sea');
    expect(preference).toMatchObject({ category: 'preference', scope: 'personal' });
    const [event] = facts('I ran a charity race for mental health last Sunday', { createdAt: sentAt });
    expect(event).toMatchObject({ category: 'event' });
    const [identity] = facts("I'm allergic to peanuts and shellfish");
    expect(identity?.category).toBe('fact');
    expect(identity?.importance).toBeGreaterThanOrEqual(0.75);
    const [habit] = facts('I always run before breakfast, rain or shine');
    expect(habit?.importance).toBeGreaterThanOrEqual(0.8);
    const [reminder] = facts('Remember that I am vegetarian when you suggest recipes');
    expect(reminder).toMatchObject({ content: 'Oz is vegetarian when you suggest recipes.' });
    expect(reminder?.importance).toBeGreaterThanOrEqual(0.9);
    expect((preference?.importance ?? 0) < (reminder?.importance ?? 0)).toBe(true);
  });

  it('takes a request to remember after the fact as a reminder, and leaves it out of the memory', () => {
    for (const message of [
      "I'm allergic to peanuts, please remember that.",
      "I'm allergic to peanuts - don't forget it!",
      "I'm allergic to peanuts, so please keep that in mind.",
      "I'm allergic to peanuts. Please remember this",
    ]) {
      const [fact, ...rest] = facts(message);
      expect(fact, message).toMatchObject({ content: 'Oz is allergic to peanuts.' });
      expect(fact?.importance, message).toBeGreaterThanOrEqual(0.9);
      expect(rest, message).toEqual([]);
    }
    // Words that only look like it stay: "note" as a noun, "remember" as what the sentence is about.
    expect(contents('I left a sticky note for that')).toEqual(['Oz left a sticky note for that.']);
    expect(contents('I can never remember that song title')).toEqual(['Oz can never remember that song title.']);
  });

  it('classifies scope: about the speaker personal, "we" and "our team" room, infrastructure global', () => {
    expect(facts('I prefer tabs over spaces in Go code')[0]?.scope).toBe('personal');
    expect(facts('Our team ships a release every second Tuesday')[0]).toMatchObject({
      scope: 'room',
      content: "Oz's team ships a release every second Tuesday.",
    });
    expect(facts('We decided to hold the retro on Fridays from now on')[0]?.scope).toBe('room');
    expect(facts('The staging server runs on port 8080 behind nginx')[0]).toMatchObject({
      scope: 'global',
      content: 'The staging server runs on port 8080 behind nginx.',
    });
    expect(facts('Remember: the production database backups run at 3am')[0]).toMatchObject({
      scope: 'global',
      content: 'The production database backups run at 3am.',
    });
  });

  it('keeps what "we", "us", "our team" or "this room" say in the room, even about infrastructure', () => {
    const scopes = (message: string) => facts(message).map((fact) => [fact.content, fact.scope]);
    expect(scopes('Our team uses PostgreSQL 15 for every service')).toEqual([
      ["Oz's team uses PostgreSQL 15 for every service.", 'room'],
    ]);
    expect(scopes('We deploy to production on Fridays after lunch')[0]?.[1]).toBe('room');
    expect(scopes('Our standup moved to Wednesday at 10am')[0]?.[1]).toBe('room');
    expect(scopes('The nginx config for us lives in the ops repo')[0]?.[1]).toBe('room');
    expect(scopes('In this room the staging server is on port 8080')[0]?.[1]).toBe('room');
    expect(scopes('Everyone here should rotate their ssh keys monthly')[0]?.[1]).toBe('room');
    // Nobody in it: general knowledge, global as before; the speaker's own: personal.
    expect(scopes('The staging server runs on port 8080 behind nginx')[0]?.[1]).toBe('global');
    expect(scopes('I run PostgreSQL 15 on my laptop')[0]?.[1]).toBe('personal');
  });

  it('keeps a technical "we" that means the speaker and the companion they named with the speaker', () => {
    expect(facts('My brother and I built a homelab. We run kubernetes on three old laptops.')[1]).toMatchObject({
      content: "Oz and Oz's brother run kubernetes on three old laptops.",
      scope: 'personal',
    });
  });

  it('reads "we" as the speaker and the companion they just named', () => {
    expect(contents('I took my kids to the lake. We went swimming all afternoon!')).toEqual([
      "Oz took Oz's kids to the lake.",
      "Oz and Oz's kids went swimming all afternoon.",
    ]);
    expect(facts('I took my kids to the lake. We went swimming all afternoon!')[1]?.scope).toBe('personal');
  });

  it('dates relative times from when the message was sent', () => {
    expect(contents('I went to a support group yesterday and it was so powerful', { createdAt: sentAt })).toEqual([
      'Oz went to a support group on 7 May 2023 and it was so powerful.',
    ]);
    expect(contents('Yeah, I painted that lake sunrise last year!', { createdAt: sentAt })).toEqual([
      'Oz painted that lake sunrise in 2022.',
    ]);
    expect(contents("We're thinking of going camping next month", { createdAt: sentAt })).toEqual([
      'Oz and others are thinking of going camping in June 2023.',
    ]);
    expect(contents('I ran a charity race last Sunday', { createdAt: sentAt })).toEqual([
      'Oz ran a charity race on the Sunday before 8 May 2023.',
    ]);
  });

  it('stamps an event without a time with the day it was mentioned', () => {
    expect(contents('I finally finished the marathon training plan', { createdAt: sentAt })).toEqual([
      'Oz finally finished the marathon training plan (mentioned on 8 May 2023).',
    ]);
  });

  it('does not repeat a fact it already knows or says twice', () => {
    expect(
      facts('I prefer dark mode in every editor', {
        related: [{ id: 1, content: 'Oz prefers dark mode in every editor.' }],
      }),
    ).toEqual([]);
    expect(contents('I love jazz music. I love jazz music.')).toEqual(['Oz loves jazz music.']);
  });

  it('only leaves facts out for its related memories, never adds one (relatedOnlyRemoves)', () => {
    expect(createOfflineExtractor().relatedOnlyRemoves).toBe(true);
    const messages = [
      'ok see you soon',
      'What time is the standup tomorrow?',
      'Could you check the deploy logs for me?',
      'I prefer dark mode in every editor',
      'my sister lives in Oslo with her two cats',
      'I love jazz music. I love jazz music.',
      'Always use tabs for indentation in Python code',
      'We moved the team meeting to Thursdays at 10.',
      'haha that was a great movie last night',
      'The staging database runs on Postgres 16 now.',
    ];
    const stated = messages.flatMap((message) => contents(message));
    const related = [...stated, 'Oz likes tea.', 'Oz uses tabs.'].map((content, id) => ({ id, content }));
    for (const message of messages) {
      const alone = contents(message);
      for (const given of [related, related.slice(0, 3), related.slice(3)]) {
        const withRelated = contents(message, { related: given });
        expect(withRelated.filter((content) => !alone.includes(content))).toEqual([]);
      }
    }
    expect(messages.filter((message) => contents(message).length === 0).length).toBeGreaterThan(2);
  });

  it('tells its answer with related memories from its answer without them (withoutRelated), but not an answer cut at 20 facts', () => {
    expect(createOfflineExtractor().withoutRelated).toBe(factsWithoutKnown);
    const messages = [
      'I prefer dark mode in every editor',
      'my sister lives in Oslo with her two cats',
      'I love jazz music. I love jazz music. I also love JAZZ MUSIC.',
      'Always use tabs for indentation in Python code',
      'We moved the team meeting to Thursdays at 10. I prefer dark mode in every editor.',
      'The staging database runs on Postgres 16 now.',
      'I visited Lisbon last week and I met my old teacher there yesterday.',
    ];
    const stated = messages.flatMap((message) => contents(message));
    const upper = stated.map((content) => content.toUpperCase());
    const related = [...stated, ...upper, 'Oz likes tea.'].map((content, id) => ({ id, content }));
    const createdAt = '2024-05-09T10:00:00.000Z';
    for (const message of messages) {
      const alone = facts(message, { createdAt });
      for (const given of [related, related.slice(0, 3), related.slice(3, 9), related.slice(stated.length), []]) {
        expect(factsWithoutKnown(alone, given)).toEqual(facts(message, { createdAt, related: given }));
      }
    }
    // Twenty facts: the rules stopped there, and with some of them known a later sentence would count.
    const long = Array.from({ length: 30 }, (_, index) => `I visited museum number ${index + 1} in Paris.`).join(' ');
    const cut = facts(long);
    expect(cut).toHaveLength(20);
    const first = [{ id: 1, content: cut[0]?.content ?? '' }];
    expect(factsWithoutKnown(cut, first)).toBeNull();
    expect(facts(long, { related: first }).at(-1)?.content).toBe('Oz visited museum number 21 in Paris.');
  });

  it('returns facts the shared fact schema accepts, at most 20', () => {
    const long = Array.from({ length: 30 }, (_, index) => `I visited museum number ${index + 1} in Paris.`).join(' ');
    const result = facts(long);
    expect(result).toHaveLength(20);
    expect(ExtractedFactsSchema.parse(result)).toEqual(result);
  });

  it('keeps what the speaker says of someone they name, as their own personal fact', () => {
    expect(contents('Mia is coming to visit in June.', { createdAt: sentAt })).toEqual([
      'Oz says Mia is coming to visit in June (mentioned on 8 May 2023).',
    ]);
    expect(contents('Actually Mia changed jobs, she is a teacher now.')).toEqual([
      'Oz says Mia changed jobs, she is a teacher now.',
    ]);
    expect(contents('Leo is 7 and loves dinosaurs.')).toEqual(['Oz says Leo is 7 and loves dinosaurs.']);
    expect(contents('Priya and Sam are getting married in October.')).toEqual([
      'Oz says Priya and Sam are getting married in October.',
    ]);
    expect(contents('Dad was diagnosed with diabetes last year.', { createdAt: sentAt })).toEqual([
      'Oz says Dad was diagnosed with diabetes in 2022.',
    ]);
    for (const fact of facts('Tom quit his job at Google to start a bakery. Alex prefers window seats.')) {
      expect(fact.scope).toBe('personal');
    }
    expect(facts('Alex prefers window seats on long flights.')[0]?.category).toBe('preference');
  });

  it('reads "he" or "she" as the one person the message just named, and as nobody when it named several', () => {
    expect(
      contents('My brother Tom just moved to Berlin. He starts at Siemens next month.', { createdAt: sentAt }),
    ).toEqual(["Oz's brother Tom just moved to Berlin.", 'Oz says Tom starts at Siemens in June 2023.']);
    expect(contents('My sister Mia is visiting. My mom is sick. She has the flu since Monday.')).toEqual([
      "Oz's sister Mia is visiting.",
      "Oz's mom is sick.",
    ]);
    expect(contents('Mia and Tom moved to Porto last year. She started a bakery there.')).not.toContain(
      expect.stringContaining('bakery'),
    );
    // A capitalised word that is no subject ("Remember that ...", "While volunteering ...") names nobody.
    expect(contents('Remember that epic block in the Finals? He chased down Iguodala.')).toEqual([]);
  });

  it('reads "he" or "she" as nobody once a later sentence names someone else', () => {
    const said = contents('Tom is coming to visit in June. Then I met Sarah at the bar. She is a doctor in Boston.');
    expect(said).not.toContain('Oz says Tom is a doctor in Boston.');
    expect(
      contents('Mia is coming to visit in June. Her husband is sick. He is a retired pilot from Ohio.'),
    ).not.toContain('Oz says Mia is a retired pilot from Ohio.');
  });

  it('reads "she" as nobody after a brother and "he" as nobody after a sister', () => {
    expect(contents('My brother Tom moved to Berlin last year. She is a nurse at the hospital now.')).not.toContain(
      'Oz says Tom is a nurse at the hospital now.',
    );
    expect(contents('My sister Mia moved to Berlin last year. He is a nurse at the hospital now.')).not.toContain(
      'Oz says Mia is a nurse at the hospital now.',
    );
  });

  it('keeps what someone else asks for from now on as said by them, not as the speaker asking it', () => {
    const said = contents('Mia asks: please reply in French from now on.');
    expect(said).not.toContain('Oz asks: Mia asks: please reply in French from now on.');
    expect(facts('Mia asks: please reply in French from now on.')[0]?.category ?? 'none').not.toBe('preference');
  });

  it('leaves a doing that is the subject of a longer sentence without a speaker put in front of it', () => {
    expect(contents('Working at Google must be amazing for him.')).not.toContain(
      'Oz is working at Google must be amazing for him.',
    );
    expect(contents('Taking the kids to school every day is exhausting.')).not.toContain(
      'Oz is taking the kids to school every day is exhausting.',
    );
    expect(contents('Moving to Denver in August because it is cheaper.')).toEqual([
      'Oz is moving to Denver in August because it is cheaper.',
    ]);
  });

  it('keeps a note to self personal even when it speaks of the room', () => {
    for (const fact of facts('Note to self: everyone here prefers tabs over spaces.'))
      expect(fact.scope).toBe('personal');
    expect(facts('Note to self: everyone here prefers tabs over spaces.')).toHaveLength(1);
  });

  it('keeps a statement about the future as no request of the speaker', () => {
    for (const message of [
      'In the future AI will replace most jobs.',
      'Going forward, the company will focus on AI.',
      'The default preferred method is email.',
    ]) {
      expect(contents(message)).not.toContain(`Oz asks: ${message}`);
    }
    expect(contents('From now on, reply in Spanish.')).toEqual(['Oz asks: From now on, reply in Spanish.']);
  });

  it('reads "he" or "she" after a possessive subject as nobody, not the owner', () => {
    expect(contents("Mia's husband is moving to Berlin in May. He starts at Siemens next month.")).not.toContain(
      'Oz says Mia starts at Siemens next month.',
    );
    expect(contents("Tom's sister got married last June. She lives in Rome now.")).not.toContain(
      'Oz says Tom lives in Rome now.',
    );
  });

  it('reads "he" or "she" as nobody after a sentence whose subject meets someone else by name', () => {
    expect(contents('Tom met Sarah at the bar last week. She is a doctor in Boston.')).not.toContain(
      'Oz says Tom is a doctor in Boston.',
    );
    expect(contents('Tom moved to Berlin with Anna last year. She is a nurse at the hospital now.')).not.toContain(
      'Oz says Tom is a nurse at the hospital now.',
    );
    expect(contents('My friend Tom met Sarah at the bar last week. She is a doctor in Boston.')).not.toContain(
      'Oz says Tom is a doctor in Boston.',
    );
  });

  it('keeps no saying about the key to something as a code the speaker gave', () => {
    expect(contents('The key is to stay calm and keep going.')).toEqual([]);
    expect(contents('The key to success is hard work.')).toEqual([]);
    expect(contents('The key is under the doormat at the cabin.')).toEqual([
      'Oz says the key is under the doormat at the cabin.',
    ]);
  });

  it('keeps no greeting passed on from someone the speaker names', () => {
    expect(contents('Mia says hi to everyone here today.')).toEqual([]);
    expect(contents('Tom sends his love and says congrats on the new job from Berlin.')).toEqual([]);
    expect(contents('Mia is coming to visit in June.')).toEqual(['Oz says Mia is coming to visit in June.']);
  });

  it('keeps a note to self and a move said without its subject', () => {
    expect(contents('Note to self: dentist appointment on the 14th at 9.')).toEqual([
      'Dentist appointment on the 14th at 9.',
    ]);
    expect(facts('Note to self: dentist appointment on the 14th at 9.')[0]?.importance).toBe(0.9);
    expect(contents('Moving to Denver in August for the new job.', { createdAt: sentAt })).toEqual([
      'Oz is moving to Denver in August for the new job (mentioned on 8 May 2023).',
    ]);
    expect(contents('Moving on, that was a long day at the office.')).toEqual([]);
  });

  it('keeps what the speaker asks for from now on as their preference, and not a request for once', () => {
    expect(contents('Please call me Ozzie from now on.')).toEqual(['Oz asks: Please call me Ozzie from now on.']);
    expect(contents('From now on, reply in Spanish.')).toEqual(['Oz asks: From now on, reply in Spanish.']);
    expect(contents("Don't ever book me on Ryanair again.")).toEqual(["Oz asks: Don't ever book me on Ryanair again."]);
    expect(contents('Keep answers short, bullet points preferred.')).toEqual([
      'Oz asks: Keep answers short, bullet points preferred.',
    ]);
    expect(facts('From now on, reply in Spanish.')[0]).toMatchObject({ category: 'preference', scope: 'personal' });
    for (const message of [
      'Let me know how it goes with the new job!',
      'Let me know if you need any more suggestions.',
      "Don't ever give up on your dreams.",
      'Take care and say hi to the kids.',
    ]) {
      expect(contents(message), message).toEqual([]);
    }
  });

  it('keeps when an arrangement is, and what the speaker does on a given day', () => {
    expect(contents('Meeting with the Acme team moved to Thursday 2pm.')).toEqual([
      'Oz says meeting with the Acme team moved to Thursday 2pm.',
    ]);
    expect(contents('Flight to Tokyo is on the 21st, JAL 44.')).toEqual([
      'Oz says flight to Tokyo is on the 21st, JAL 44.',
    ]);
    expect(contents('Working from home on Fridays.')).toEqual(['Oz is working from home on Fridays.']);
    expect(contents('Taking metformin twice a day now.')).toEqual(['Oz is taking metformin twice a day now.']);
    expect(contents('Broke my wrist skiing, cast for 6 weeks.')).toEqual([
      "Oz broke Oz's wrist skiing, cast for 6 weeks.",
    ]);
    expect(contents('Taking a risk is scary, but I am sure it pays off.')).toEqual([
      'Taking a risk is scary, but Oz is sure it pays off.',
    ]);
    expect(contents('The party was great fun.')).toEqual([]);
    expect(contents('Working on it, will send soon.')).toEqual([]);
  });

  it('takes no capitalised word that opens a sentence for a name, nor a sentence that says nothing of a person', () => {
    for (const message of [
      'Family moments make life awesome.',
      'Confidence is important in business.',
      'Networking is great for gaining new perspectives.',
      'Never had a chance to visit it, sadly.',
      'Recently started learning an instrument, it is fun.',
      'Yoga is a great way to relax.',
      'Barcelona is a must-visit city.',
      'Netflix is down again, ugh.',
      'Melanie, that is so sweet of you!',
      'Mia loves your cooking so much.',
      'Christmas is coming in December.',
      'Easter is in April this year.',
      'New Year is on a Tuesday this time.',
    ]) {
      expect(contents(message), message).toEqual([]);
    }
  });

  it('keeps a code, a number or an address the speaker gives for a thing, and not a remark on it', () => {
    expect(contents('The wifi password at the cabin is bluefox99.')).toEqual([
      'Oz says the wifi password at the cabin is bluefox99.',
    ]);
    expect(contents('The new office address is 12 Rua Augusta, Lisbon.')).toEqual([
      'Oz says the new office address is 12 Rua Augusta, Lisbon.',
    ]);
    expect(facts('The gate code is 4512#.')[0]?.scope).toBe('personal');
    expect(contents('The weather is nice today.')).toEqual([]);
    expect(contents('The food was amazing there.')).toEqual([]);
    expect(contents('The movie was 2 hours too long.')).toEqual([]);
    expect(contents('The wait at the clinic was about 45 minutes.')).toEqual([]);
    expect(contents('The door code is 4512 now, changed 2 days ago.')).toEqual([
      'Oz says the door code is 4512 now, changed 2 days ago.',
    ]);
  });

  it('uses the user id when the speaker has no display name', async () => {
    const extractor = createOfflineExtractor();
    expect(extractor.id).toBe('offline');
    const result = await extractor.extract({
      speaker: { userId: 'u42', displayName: '' },
      channelId: 'c',
      userMessage: 'I have two daughters and a son',
      assistantReply: 'Lovely!',
      related: [],
    });
    expect(result.map((fact) => fact.content)).toEqual(['U42 has two daughters and a son.']);
  });
});

describe('splitSentences', () => {
  it('splits after sentence marks and line breaks, keeping abbreviations whole', () => {
    expect(splitSentences('I met Dr. Smith today. He was kind!\nThen I went home… Done?')).toEqual([
      'I met Dr. Smith today.',
      'He was kind!',
      'Then I went home…',
      'Done?',
    ]);
  });
});

describe('resolveRelativeTimes', () => {
  const at = Date.parse(sentAt);
  it.each([
    ['yesterday', 'on 7 May 2023'],
    ['tomorrow', 'on 9 May 2023'],
    ['last week', 'the week before 8 May 2023'],
    ['next weekend', 'the weekend after 8 May 2023'],
    ['last month', 'in April 2023'],
    ['next month', 'in June 2023'],
    ['last year', 'in 2022'],
    ['3 days ago', 'on 5 May 2023'],
    ['two years ago', 'in 2021'],
    ['last Friday', 'on the Friday before 8 May 2023'],
  ])('turns "%s" into "%s"', (phrase, expected) => {
    expect(resolveRelativeTimes(`It was ${phrase}`, at)).toEqual({ text: `It was ${expected}`, dated: true });
  });

  it.each([
    ['last spring', '2026-12-04', 'in spring 2026'],
    ['last spring', '2026-04-10', 'in spring 2025'],
    ['last summer', '2026-09-01', 'in summer 2026'],
    ['last fall', '2026-11-30', 'in fall 2025'],
    ['last winter', '2026-12-04', 'in the winter of 2025-2026'],
    ['last winter', '2026-02-10', 'in the winter of 2024-2025'],
    ['last winter', '2026-03-01', 'in the winter of 2025-2026'],
    ['this summer', '2026-02-10', 'in summer 2026'],
    ['this winter', '2026-10-10', 'in the winter of 2026-2027'],
    ['this winter', '2026-01-10', 'in the winter of 2025-2026'],
    ['next spring', '2026-01-10', 'in spring 2026'],
    ['next spring', '2026-04-10', 'in spring 2027'],
    ['next autumn', '2026-08-31', 'in autumn 2026'],
    ['next winter', '2026-12-04', 'in the winter of 2027-2028'],
    ['next winter', '2026-01-10', 'in the winter of 2026-2027'],
  ])('turns "%s" said on %s into "%s"', (phrase, day, expected) => {
    expect(resolveRelativeTimes(`It was ${phrase}`, Date.parse(`${day}T12:00:00Z`))).toEqual({
      text: `It was ${expected}`,
      dated: true,
    });
  });

  it('rolls months over the year boundary', () => {
    expect(resolveRelativeTimes('next month', Date.parse('2023-12-10T00:00:00Z')).text).toBe('in January 2024');
    expect(resolveRelativeTimes('last month', Date.parse('2023-01-10T00:00:00Z')).text).toBe('in December 2022');
  });
});
