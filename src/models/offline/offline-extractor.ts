import { attributeToSpeaker } from '../../core/ingest/attribution.js';
import { MAX_SHORT_MESSAGE_CHARS } from '../../core/ingest/ingest-policy.js';
import type { ExtractedFact, ExtractionInput, FactExtractor } from '../../core/ports/fact-extractor.js';
import { MAX_CONTENT_CHARS } from '../../core/schemas.js';
import { wordSet } from '../../core/similarity.js';

/** Facts one message yields at most. */
const MAX_FACTS = 20;

const months = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const day = 86_400_000;

/** Irregular past tenses a chat sentence uses most (regular ones end in -ed). */
const pastVerbs = [
  'went',
  'got',
  'saw',
  'made',
  'took',
  'came',
  'found',
  'gave',
  'left',
  'felt',
  'bought',
  'met',
  'ran',
  'wrote',
  'began',
  'became',
  'brought',
  'built',
  'caught',
  'chose',
  'drew',
  'drove',
  'ate',
  'flew',
  'grew',
  'heard',
  'held',
  'lost',
  'paid',
  'read',
  'rode',
  'sang',
  'spent',
  'swam',
  'taught',
  'won',
  'wore',
  'did',
  'had',
  'was',
  'were',
  'sold',
  'sent',
  'spoke',
  'quit',
];

/** The least importance of a fact the speaker asked to remember. */
const REMINDER_IMPORTANCE = 0.9;

/** The signals one sentence carries. Patterns run on text with straight apostrophes. */
const signals = {
  firstSingular: /\b(?:i|me|my|mine|myself|i'm|im|i've|i'll|i'd)\b/i,
  firstPlural: /\b(?:we|us|our|ours|ourselves|we're|we've|we'll|we'd)\b/i,
  remember:
    /^(?:please\s+)?(?:note to self|remember|don't forget|do not forget|note|keep in mind|fyi|for the record)\b(?:\s+that\b)?[\s:,-]*/i,
  /** The same asked after the fact: "I'm allergic to peanuts, please remember that." */
  rememberAfter:
    /[\s,;:-]+(?:(?:so|and)\s+)?(?:please\s+)?(?:(?:remember|don't forget|do not forget|note)\s+(?:that|this|it)|keep\s+(?:that|this|it)\s+in\s+mind)(?:\s+please)?[\s.!]*$/i,
  habit: /\b(?:always|never|every (?:day|morning|evening|night|week|weekend|month|year)|each (?:day|morning|week))\b/i,
  preference:
    /\b(?:prefer|prefers|preferred|like|likes|love|loves|enjoy|enjoys|hate|hates|dislike|dislikes|adore|favou?rite|fan of|into|can't stand|cannot stand|rather|fond of|passionate about|obsessed with|keen on|crazy about)\b/i,
  identity:
    /\b(?:i'm|im|i am)\s+(?:a|an)\s|\bmy name\b|\bcall me\b|\bi work\b|\bworking (?:as|at|for|in)\b|\bi live\b|\bliving in\b|\b(?:moved|relocated) to\b|\bbased in\b|\bi'm from\b|\bi am from\b|\bborn\b|\byears old\b|\bi study\b|\bstudying\b|\bmy job\b|\bbirthday\b|\bpronouns\b|\bmarried\b|\bdivorced\b|\bengaged\b|\bpregnant\b|\bretired\b|\bgraduated\b|\ballergic\b|\ballergy\b|\bdiagnosed\b|\bvegetarian\b|\bvegan\b|\btransgender\b|\bgay\b|\blesbian\b|\bbisexual\b|\bnon-binary\b|\bsingle\b|\bdating\b|\bmy (?:wife|husband|partner|boyfriend|girlfriend|son|daughter|kids|children|mom|mother|dad|father|sister|brother|parents|family|dog|cat|pet)\b/i,
  past: new RegExp(
    `\\b(?:i|we)\\s+(?:(?:just|finally|recently|also|really|actually|already|once|even|first)\\s+)*(?:[a-z]+ed|${pastVerbs.join(
      '|',
    )})\\b|\\b(?:i've|we've)\\s+(?:just\\s+)?(?:been|got|gotten|had|done|made|started|finished|visited|moved)\\b`,
    'i',
  ),
  plan: /\b(?:i'm|im|i am|we're|we are)\s+(?:going to|gonna|planning|hoping|thinking of|about to)\b|\b(?:i|we)\s+(?:will|plan to|want to|hope to|intend to|might)\b|\b(?:i'll|we'll)\b|\bgonna\b/i,
  temporal:
    /\b(?:yesterday|today|tonight|tomorrow|last (?:night|week|weekend|month|year|summer|winter|spring|fall|autumn|sunday|monday|tuesday|wednesday|thursday|friday|saturday)|next (?:week|weekend|month|year|summer|winter|spring|fall|autumn)|this (?:morning|afternoon|evening|weekend|week|month|year)|\d+ (?:days?|weeks?|months?|years?) ago|a (?:few|couple of) (?:days|weeks|months|years) ago|recently|lately|in (?:january|february|march|april|may|june|july|august|september|october|november|december))\b/i,
  technical:
    /\b(?:servers?|databases?|api|apis|endpoints?|deploy(?:s|ed|ing|ment|ments)?|staging|production|kubernetes|k8s|docker|containers?|clusters?|port \d+|v?\d+\.\d+(?:\.\d+)?|https?:\/\/\S+|ssh|dns|ip address|\d{1,3}(?:\.\d{1,3}){3}|repository|repositories|repo|ci|pipelines?|postgres(?:ql)?|mysql|sqlite|redis|nginx|linux|ubuntu|debian|macos|typescript|javascript|npm|yarn|webpack|graphql|oauth|tls|ssl|vpn|firewall|load balancer|environment variables?|env vars?|config(?:uration)? files?|credentials|backups?|cron(?:job)?s?|git|github|gitlab|aws|gcp|azure|terraform|ansible|jenkins|grafana|prometheus|elasticsearch|kafka|rabbitmq|mongodb|schema|migrations?)\b/i,
  room: /\b(?:this (?:room|channel|chat|group|server)|the team|our team|everyone(?: here)?|everybody(?: here)?|all of us|you all|y'all|the channel)\b/i,
  question: /^(?:do|did|does|have|has|are|were|is|was|can|could|would|will|should|shall)\s+(?:you|u|we)\b/i,
  importanceBoost: /\b(?:important|must|critical|crucial|essential|urgent|seriously|allergic|allergy)\b/i,
};

/**
 * A short message that says what the speaker likes, uses, eats or speaks, and names it: "I prefer dark mode", "I hate
 * cilantro", "I use Vim", "I never eat meat", "I don't eat pork". Not one whose object is a pronoun or the listener's ("I love it", "I like
 * your idea", "i love u"), a quantifier ("I like both", "I love everything") or one of the options just offered ("I
 * prefer the second", "I like the idea"): that is a reply, not a fact.
 */
const shortPreference =
  /^i\s+(?:(?:really|totally|just|absolutely|mostly|only|never|always|usually|often|rarely|don't|do not|no longer)\s+)?(?:prefer|like|love|enjoy|hate|dislike|adore|use|drink|eat|play|speak|drive|own)\s+(?!(?:it|that|this|those|these|them|'?em|you|your|yours|u|ya|ur|him|her|so|too|one|to|what|when|how|more|less|a lot|lots|later|now|soon|today|tomorrow|there|here|again|well|much|better|(?:both|either|neither|all|any)(?:\s+of\b|\s*[.!?]*$)|anything|everything|everyone|everybody|something|someone|mine|the\s+(?:first|second|third|fourth|last|other|others|same|former|latter|next|previous|rest|one|ones|idea|plan|option|choice))\b)['\p{L}\p{N}]/iu;

/**
 * A short message that states a value the speaker has: "My manager is Dana", "Our standup is at 9am", "I have two
 * cats", "I weigh 80 kilos", "I'm 34". Not a reply ("My bad", "My turn", "My answer is yes", "Our plan is good"): a first noun that makes a move in
 * the conversation, or an object that judges, points or is a pronoun, is not a fact; nor how something is going ("My
 * phone is dying", "My flight is delayed", "My hands are full") or what the speaker has for the talk ("I have 2
 * questions", "I have 5 minutes").
 */
const shortStatement =
  /^(?:(?:my|our)\s+(?!(?:bad|pleasure|turn|treat|fault|mistake|god|gosh|goodness|apologies|thoughts|condolences|answer|guess|point|question|plan|idea|vote|choice|offer)\b)\p{L}+(?:\s+\p{L}+)?\s+(?:is|are)\s+(?:now\s+)?(?!(?:it|that|this|so|too|here|there|fine|ok|okay|good|great|bad|done|gone|back|yes|no|up|down|over|out|on|off|coming|ready|same|full|slow|late|busy|fried|dead|low|delayed)\b|at\s+\d+\s*%)['\p{L}\p{N}]|(?:i|we)\s+(?:have|own)\s+(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?!(?:questions?|minutes?|mins?|hours?|hrs?|seconds?|secs?|options?|ideas?|things?|points?|thoughts?|comments?|tabs?|messages?|emails?|calls?|meetings?|more|left)\b)\p{L}|(?:i|i'm|im|i am)\s+(?:weigh\s+|(?:down|up)\s+to\s+)?\d+(?:[.,]\d+)?\s*(?:kg|kilos?|lbs?|pounds|years?(?:\s+old)?)?[.!]*$)/iu;

/**
 * A short message that says how something of the speaker is going ("My phone is dying", "My day is going well"),
 * written in lower case: case matters, so "My name is Sterling" names someone.
 */
const goingOn = /^(?:my|our|My|Our|MY|OUR)\s+\p{L}+(?:\s+\p{L}+)?\s+(?:is|are)\s+\p{Ll}+ing\b/u;

/** Sentences that tell the listener what to do, suggest, or judge the listener: not facts about the speaker. */
const notAFact =
  /^(?:let's|lets|let us|let me know|please|check|look|see|take|try|keep|go|come|stay|imagine|guess|don't|do not|make sure|tell|show|send|give|call|ask|remind)\b|^(?:i\s+(?:think|hope|bet|know|believe|guess|wish|feel like)|i'm sure|i am sure|i'm glad|i am glad)\b.*\byou/i;

/**
 * Whether a request says how things should be from now on ("From now on, reply in Spanish", "Please call me Ozzie",
 * "Keep answers short, bullet points preferred", "Don't ever book me on Ryanair again"), not what to do once ("Take
 * care", "Let me know", "Don't ever give up") or what someone else asks ("Mia asks: ..."): kept as what the speaker asks, a
 * personal preference.
 */
function isLastingRequest(sentence: string): boolean {
  // "Mia asks: reply in French from now on" relays what someone else asks: not the speaker's preference.
  const relayed = /^(\p{Lu}[\p{L}'-]*)\s+(?:asks|asked|says|said|wants|wanted|tells|told|writes|wrote)\b/u.exec(
    sentence,
  );
  if (relayed && !/^I(?:'m)?$/.test(relayed[1] ?? '')) return false;
  if (/\b(?:from now on|going forward|in (?:the )?future|by default|call me|prefer(?:red)?)\b/i.test(sentence))
    return true;
  return (
    /\b(?:me|my|i)\b/i.test(sentence) &&
    /\b(?:anymore|ever again|never again|don't ever|do not ever|no longer)\b/i.test(sentence)
  );
}

/** Past tenses that open a chat sentence whose subject, the speaker, was left out ("Lost my job yesterday"). */
const subjectlessPast = [
  'went',
  'broke',
  'hurt',
  'got',
  'saw',
  'made',
  'took',
  'found',
  'bought',
  'met',
  'ran',
  'wrote',
  'began',
  'brought',
  'built',
  'caught',
  'drove',
  'ate',
  'flew',
  'lost',
  'spent',
  'won',
  'sold',
  'quit',
  'left',
].join('|');
const pastWithoutSubject = new RegExp(
  `^(?:just\\s+|finally\\s+|recently\\s+|also\\s+)?(?:${subjectlessPast}|[a-z]+ed\\s+(?:a|an|the|my|some|our|to|with|up|out|back|off|over|this|that|two|three|new|her|his|their))\\b`,
  'i',
);

/**
 * Puts back the subject a chat sentence left out: "Lost my job" -> "I lost my job", "Gonna try" -> "I'm gonna try",
 * "Moving to Denver in August" -> "I'm moving to Denver in August" (when a name or a time follows: not "Moving on").
 */
function withSubject(sentence: string): string {
  const rest = `${sentence.charAt(0).toLowerCase()}${sentence.slice(1)}`;
  if (pastWithoutSubject.test(sentence) || /^(?:wanna|gotta)\b/i.test(sentence)) return `I ${rest}`;
  if (/^gonna\b/i.test(sentence)) return `I'm ${rest}`;
  const going = goingWithoutSubject.exec(sentence);
  const after = going ? sentence.slice(going[0].length) : '';
  // "Taking a risk is scary", "Working at Google must be amazing for him" have their subject: the doing itself, a verb
  // following it in the sentence's first clause (up to a comma or a word such as "because").
  const firstClause =
    sentence.split(/[,;:]|\s(?:because|since|which|that|so|but|and|when|while|as|where|who|if)\s/i)[0] ?? '';
  const gerundSubject = going !== null && gerundVerb.test(firstClause.slice(going[0].length));
  const named = /\b(?!I\b)\p{Lu}/u.test(after);
  if (going && !gerundSubject && (named || signals.temporal.test(sentence) || often.test(sentence)))
    return `I'm ${rest}`;
  return sentence;
}

/** A verb whose subject is a doing that opens the sentence ("... is scary", "... must be amazing"). */
const gerundVerb =
  /\b(?:is|isn't|was|wasn't|are|were|can|can't|could|must|might|may|will|would|should|makes|made|helps|helped|feels|felt|sucks|seems|sounds|takes|gets|gives|keeps|means)\b/i;

/** How often: "every day", "twice a day", "daily". */
const often = /\b(?:every|each)\s+\p{L}+|\b(?:once|twice|\d+ times) a (?:day|week|month)\b|\b(?:daily|weekly)\b/iu;

/**
 * A move, trip or arrangement said without its subject: "Moving to Denver in August", "Working from home on Fridays",
 * "Taking metformin twice a day".
 */
const goingWithoutSubject =
  /^(?:moving|relocating|starting|leaving|heading|flying|travell?ing|driving|visiting|working|taking)\s+(?:to|for|back|a|an|my|the|at|in|from|\p{L}+\s+(?:every|each|once|twice|daily|weekly))\b/iu;

/** "my brother Tom", "my best friend Ana": a person the speaker names with who they are to them (group 2). */
const relativeWords =
  'brother|sister|son|daughter|husband|wife|partner|boyfriend|girlfriend|fianc[ée]e?|friend|boss|colleague|coworker|neighbou?r|cousin|aunt|uncle|niece|nephew|grandma|grandpa|grandmother|grandfather|granny|mom|mum|dad|mother|father|roommate|teacher|doctor|manager|landlord|landlady|dog|cat|puppy|kitten';
const namedRelative = new RegExp(
  `\\b[Mm]y\\s+(?:(?:little|big|older|younger|best|new|old|eldest|youngest)\\s+)?(${relativeWords})(?:\\s+(\\p{Lu}\\p{Ll}+))?`,
  'gu',
);

/** Someone a later "he" or "she" may mean, with the pronoun their relation to the speaker calls for, if it says. */
interface Person {
  name: string;
  pronoun: 'he' | 'she' | null;
}

const heWords = /^(?:brother|son|husband|boyfriend|fianc[ée]|grandpa|grandfather|dad|father|uncle|nephew)$/i;
const sheWords =
  /^(?:sister|daughter|wife|girlfriend|fianc[ée]e|grandma|grandmother|granny|mom|mum|mother|aunt|niece|landlady)$/i;

/** Someone else's relative ("her husband", "his mom"): a person a later "he" or "she" may mean instead. */
const othersRelative = new RegExp(`\\b(?:his|her|their|your|our)\\s+(?:\\p{L}+\\s+)?(?:${relativeWords})\\b`, 'iu');
/** Someone else named beside the subject ("Tom met Sarah", "moved to Berlin with Anna"): a later pronoun may mean them. */
const otherPerson =
  /\b(?:met|meet|meets|meeting|with|told|tells|asked|asks|called|calls|married|marrying|dating|dated|texted|saw|sees|and|helped|helps|hugged|kissed|like|likes|loves|loved)\s+\p{Lu}/u;
/** Capitalised words that name no one. */
const notAPersonName =
  /^(?:I|I'm|I've|I'll|I'd|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|June|July|August|September|October|November|December)$/;

/**
 * Whom a later "he" or "she" in the message means, after `sentence`: the one person it names ("My brother Tom just
 * moved to Berlin", "Mia is coming in June"), null when it names several, a relative without a name ("my mom"),
 * someone else's relative ("her husband") or anyone by name besides its subject ("Then I met Sarah"), else `before`
 * (the sentence named nobody).
 */
function personAfter(sentence: string, before: Person | null): Person | null {
  const names = new Map<string, Person['pronoun']>();
  for (const match of sentence.matchAll(namedRelative)) {
    if (match[2] === undefined) return null;
    const relation = match[1] ?? '';
    names.set(match[2], heWords.test(relation) ? 'he' : sheWords.test(relation) ? 'she' : null);
  }
  const said = sentence.replace(leadingConnective, '');
  const subject = namedPerson(said);
  if (subject !== null) {
    // "Mia's husband is moving": the subject is the husband, whom no name tells.
    if (/\sand\s/.test(subject) || said.startsWith(`${subject}'s `)) return null;
    if (!names.has(subject)) names.set(subject, before?.name === subject ? before.pronoun : null);
  }
  if (names.size > 0 && otherPerson.test(said)) return null;
  if (names.size === 0) {
    if (othersRelative.test(sentence)) return null;
    const capitalised = sentence.slice(1).match(/(?<![\p{L}'])\p{Lu}[\p{L}'-]*/gu) ?? [];
    if (capitalised.some((word) => !notAPersonName.test(word) && word !== before?.name)) return null;
    return before;
  }
  const [only] = names;
  return names.size === 1 && only ? { name: only[0], pronoun: only[1] } : null;
}

/** "my family" and the like: whom a later "we" in the message most likely means. */
const companionPattern =
  /\bmy (family|husband|wife|partner|kids|children|son|daughter|boyfriend|girlfriend|friends?|parents|mom|mum|dad|mother|father|sister|brother|siblings|fianc[ée]e?|roommates?|colleagues|coworkers|team|band|class|group)\b/gi;

/**
 * Openers that carry nothing ("Oh wow, ...", "Thanks, Mel! ..."), stripped from a sentence's start:
 * interjections always, words like "well" or "no" only when punctuation follows ("No one came" stays).
 */
const opener =
  /^(?:(?:hey|hi|hello|oh|ah|aw+|ooh|wow|whoa|yeah|yes|yep|yup|um+|uh+|hmm+|ha(?:ha)+|he(?:he)+|lol|omg|okay|ok|thanks|thank you|btw|by the way)\b[\s,!.:;-]*|(?:no|nope|nah|well|so|sure|totally|absolutely|honestly|actually|anyway|anyways|right|true|cool|nice|great|awesome|same)\s*[,!.:;-]+\s*)+/i;

/** Words that, alone, make a sentence small talk ("I'm so happy for you!", "I love it"). */
const smallTalk = new Set(
  (
    'i me my mine myself we us our you your yours u it its that this those these them they he she him her there here ' +
    'glad happy sorry sure thanks thank agree know think guess hope wait see understand mean proud excited awesome great ' +
    'cool nice amazing wonderful fantastic good fun lovely love like really totally yeah yes oh wow haha lol okay ok well ' +
    'right true definitely absolutely feel feeling felt hear heard say said tell told talk talking chat glad appreciate ' +
    'lot much so too also just thing things stuff way time go going get got make made take took went gone have has had ' +
    'do does did be been am is are was were can could will would should might must gonna wanna let lets maybe ' +
    'totally super pretty kinda sounds sound looks look seems seem inspiring inspired special fun cute beautiful ' +
    'sweet best better bad worry worried thinking hoping wish wishing again still even always never soon now ' +
    'today yesterday tomorrow tonight im ive ill id dont doesnt didnt cant thats whats youre youve'
  ).split(' '),
);

/**
 * "Always" and "never" said without "I" (the salience design's signals of a semantic memory): a rule
 * the speaker gives ("Always use tabs for indentation", "Please never book a red-eye flight") or holds
 * ("Tabs should always be used for indentation").
 */
const standing = {
  word: /\b(?:always|never)\b/i,
  /** An instruction: "always"/"never" first (after "please", "remember to", "make sure to"), then its verb. */
  instruction:
    /^(?:please\s+)?(?:(?:remember|make sure|be sure|try)\s+to\s+)?((?:always|never)\s+([\p{L}']+)[\s\S]*)$/iu,
  /** Small talk that carries the words: "never mind", "never ever", "as always", "always a pleasure". */
  smallTalk: /\bnever\s+(?:mind|ever|again)\b|\bas always\b|\balways\s+(?:a|an)\s/i,
  /** What the speaker wants done, or holds as a rule, rather than observes. */
  wish: /\b(?:should|shouldn't|must|mustn't|ought to|has to|have to|needs? to|shall)\b/i,
  /** Said of the listener: "you", "your", "yourself". */
  listener: /\b(?:you|your|yours|yourself|yourselves|you're|you've|you'll|you'd|u)\b/i,
  /** A subject only the conversation could tell: "it", "that", "those times". */
  vagueSubject:
    /^(?:(?:but|and|so|because|plus|still)\s+)?(?:it|it's|its|this|that|that's|these|those|they|they're|he|he's|she|she's|there|there's|here|everything|nothing|something|anything|everyone|everybody|someone|somebody|nobody|one|which|what|who)\b/i,
};

/**
 * Words after a first "always"/"never" that show the sentence is no instruction ("Never been better",
 * "Always here for you", "Never had the chance"): past tenses, auxiliaries and judgements.
 */
const notAnInstruction = new Set([
  ...pastVerbs,
  ...(
    'a an the so too very been being be is are am has have would could should will can might must shall here ' +
    'there better worse enough more less late early sure true fun happy good great nice glad together before ' +
    'after again ever once thought knew told heard'
  ).split(' '),
]);

/**
 * A sentence whose only signal is "always" or "never", as a personal fact of the speaker's, or null.
 * An instruction, "Always use tabs for indentation", becomes "Oz says to always use tabs for
 * indentation" (a preference). A statement, "Family always comes first", becomes "Oz says: Family
 * always comes first" (a fact; a preference when it says what should be, "Tabs should always be
 * used"). Left out: small talk, anything said of the listener, fewer than two words of substance, and
 * a statement whose clause has a vague subject ("That's always fun", "Challenging, always admired
 * musicians") or says nothing after the word ("Meal times are always fun"), and the words in quotes or
 * brackets (a sign that says "never give up", an image caption).
 */
function saidAsRule(sentence: string, name: string): (Omit<ExtractedFact, 'content'> & { text: string }) | null {
  // The speaker's own words: quotes and brackets blanked, each character kept in its place.
  const ownWords = sentence.replace(/\[[^\]]*\]?|"[^"]*"?|“[^”]*”?/gu, (quoted) => ' '.repeat(quoted.length));
  if (!standing.word.test(ownWords) || standing.smallTalk.test(sentence) || standing.listener.test(sentence)) {
    return null;
  }
  if (contentWords(sentence, name).length < 2) return null;
  const boost = signals.importanceBoost.test(sentence) ? 0.1 : 0;
  const instruction = standing.instruction.exec(sentence);
  if (instruction) {
    const [, rule = '', verb = ''] = instruction;
    const lower = verb.toLowerCase();
    if (notAnInstruction.has(lower) || /(?:ing|ed)$/.test(lower)) return null;
    const text = `${name} says to ${rule.charAt(0).toLowerCase()}${rule.slice(1)}`;
    return { text, category: 'preference', importance: 0.8 + boost, scope: 'personal' };
  }
  const word = standing.word.exec(ownWords);
  if (!word) return null;
  const clause = (
    ownWords
      .slice(0, word.index)
      .split(/[,;:()"\u2013\u2014]|\s-\s/)
      .at(-1) ?? ''
  ).trim();
  const said = ownWords.slice(word.index + word[0].length);
  if (clause === '' || standing.vagueSubject.test(clause) || contentWords(said, name).length === 0) return null;
  const wish = standing.wish.test(sentence) || signals.preference.test(sentence);
  return {
    text: `${name} says: ${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}`,
    category: wish ? 'preference' : 'fact',
    importance: (wish ? 0.8 : 0.6) + boost,
    scope: 'personal',
  };
}

/** Capitalised words that open a sentence without naming anyone ("The", "Today", "Thanks", "Monday"), beside `smallTalk`. */
const notANameWord = new Set(
  (
    'the a an this that these those it its there here he she they we you i my your our his her their what when where ' +
    'why how who which whose today tomorrow yesterday tonight everyone everybody someone somebody nobody anyone anybody ' +
    'everything something nothing anything thanks thank congrats congratulations wow well so and but also actually ' +
    'maybe perhaps hopefully sadly luckily unfortunately honestly apparently mr mrs ms dr god omg lol ok okay yes no ' +
    'recently finally really lately currently basically definitely probably certainly some little small every each many most ' +
    'monday tuesday wednesday thursday friday saturday sunday ' +
    // Holidays and seasons open sentences with a capital and a time ("Christmas is coming in December"): no person.
    'christmas xmas easter thanksgiving halloween hanukkah chanukah diwali ramadan eid passover lent advent ' +
    'valentines valentine new weekend ' +
    months.join(' ')
  )
    .toLowerCase()
    .split(' '),
);

/**
 * A sentence that opens with a name and a verb: "Mia is coming to visit in June", "Leo is 7 and loves dinosaurs",
 * "Actually Mia changed jobs", "Sam's brother moved to Oslo", "Priya and Sam are getting married". Group 1 is the name.
 */
const namedSubject =
  /^(\p{Lu}[\p{Ll}-]+(?:\s+\p{Lu}[\p{Ll}-]+)?(?:\s+and\s+\p{Lu}[\p{Ll}-]+)?)(?:'s\s+\p{Ll}+)?\s+(?:(?:just|also|still|finally|recently|really|now|already|actually|always|never|usually|often|even)\s+)*([\p{Ll}']+)\b/u;

/**
 * What a sentence says of a person rather than of an idea: where they live or work, their age, family, plans, what
 * they like, what happened to them. "Family moments make life awesome" and "Confidence is important in business"
 * name nobody, and say none of it.
 */
const aboutAPerson =
  /\b(?:lives?|lived|living|works?|worked|working|moved|moving|moves|born|years? old|turned \d+|is \d+|married|engaged|divorced|pregnant|retired|graduated|studies|studied|studying|allergic|diagnosed|sick|ill|started|starts|quit|joined|changed|switched|bought|adopted|visited|visits|visiting|coming|came|getting|arrives?|arrived|leaves|left|loves|loved|likes|liked|hates|hated|prefers|preferred|enjoys|enjoyed|plays|played|teaches|taught|met|said|told|is (?:my|our|now)\s|(?:is|was) (?:a|an)\s+(?!(?:great|good|nice|wonderful|fantastic|amazing|awesome|perfect|huge|big|real|must|true|fun|lovely|beautiful|bit|lot|little|way|sign|reminder|place|thing)\b)|has (?:a|an|two|three|\d+)\s|wants|wanted|needs|needed|plans|planned)\b/i;

/** Verbs a named subject may take first: auxiliaries, irregular past tenses, and any word in -s or -ed. */
const subjectVerb = new RegExp(
  `^(?:is|was|are|were|has|had|will|would|can|could|isn't|wasn't|hasn't|doesn't|didn't|won't|can't|does|did|said|told|thought|knew|kept|${pastVerbs.join('|')}|\\p{Ll}+(?:[^s']s|ed))$`,
  'u',
);

/**
 * What the speaker says of someone they name, as a personal fact of the speaker's ("Mia is coming to visit in June"
 * by Oz -> "Oz says Mia is coming to visit in June"), or null. People the speaker talks about (family, friends,
 * colleagues) are what an assistant is asked about later; without a first person such a sentence gave nothing. Left
 * out: a sentence about the listener or the speaker's own name, and one with fewer than two words of substance
 * besides the name. Its scope stays personal, whatever it mentions: it is what the speaker said.
 */
function saidOfSomeone(sentence: string, name: string): string | null {
  const said = sentence.replace(leadingConnective, '');
  const subject = namedPerson(said);
  if (subject === null || standing.listener.test(sentence) || subject.toLowerCase() === name.toLowerCase()) return null;
  if (contentWords(sentence, `${name} ${subject}`).length < 2 || greetingPassedOn.test(said)) return null;
  return `${name} says ${said}`;
}

/** A greeting passed on ("Mia says hi to everyone", "Tom sends his love"): small talk, not something said of them. */
const greetingPassedOn =
  /\b(?:says?|said|sends?|sent)\s+(?:(?:his|her|their)\s+)?(?:hi|hello|hey|thanks|thank you|bye|goodbye|good night|goodnight|love|regards|best wishes|congrats|congratulations|happy birthday|sorry)\b/i;

/** Words that may open a sentence before its subject: "Actually Mia changed jobs". */
const leadingConnective = /^(?:and|but|also|so|plus|actually|anyway|oh)\s+/i;

/**
 * The name that opens `sentence` as its subject, when the sentence says something of a person (`aboutAPerson`, or a
 * time), or null: "Mia" of "Mia is coming in June", "Priya and Sam" of "Priya and Sam are getting married".
 */
function namedPerson(sentence: string): string | null {
  const match = namedSubject.exec(sentence);
  const subject = match?.[1];
  const verb = match?.[2];
  if (subject === undefined || verb === undefined || !subjectVerb.test(verb) || /ing$/i.test(subject)) return null;
  const words = subject
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word !== 'and');
  if (words.some((word) => notANameWord.has(word) || smallTalk.has(word))) return null;
  return aboutAPerson.test(sentence) || signals.temporal.test(sentence) ? subject : null;
}

/**
 * "The wifi password at the cabin is bluefox99", "The door code is 4512", "The meeting is at 3pm": a sentence that
 * says what a thing is, and gives a code, a number or an address for it. Group 1 is the thing, group 2 what it is.
 */
const definition =
  /^the\s+((?:[\p{L}\p{N}'-]+\s+){0,7}?)(?:is|are|was|were|will be|has been|has changed to|changed to)\s+(\S[\s\S]*)$/iu;
/** Things whose value is worth keeping whatever it looks like. */
const keptThings =
  /\b(?:code|codes|password|passwords|passcode|pin|number|numbers|address|combination|username|login|email|extension|wifi|wi-fi|key)\b/i;

/** A length of time or a count of times ("2 hours too long", "about 45 minutes"): a digit that is no code nor address. */
const howLong =
  /^(?:(?:about|around|almost|nearly|over|under|like|only|just|at least|more than|less than)\s+)?\p{N}+(?:[.,]\p{N}+)?\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|months?|years?|times?)\b/iu;

/** An arrangement that opens a sentence: "Meeting with the Acme team moved to ...", "The flight to Tokyo is ...". */
const arrangement =
  /^(?:the\s+)?(?:[\p{L}'-]+\s+){0,2}?(?:meeting|flight|appointment|call|dinner|lunch|breakfast|party|interview|exam|trip|wedding|concert|class|surgery|deadline|check-?up|reservation|booking|train|standup|stand-up|review|presentation|demo|recital|match)s?\b/iu;
/** When it is: a weekday, a month, a time or a date. */
const whenItIs =
  /\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|noon|midnight|tonight|tomorrow|\d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}(?:st|nd|rd|th)|\d{1,2}:\d{2})\b/i;

/**
 * What the speaker says a thing is, when it gives a code, a number or an address ("The door code is 4512" by Oz ->
 * "Oz says the door code is 4512"), or when an arrangement is ("Meeting with the Acme team moved to Thursday 2pm" ->
 * "Oz says meeting with the Acme team moved to Thursday 2pm"), as a personal fact of the speaker's, or null. Its
 * scope stays personal: a code said in a conversation is for those who heard it, never for every viewer.
 */
function saidOfSomething(sentence: string, name: string): string | null {
  if (standing.listener.test(sentence)) return null;
  const match = definition.exec(sentence);
  const thing = match?.[1] ?? '';
  const value = match?.[2] ?? '';
  // "The key is to stay calm", "The key to success is hard work": a saying, no code nor place.
  const saying = /^to\s+\p{Ll}+\b/u.test(value) || /\bto\s+\p{Ll}+\s*$/u.test(thing.trim());
  const defines =
    match !== null && ((!saying && keptThings.test(thing)) || (/\p{N}|@/u.test(value) && !howLong.test(value)));
  if (!defines && !(arrangement.test(sentence) && whenItIs.test(sentence))) return null;
  if (contentWords(sentence, name).length < 2) return null;
  return `${name} says ${sentence.charAt(0).toLowerCase()}${sentence.slice(1)}`;
}

/** Months and days written out, and the speaker's name: a sentence needs a word besides these. */
function contentWords(sentence: string, name: string): string[] {
  const ignore = new Set([...wordSet(name, { keepStopWords: true })]);
  return [...wordSet(sentence.replaceAll("'", ''))].filter((word) => !smallTalk.has(word) && !ignore.has(word));
}

/** The sentences of a message: split after `.`, `!`, `?` or `…` and at line breaks, keeping "Dr." and "e.g." whole. */
export function splitSentences(text: string): string[] {
  const sentences: string[] = [];
  for (const line of text.split(/\n+/)) {
    let current = '';
    for (const piece of line.split(/(?<=[.!?…])\s+/u)) {
      current = current ? `${current} ${piece}` : piece;
      if (!/\b(?:mr|mrs|ms|dr|prof|sr|jr|st|vs|etc|e\.g|i\.e|approx|no)\.$/i.test(current)) {
        sentences.push(current);
        current = '';
      }
    }
    if (current) sentences.push(current);
  }
  return sentences.map((sentence) => sentence.trim()).filter((sentence) => sentence.length > 0);
}

function formatDate(time: number): string {
  const date = new Date(time);
  return `${date.getUTCDate()} ${months[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

function monthOf(time: number, offset: number): string {
  const date = new Date(time);
  const index = date.getUTCMonth() + offset;
  const year = date.getUTCFullYear() + Math.floor(index / 12);
  return `${months[((index % 12) + 12) % 12]} ${year}`;
}

/**
 * Relative times turned into dates, as of when the message was sent: "yesterday" -> "on 7 May
 * 2023", "last year" -> "in 2022", "next month" -> "in June 2023", "last Sunday" -> "on the
 * Sunday before 8 May 2023". Returns the text and whether anything was dated.
 */
export function resolveRelativeTimes(text: string, sentAt: number): { text: string; dated: boolean } {
  let dated = false;
  const year = new Date(sentAt).getUTCFullYear();
  const today = formatDate(sentAt);
  /** Replaces every match; `replacement` gets the match and its groups (whole match first). */
  const replace = (pattern: RegExp, replacement: (groups: Array<string | undefined>) => string) => {
    text = text.replace(pattern, (...parts: unknown[]) => {
      dated = true;
      return replacement(parts.slice(0, -2) as Array<string | undefined>);
    });
  };
  replace(/\b(?:on\s+)?yesterday\b/gi, () => `on ${formatDate(sentAt - day)}`);
  replace(/\blast night\b/gi, () => `on the night of ${formatDate(sentAt - day)}`);
  replace(/\b(?:on\s+)?tomorrow\b/gi, () => `on ${formatDate(sentAt + day)}`);
  replace(/\btonight\b/gi, () => `on the night of ${today}`);
  replace(/\bthis (morning|afternoon|evening)\b/gi, (match) => `on the ${match[1]?.toLowerCase()} of ${today}`);
  replace(/\btoday\b/gi, () => `on ${today}`);
  replace(/\blast (week|weekend)\b/gi, (match) => `the ${match[1]?.toLowerCase()} before ${today}`);
  replace(/\bnext (week|weekend)\b/gi, (match) => `the ${match[1]?.toLowerCase()} after ${today}`);
  replace(/\bthis weekend\b/gi, () => `the weekend of ${today}`);
  replace(/\blast month\b/gi, () => `in ${monthOf(sentAt, -1)}`);
  replace(/\bnext month\b/gi, () => `in ${monthOf(sentAt, 1)}`);
  replace(/\bthis month\b/gi, () => `in ${monthOf(sentAt, 0)}`);
  replace(/\blast year\b/gi, () => `in ${year - 1}`);
  replace(/\bnext year\b/gi, () => `in ${year + 1}`);
  replace(/\bthis year\b/gi, () => `in ${year}`);
  replace(/\b(last|this|next) (spring|summer|fall|autumn|winter)\b/gi, (match) =>
    seasonOf(sentAt, (match[1]?.toLowerCase() ?? 'this') as SeasonWhich, match[2]?.toLowerCase() ?? 'summer'),
  );
  replace(
    /\blast (sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/gi,
    (match) => `on the ${capitalise(match[1] ?? '')} before ${today}`,
  );
  replace(/\b(\d+|a|one|two|three|four|five|six) (day|week|month|year)s? ago\b/gi, (match) => {
    const count = Number.isNaN(Number(match[1])) ? wordNumber(match[1] ?? 'a') : Number(match[1]);
    const unit = match[2]?.toLowerCase();
    if (unit === 'day') return `on ${formatDate(sentAt - count * day)}`;
    if (unit === 'week') return `around ${formatDate(sentAt - count * 7 * day)}`;
    if (unit === 'month') return `in ${monthOf(sentAt, -count)}`;
    return `in ${year - count}`;
  });
  replace(
    /\ba (few|couple of) (days|weeks|months|years) ago\b/gi,
    (match) => `a ${match[1]} ${match[2]} before ${today}`,
  );
  return { text, dated };
}

type SeasonWhich = 'last' | 'this' | 'next';

/** The first month (0-11) of each season, as the northern hemisphere counts them; winter runs from December. */
const seasonStarts: Record<string, number> = { spring: 2, summer: 5, fall: 8, autumn: 8, winter: 11 };

/**
 * "last spring" -> "in spring 2023", as of `sentAt`: the last one that has ended, this year's (winter: the one
 * under way or, from July, the coming one), or the next one not yet begun. A winter is named by both its years.
 */
function seasonOf(sentAt: number, which: SeasonWhich, season: string): string {
  const date = new Date(sentAt);
  const month = date.getUTCMonth();
  const year = date.getUTCFullYear();
  const start = seasonStarts[season] ?? 5;
  // Months since the start of the season's occurrence that began in the latest past or present year.
  const sinceStart = (month - start + 12) % 12;
  // The year in which the occurrence under way or most recently begun started.
  const begunIn = month >= start ? year : year - 1;
  const ended = sinceStart >= 3;
  const startYear =
    which === 'last'
      ? ended
        ? begunIn
        : begunIn - 1
      : which === 'next'
        ? begunIn + 1
        : season === 'winter'
          ? month >= 6
            ? year
            : year - 1
          : year;
  return season === 'winter' ? `in the winter of ${startYear}-${startYear + 1}` : `in ${season} ${startYear}`;
}

function wordNumber(word: string): number {
  return { a: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6 }[word.toLowerCase()] ?? 1;
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
}

/** A sentence tidied into a memory: spaces collapsed, emoji and trailing marks dropped, one full stop. */
function finish(text: string): string {
  const tidy = text
    .replace(/\p{Extended_Pictographic}|\u{FE0F}|\u{200D}/gu, '')
    .replace(/\s+/g, ' ')
    .replace(/\s+([,.;:!?])/g, '$1')
    .trim()
    .replace(/[\s,;:!.…-]+$/u, '');
  const capitalised = tidy.charAt(0).toUpperCase() + tidy.slice(1);
  return capitalised.length > 0 ? `${capitalised}.` : '';
}

interface SentenceFacts {
  category: string;
  importance: number;
  scope: ExtractedFact['scope'];
  isEvent: boolean;
}

/** Category, importance and scope of one sentence from its signals. */
function classify(sentence: string, isReminder: boolean, hasCompanion: boolean): SentenceFacts {
  const firstSingular = signals.firstSingular.test(sentence);
  const firstPlural = signals.firstPlural.test(sentence);
  const technical = signals.technical.test(sentence);
  const isPlan = signals.plan.test(sentence);
  const isEvent = signals.temporal.test(sentence) || signals.past.test(sentence) || isPlan;
  const isPreference = signals.preference.test(sentence);
  const isHabit = signals.habit.test(sentence);
  const isIdentity = signals.identity.test(sentence);

  // "We", "our team", "this room" decide before technical terms: "Our team uses PostgreSQL 15" is the
  // room's fact, not knowledge for every viewer. A "we" that means the speaker and the companion they
  // named ("my kids ... we went") is the speaker's own; only a sentence with no one in it is global.
  let scope: ExtractedFact['scope'] = 'personal';
  if (!firstSingular && (signals.room.test(sentence) || (firstPlural && !hasCompanion))) scope = 'room';
  else if (technical && !firstSingular && !firstPlural) scope = 'global';

  let category: string;
  let importance: number;
  if (technical && scope === 'global') {
    category = 'fact';
    importance = 0.6;
  } else if (isPreference && !signals.past.test(sentence)) {
    category = 'preference';
    importance = 0.65;
  } else if (isHabit) {
    category = 'fact';
    importance = 0.6;
  } else if (isEvent && !isIdentity) {
    category = 'event';
    importance = 0.55;
  } else if (isIdentity || firstSingular || firstPlural) {
    category = 'fact';
    importance = 0.6;
  } else {
    category = 'general';
    importance = 0.45;
  }
  if (isIdentity) importance = Math.max(importance, 0.75);
  if (isHabit) importance = Math.max(importance, 0.8);
  if (signals.importanceBoost.test(sentence)) importance = Math.min(1, importance + 0.1);
  if (isReminder) importance = Math.max(importance, REMINDER_IMPORTANCE);
  return { category, importance, scope, isEvent: category === 'event' };
}

/**
 * The default extractor: no network, no model. For each sentence of the user message it looks
 * for signals (first person, "remember", "always"/"never", preferences, identity, family, events
 * and plans, technical terms, "we"/"our team"/"this room"), keeps those that say something
 * beyond small talk, rewrites the first person into the speaker's name with verb agreement
 * ("I prefer dark mode" by Oz -> "Oz prefers dark mode"), dates relative times from when the
 * message was sent, and classifies category, importance and scope (about the speaker ->
 * personal; "we", "our team", "this room" -> room, whatever else the sentence mentions;
 * infrastructure and technical with no person in it -> global). A
 * sentence whose only signal is "always" or "never" is what the speaker says ("Always use tabs" ->
 * "Oz says to always use tabs", a personal preference; see `saidAsRule`). What the speaker says of someone they
 * name, or of a thing's code or address, is their personal fact ("Oz says Mia is coming to visit in June"; see
 * `saidOfSomeone`, `saidOfSomething`). Questions, messages of 20 characters or less and messages starting with `/` give nothing.
 * The assistant's reply is not mined: facts come from what the person said.
 */
export function createOfflineExtractor(): FactExtractor {
  return {
    id: 'offline',
    inProcess: true,
    // `related` only removes a fact that a related memory states word for word (`known` below).
    relatedOnlyRemoves: true,
    async extract(input: ExtractionInput): Promise<ExtractedFact[]> {
      return extractFacts(input);
    },
    withoutRelated: factsWithoutKnown,
  };
}

/**
 * What `extractFacts` answers an input with `related`, from its answer without them (`facts`): the
 * facts no related memory states word for word (`known`), in order. An answer cut at `MAX_FACTS` is
 * not told (null): with some of its facts known, later sentences could have given others.
 */
export function factsWithoutKnown(
  facts: readonly ExtractedFact[],
  related: ReadonlyArray<{ id: number; content: string }>,
): ExtractedFact[] | null {
  if (facts.length >= MAX_FACTS) return null;
  const known = new Set(related.map((memory) => memory.content.toLowerCase()));
  return facts.filter((fact) => !known.has(fact.content.toLowerCase()));
}

/** The offline extractor's rules as a plain function (see `createOfflineExtractor`). */
export function extractFacts(input: ExtractionInput): ExtractedFact[] {
  const message = input.userMessage.replaceAll('’', "'").trim();
  if (message.startsWith('/')) return [];
  // A short message is small talk ("ok see you soon") unless it says who the speaker is ("I live in Oslo") or what
  // they like or use, naming it ("I prefer dark mode", "I use Vim"; not "I love it").
  const saysWhoIAm = signals.firstSingular.test(message) && signals.identity.test(message);
  if (
    message.length <= MAX_SHORT_MESSAGE_CHARS &&
    !saysWhoIAm &&
    !shortPreference.test(message) &&
    !(shortStatement.test(message) && !goingOn.test(message))
  )
    return [];
  const name = input.speaker.displayName.trim() || input.speaker.userId;
  const sentAt = input.createdAt ? Date.parse(input.createdAt) : Number.NaN;
  const known = new Set(input.related.map((memory) => memory.content.toLowerCase()));
  const facts: ExtractedFact[] = [];
  const seen = new Set<string>();
  let companion: string | null = null;
  let person: Person | null = null;

  for (const raw of splitSentences(message)) {
    for (const match of raw.matchAll(companionPattern)) companion = match[1]?.toLowerCase() ?? companion;
    let sentence = raw.replace(opener, '').trim();
    // "He starts at Siemens next month" after "My brother Tom just moved to Berlin": said of Tom.
    const pronoun = /^(?:he|she)\b/i.exec(sentence);
    const means =
      pronoun && person !== null && (person.pronoun ?? pronoun[0].toLowerCase()) === pronoun[0].toLowerCase();
    if (pronoun && person !== null && means) sentence = `${person.name}${sentence.slice(pronoun[0].length)}`;
    person = personAfter(sentence, person);
    if (/\?\s*[\p{Extended_Pictographic}\s]*$/u.test(raw) || signals.question.test(sentence)) continue;
    let asked = false;
    let reminder = signals.remember.exec(sentence);
    if (reminder && /^(?:to|when|how|what|the time)\b/i.test(sentence.slice(reminder[0].length))) reminder = null;
    if (reminder) {
      sentence = sentence.slice(reminder[0].length);
      // "Please remember this." after a fact asks to remember that fact.
      if (/^(?:this|it)?(?:\s+please)?[\s.!]*$/i.test(sentence)) {
        const previous = facts.at(-1);
        if (previous) previous.importance = Math.max(previous.importance, REMINDER_IMPORTANCE);
        continue;
      }
    } else {
      const after = signals.rememberAfter.exec(sentence);
      if (after && after.index > 0) {
        reminder = after;
        sentence = sentence.slice(0, after.index);
      } else if (notAFact.test(sentence) && !standing.instruction.test(sentence)) {
        if (!isLastingRequest(sentence)) continue;
        asked = true;
      }
    }
    sentence = withSubject(sentence);
    const firstPerson = signals.firstSingular.test(sentence) || signals.firstPlural.test(sentence);
    const technical = signals.technical.test(sentence);
    // Said without "please" or an imperative, it asks something only when it states nothing: "In the future AI will
    // replace most jobs" is a statement.
    const states = /\b(?:will|won't|would|is|isn't|are|aren't|was|wasn't|were|has|have|had)\b/i.test(sentence);
    if (!firstPerson && !reminder && !technical && !states && isLastingRequest(sentence)) asked = true;
    const rule = firstPerson || technical || asked ? null : saidAsRule(sentence, name);
    let traits: SentenceFacts;
    let content: string;
    if (asked) {
      traits = { category: 'preference', importance: 0.8, scope: 'personal', isEvent: false };
      content = `${name} asks: ${sentence}`;
    } else if (rule) {
      const importance = Math.min(1, reminder ? Math.max(rule.importance, REMINDER_IMPORTANCE) : rule.importance);
      traits = { category: rule.category, importance, scope: rule.scope, isEvent: false };
      content = rule.text;
    } else if (!firstPerson && !reminder) {
      const said = technical ? null : (saidOfSomeone(sentence, name) ?? saidOfSomething(sentence, name));
      if (said !== null) {
        const classified = classify(sentence, false, false);
        const category = classified.category === 'general' ? 'fact' : classified.category;
        traits = { ...classified, category, scope: 'personal', importance: Math.min(classified.importance, 0.6) };
        content = said;
      } else if (!technical) continue;
      else {
        if (contentWords(sentence, name).length === 0) continue;
        traits = classify(sentence, false, companion !== null);
        content = attributeToSpeaker(sentence, name, { companion });
      }
    } else {
      if (contentWords(sentence, name).length === 0) continue;
      traits = classify(sentence, reminder !== null, companion !== null);
      content = attributeToSpeaker(sentence, name, { companion });
    }
    // A note to self is for the speaker alone, whatever it speaks of ("Note to self: everyone here prefers tabs").
    if (reminder && /^(?:please\s+)?note to self\b/i.test(reminder[0])) traits = { ...traits, scope: 'personal' };
    let dated = false;
    if (Number.isFinite(sentAt)) {
      const resolved = resolveRelativeTimes(content, sentAt);
      content = resolved.text;
      dated = resolved.dated;
    }
    content = finish(content);
    if (traits.isEvent && !dated && Number.isFinite(sentAt)) {
      content = `${content.slice(0, -1)} (mentioned on ${formatDate(sentAt)}).`;
    }
    if (content.split(/\s+/).length < 3 || content.length > MAX_CONTENT_CHARS) continue;
    const key = content.toLowerCase();
    if (seen.has(key) || known.has(key)) continue;
    seen.add(key);
    facts.push({ content, category: traits.category, importance: traits.importance, scope: traits.scope });
    if (facts.length === MAX_FACTS) break;
  }
  return facts;
}
