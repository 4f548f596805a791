"""A multi-session conversation set for recall evaluation, written for this project.

Thirty facts about one user are planted across twelve sessions among ordinary exchanges and
near-miss distractors (facts about other people); each fact has a question that paraphrases it.
Deterministic for a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# (fact the user states, a later question that paraphrases it, a distractor about someone else)
FACTS = [
    (
        "I moved to Lisbon in March.",
        "Which city is my home these days?",
        "My cousin lives in Madrid.",
    ),
    (
        "My dog is a beagle called Biscuit.",
        "What's my pet's name?",
        "My neighbour's cat is called Miso.",
    ),
    (
        "I'm allergic to peanuts.",
        "Is there any food I must avoid?",
        "My brother can't eat shellfish.",
    ),
    (
        "I work as a marine biologist at the aquarium.",
        "What do I do for a living?",
        "My sister is an accountant.",
    ),
    (
        "My sister Marta is getting married on June 14.",
        "When is the family wedding?",
        "My friend got divorced last year.",
    ),
    (
        "I always book an aisle seat when I fly.",
        "Where do I like to sit on planes?",
        "My dad prefers trains.",
    ),
    (
        "I'm training for a 10k race in October.",
        "What event am I preparing for this autumn?",
        "My colleague runs marathons.",
    ),
    (
        "I hurt my left knee skiing two years ago.",
        "Which joint gives me trouble?",
        "My mum broke her wrist once.",
    ),
    ("I've been vegetarian since last year.", "Do I eat meat?", "My partner loves steak."),
    (
        "My favourite author is Ursula K. Le Guin.",
        "Whose novels do I like best?",
        "My book club reads Stephen King.",
    ),
    ("I drive a blue Honda Civic.", "What car do I own?", "My uncle has a red truck."),
    (
        "I speak Portuguese and a little Japanese.",
        "Which languages do I know?",
        "My boss speaks German.",
    ),
    (
        "My birthday is on the 3rd of February.",
        "When should you wish me many happy returns?",
        "My nephew was born in August.",
    ),
    (
        "I play the cello in an amateur orchestra.",
        "What instrument do I practise?",
        "My roommate plays drums.",
    ),
    (
        "I'm saving up to buy a flat by the sea.",
        "What am I putting money aside for?",
        "My friend just bought a boat.",
    ),
    (
        "I can't stand coriander, it tastes like soap to me.",
        "Which herb do I dislike?",
        "My chef friend adores basil.",
    ),
    (
        "My daughter Inês starts primary school in September.",
        "When does my kid begin school?",
        "My neighbour's son is in high school.",
    ),
    (
        "I'm learning to climb at the bouldering gym on Tuesdays.",
        "What sport do I do midweek?",
        "My cousin plays tennis on Sundays.",
    ),
    (
        "I take a beta blocker every morning for my blood pressure.",
        "What medication am I on?",
        "My grandfather takes aspirin.",
    ),
    (
        "My partner's name is Tomás.",
        "Who is my significant other?",
        "My best friend's husband is called Rui.",
    ),
    (
        "I grew up in a small village near Porto.",
        "Where was I raised?",
        "My colleague grew up in London.",
    ),
    (
        "I'm terrified of flying over the ocean.",
        "What makes me anxious when travelling?",
        "My brother is afraid of spiders.",
    ),
    (
        "I use a standing desk and work from home on Fridays.",
        "Which day am I not at the office?",
        "My manager works remotely on Mondays.",
    ),
    (
        "I'm lactose intolerant, so oat milk in my coffee please.",
        "How do I take my coffee?",
        "My sister drinks her tea black.",
    ),
    (
        "My goal this year is to read 40 books.",
        "How many books do I want to finish in 2026?",
        "My friend wants to write a novel.",
    ),
    (
        "I volunteer at the animal shelter every other Saturday.",
        "Where do I help out on weekends?",
        "My aunt volunteers at a hospital.",
    ),
    (
        "My laptop is a ten-year-old ThinkPad I refuse to replace.",
        "What computer do I use?",
        "My son games on a desktop PC.",
    ),
    (
        "I support Benfica, much to my father's annoyance.",
        "Which football club do I cheer for?",
        "My father supports FC Porto.",
    ),
    (
        "I have a fear of deep water since a sailing accident.",
        "Why don't I go swimming in the sea?",
        "My cousin loves scuba diving.",
    ),
    (
        "I studied oceanography at the University of Aveiro.",
        "Where did I go to university?",
        "My brother studied law in Coimbra.",
    ),
]

FILLER = [
    ("Can you suggest a quick lunch?", "A chickpea salad with lemon and herbs takes ten minutes."),
    (
        "What's a good stretch after sitting all day?",
        "Try a hip flexor stretch and a few shoulder rolls.",
    ),
    (
        "How do I make my plants last longer?",
        "Water less often but deeply, and give them bright indirect light.",
    ),
    ("Any podcast recommendations?", "If you like science, try a short daily news science show."),
    ("How should I plan my week?", "Pick three priorities and block time for them first."),
    ("What's the weather usually like in spring?", "Mild days, cool evenings and the odd shower."),
    ("Give me a tip for better sleep.", "Keep the same wake-up time every day, even on weekends."),
    (
        "How do I clean a cast iron pan?",
        "Hot water and a brush, then dry it and rub in a drop of oil.",
    ),
    ("Suggest a board game for four people.", "Ticket to Ride is easy to learn and fun with four."),
    ("How long should I steep green tea?", "About two minutes at 80 degrees, or it turns bitter."),
    ("What's a good way to learn vocabulary?", "Spaced repetition flashcards, ten minutes a day."),
    (
        "Can you explain compound interest simply?",
        "You earn interest on your interest, so growth speeds up.",
    ),
    ("Thanks, that helps.", "You're welcome!"),
    ("Let me think about it.", "Of course, take your time."),
    ("How do I fix a squeaky door?", "A little oil or soap on the hinge pins usually does it."),
    (
        "What's a fun weekend activity?",
        "A picnic in the park or a short hike if the weather holds.",
    ),
]


@dataclass(frozen=True)
class Turn:
    session: int
    role: str
    text: str
    fact: int | None = None  # index in FACTS when this message states a fact


def build(seed: int = 1, sessions: int = 12, filler_per_session: int = 18) -> list[Turn]:
    """The conversation, session by session; each fact is stated once, in a random session."""
    rng = random.Random(seed)
    placement = {i: rng.randrange(sessions) for i in range(len(FACTS))}
    turns: list[Turn] = []
    for s in range(sessions):
        exchanges: list[tuple[str, str, int | None]] = [
            (*rng.choice(FILLER), None) for _ in range(filler_per_session)
        ]
        for i, (fact, _question, distractor) in enumerate(FACTS):
            if placement[i] == s:
                exchanges.insert(
                    rng.randrange(len(exchanges) + 1), (fact, "Got it, I'll remember that.", i)
                )
            if placement[(i + 1) % len(FACTS)] == s:  # distractors land in other sessions
                exchanges.insert(
                    rng.randrange(len(exchanges) + 1), (distractor, "Good to know.", None)
                )
        for user, assistant, fact_index in exchanges:
            turns.append(Turn(s, "user", user, fact_index))
            turns.append(Turn(s, "assistant", assistant))
    return turns
