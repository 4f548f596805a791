"""Write the bundled sample conversation (langchain_mastra_memory/data/sample_conversation.jsonl).

Several sessions of one user ("alice") with an assistant, a few hundred messages, with facts
planted in early sessions that later questions paraphrase (used by the demo and the recall
evaluation). Deterministic: run it again and the file is the same.

    python scripts/make_sample_conversation.py
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

OUT = (
    Path(__file__).resolve().parents[1]
    / "langchain_mastra_memory"
    / "data"
    / "sample_conversation.jsonl"
)
RESOURCE = "alice"

# (thread id, title, day offset, planted facts as (user line, assistant reply), topic exchanges)
SESSIONS = [
    (
        "trip-lisbon",
        "Planning a weekend in Porto",
        0,
        [
            (
                "By the way, I moved to Lisbon in March, so Porto is only a train ride away now.",
                "Nice! From Lisbon the Alfa Pendular gets you to Porto in about three hours.",
            ),
            (
                "I always book an aisle seat, I can't stand being trapped by the window.",
                "Noted: aisle seats. On the Alfa Pendular the aisle seats are the B and C letters.",
            ),
        ],
        [
            (
                "What should I see in Porto in two days?",
                "Ribeira, the Livraria Lello, a port cellar in Gaia, and the Serralves gardens.",
            ),
            (
                "Is the Livraria Lello worth the queue?",
                "Go at opening time; the queue is short and the staircase is best without crowds.",
            ),
            (
                "Which port cellar would you pick?",
                "Graham's has the best view; Taylor's has the nicest garden and peacocks.",
            ),
            (
                "How do I get from the station to Ribeira?",
                "From São Bento it is a ten-minute walk downhill through the old town.",
            ),
            (
                "Any good seafood place near the river?",
                "Try a tasca in Matosinhos; grilled sardines and octopus are the local staples.",
            ),
            (
                "Should I buy an Andante card?",
                "Yes, the Andante Tour card covers metro, buses and trams for one or three days.",
            ),
            (
                "What is the weather like in May?",
                "Usually mild, 18 to 23 degrees, with the odd shower; bring a light jacket.",
            ),
            (
                "Can you suggest a sunset spot?",
                "The Jardim do Morro on the Gaia side looks straight at the Ribeira at sunset.",
            ),
        ],
    ),
    (
        "dog-care",
        "Biscuit's diet and walks",
        3,
        [
            (
                "My dog Biscuit is a four-year-old beagle and he is always hungry.",
                "Beagles are famous for that. Let's plan Biscuit's meals so he stays at a healthy weight.",
            ),
            (
                "Also, I'm allergic to peanuts, so no peanut butter treats in my house.",
                "Understood, no peanut butter. Pumpkin or plain cooked chicken make good treats instead.",
            ),
        ],
        [
            (
                "How much should a beagle eat a day?",
                "About 45 to 60 grams of dry food per 5 kg of body weight, split into two meals.",
            ),
            (
                "He begs at the table constantly.",
                "Feed him before you eat and reward him for lying on his mat during meals.",
            ),
            (
                "How long should our walks be?",
                "Beagles need about an hour a day; two 30-minute walks with sniffing time work well.",
            ),
            (
                "He pulls on the lead a lot.",
                "Stop walking whenever the lead goes tight and reward him when it is slack.",
            ),
            (
                "Are carrots okay as a snack?",
                "Yes, raw carrots are low in calories and good for his teeth.",
            ),
            (
                "What about grapes?",
                "Never grapes or raisins: they can cause kidney failure in dogs.",
            ),
            (
                "How often should I bathe him?",
                "Every four to six weeks unless he rolls in something; beagles have oily coats.",
            ),
            (
                "He scratches his ears a lot.",
                "Check for redness or smell; beagle ears trap moisture, so a vet visit is wise.",
            ),
        ],
    ),
    (
        "career",
        "Preparing for a job interview",
        7,
        [
            (
                "I work as a marine biologist at the aquarium, mostly with octopuses.",
                "That's a great background. Your octopus enrichment work will make a strong story.",
            ),
            (
                "My sister Marta's wedding is on June 14, so the interview has to be before that.",
                "Then let's aim to have everything ready in the first week of June.",
            ),
        ],
        [
            (
                "The role is a research coordinator at a university lab.",
                "Then stress project management, grant writing and mentoring students.",
            ),
            (
                "How do I answer 'what is your greatest weakness'?",
                "Pick a real one you are working on, and show the steps you took to improve.",
            ),
            (
                "Should I bring a portfolio?",
                "Yes, a short printed summary of two or three projects with figures.",
            ),
            (
                "How long should my answers be?",
                "Aim for one to two minutes; use the situation, task, action, result shape.",
            ),
            (
                "What questions should I ask them?",
                "Ask about the lab's funding horizon, team size, and how success is measured.",
            ),
            (
                "How do I talk about salary?",
                "Give a researched range and say you are flexible for the right role.",
            ),
            (
                "What should I wear?",
                "Smart casual is usual for academic interviews; a blazer is a safe choice.",
            ),
            (
                "How do I follow up afterwards?",
                "Send a short thank-you email within a day that recalls one point you discussed.",
            ),
        ],
    ),
    (
        "cooking",
        "Weeknight dinners",
        12,
        [
            (
                "I'm vegetarian since last year, but I still eat eggs and cheese.",
                "Great, vegetarian with eggs and dairy opens up lots of quick dinners.",
            ),
        ],
        [
            (
                "Give me a fast pasta idea.",
                "Spaghetti with lemon, ricotta, peas and black pepper takes fifteen minutes.",
            ),
            (
                "Something with chickpeas?",
                "Chickpea and spinach curry with coconut milk; serve with rice or flatbread.",
            ),
            (
                "I have leftover rice.",
                "Make egg fried rice with frozen vegetables, soy sauce and spring onions.",
            ),
            (
                "How do I make a good omelette?",
                "Low heat, butter, three eggs beaten well, and fold it while the top is still soft.",
            ),
            (
                "A dish I can batch cook?",
                "A big pot of lentil and vegetable soup freezes well for two weeks.",
            ),
            (
                "Dessert without an oven?",
                "Yoghurt with honey, toasted oats and berries, or a no-bake cheesecake jar.",
            ),
            (
                "Is tofu hard to cook?",
                "Press it, cube it, toss in cornflour and pan-fry until golden on every side.",
            ),
            (
                "What spices should I keep?",
                "Cumin, smoked paprika, chilli flakes, turmeric, garam masala and oregano.",
            ),
        ],
    ),
    (
        "fitness",
        "Training for a 10k",
        18,
        [
            (
                "I hurt my left knee skiing two years ago, so I have to be careful with hills.",
                "Thanks for telling me. We will keep the hill work gentle and build strength first.",
            ),
        ],
        [
            (
                "How many runs a week should I do?",
                "Three runs a week: one easy, one with intervals, one longer steady run.",
            ),
            ("What pace for the easy run?", "A pace where you can still talk in full sentences."),
            (
                "Should I stretch before running?",
                "Do dynamic warm-ups before, like leg swings; save static stretches for after.",
            ),
            ("Which shoes should I buy?", "Get fitted at a running shop; comfort beats any brand."),
            (
                "How do I avoid side stitches?",
                "Breathe deeply from the belly and don't eat a big meal two hours before.",
            ),
            (
                "What should I eat before a race?",
                "A familiar, light breakfast of carbs two or three hours before the start.",
            ),
            (
                "How do I taper?",
                "Cut your weekly distance by about 40 percent in the final week, keeping a little speed.",
            ),
            (
                "Strength exercises for runners?",
                "Squats, lunges, glute bridges, calf raises and planks twice a week.",
            ),
        ],
    ),
    (
        "recall-check",
        "Catching up",
        25,
        [],
        [
            ("What city did I say I live in now?", "You told me you moved to Lisbon in March."),
            ("Which seat do I like on trains and planes?", "You always book an aisle seat."),
            ("Can you remind me what my dog is called?", "Your beagle is called Biscuit."),
            ("Is there any food I must avoid?", "Yes, you're allergic to peanuts."),
            ("When is my sister getting married?", "Marta's wedding is on June 14."),
            (
                "What do I do for a living?",
                "You're a marine biologist at the aquarium, working with octopuses.",
            ),
        ],
    ),
]

FOLLOW_UPS = [
    ("Thanks, that helps.", "You're welcome! Anything else on this?"),
    ("Could you summarise that in one line?", "In short: keep it simple and consistent."),
    ("Let me think about it and come back.", "Of course, I'll be here when you're ready."),
    ("Good point.", "Glad it's useful."),
]


def build() -> list[dict]:
    rng = random.Random(7)
    start = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
    lines = []
    for thread_id, title, day, facts, exchanges in SESSIONS:
        moment = start + timedelta(days=day)
        pairs = list(exchanges)
        # Interleave the planted facts early, and follow-ups between exchanges.
        for i, fact in enumerate(facts):
            pairs.insert(1 + 2 * i, fact)
        turns = []
        for pair in pairs:
            turns.append(pair)
            for _ in range(rng.randint(1, 3)):
                turns.append(rng.choice(FOLLOW_UPS))
        if thread_id == "trip-lisbon":
            turns.insert(3, ("__tool__", "weather"))
        for user, assistant in turns:
            if user == "__tool__":
                call_id = f"call-{thread_id}-weather"
                moment += timedelta(seconds=20)
                lines.append(
                    _line(
                        thread_id,
                        title,
                        moment,
                        {
                            "type": "ai",
                            "data": {
                                "content": "",
                                "tool_calls": [
                                    {
                                        "name": "get_weather",
                                        "args": {"city": "Porto", "month": "May"},
                                        "id": call_id,
                                        "type": "tool_call",
                                    }
                                ],
                            },
                        },
                    )
                )
                moment += timedelta(seconds=2)
                lines.append(
                    _line(
                        thread_id,
                        title,
                        moment,
                        {
                            "type": "tool",
                            "data": {
                                "content": '{"avg_high_c": 21, "rain_days": 9}',
                                "tool_call_id": call_id,
                                "name": "get_weather",
                            },
                        },
                    )
                )
                continue
            moment += timedelta(seconds=rng.randint(20, 90))
            lines.append(_line(thread_id, title, moment, {"role": "user", "content": user}))
            moment += timedelta(seconds=rng.randint(3, 12))
            lines.append(
                _line(thread_id, title, moment, {"role": "assistant", "content": assistant})
            )
    return lines


def _line(thread_id: str, title: str, moment: datetime, message: dict) -> dict:
    return {
        "thread_id": thread_id,
        "resource_id": RESOURCE,
        "title": title,
        "created_at": moment.isoformat(),
        **message,
    }


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    rows = build()
    OUT.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    print(f"wrote {len(rows)} messages to {OUT}")
